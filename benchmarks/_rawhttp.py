"""A minimal MCP client over plain HTTP/1.1: the server's own cost per call, without an SDK."""

from __future__ import annotations

import contextlib
import http.client
import json
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from benchmarks._client import CallFailed


class RawHttpSession:
    """A minimal MCP client over one keep-alive HTTP/1.1 connection (stdlib `http.client`).

    No SDK, no schema checks, no SSE parser beyond what the handshake needs: the
    floor a client adds, so the server's own cost per call over HTTP shows.
    Blocking, one call at a time (it is only used for sequential timing).
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        host = parts.hostname or "127.0.0.1"
        self.conn = http.client.HTTPConnection(host, parts.port, timeout=60)
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        self.next_id = 0
        self.bench_pid: int | None = None  # the server whose CPU time a timed round charges

    def _post(self, payload: dict[str, Any]) -> tuple[int, http.client.HTTPMessage, bytes]:
        body = json.dumps(payload).encode()
        for attempt in (1, 2):
            try:
                self.conn.request("POST", self.path, body, self.headers)
                response = self.conn.getresponse()
                return response.status, response.headers, response.read()
            except (ConnectionError, http.client.RemoteDisconnected):
                # The server closed an idle keep-alive connection (uvicorn: after 5 s).
                self.conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _answer(self, headers: http.client.HTTPMessage, body: bytes) -> dict[str, Any]:
        if headers.get("content-type", "").startswith("text/event-stream"):
            datas = [line[5:] for line in body.decode().splitlines() if line.startswith("data:")]
            return json.loads([d for d in datas if d.strip()][-1])
        return json.loads(body)

    def open(self) -> RawHttpSession:
        status, headers, body = self._post({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw-bench", "version": "0"}}})
        if status != 200:
            raise CallFailed(f"initialize: HTTP {status}")
        self.headers["mcp-session-id"] = headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = self._answer(headers, body)["result"][
            "protocolVersion"]
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        self.next_id += 1
        status, headers, body = self._post({"jsonrpc": "2.0", "id": self.next_id,
                                            "method": "tools/call",
                                            "params": {"name": name, "arguments": args}})
        if status != 200:
            raise CallFailed(f"{name}: HTTP {status}")
        result = self._answer(headers, body)["result"]
        return SimpleNamespace(
            is_error=result.get("isError", False),
            content=[SimpleNamespace(text=c.get("text", "")) for c in result["content"]],
            structured_content=result.get("structuredContent"),
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.request("DELETE", self.path, headers=self.headers)
            self.conn.getresponse().read()
        self.conn.close()
