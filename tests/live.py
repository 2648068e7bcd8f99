"""Run the real app under uvicorn on a free loopback port, in a thread.

`LiveServer` waits on uvicorn's `started` flag with a deadline (never a bare
sleep), and shuts the server down on exit. Tests talk to it over TCP with
httpx and the MCP SDK's own clients (which take an httpx2 client).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from app.http import build_app
from app.http.limits import uvicorn_limits
from app.registry import Registry
from app.server import LoomServer
from tests.kit import complete

START_DEADLINE = 15.0

# A raw 2025-11-25 `initialize`, for tests that speak JSON-RPC without the SDK client.
INIT_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_POST_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def tool_request(n: int, name: str, args: dict[str, Any],
                 meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A raw JSON-RPC `tools/call` with id `n` (and `_meta`, when given)."""
    params: dict[str, Any] = {"name": name, "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def rpc_messages(r: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a raw HTTP answer: its JSON body, or each SSE `data:` line."""
    if r.headers.get("content-type", "").startswith("application/json"):
        return [r.json()]
    return [json.loads(line[5:]) for line in r.text.splitlines()
            if line.startswith("data:") and line[5:].strip()]


def open_raw_session(http: httpx.Client) -> httpx.Response:
    """`initialize` then `notifications/initialized` over raw HTTP on `http`, whose headers
    then carry the session's id and protocol version; the `initialize` answer."""
    opened = http.post("/mcp", json=INIT_REQUEST, headers=MCP_POST_HEADERS)
    assert opened.status_code == 200, opened.text
    http.headers.update({"mcp-session-id": opened.headers["mcp-session-id"],
                         "mcp-protocol-version": INIT_REQUEST["params"]["protocolVersion"]})
    done = http.post("/mcp", json=INITIALIZED, headers=MCP_POST_HEADERS)
    assert done.status_code == 202, done.text
    return opened


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's first content block (a tool answers in text)."""
    first = result.content[0]
    assert isinstance(first, TextContent), first
    return first.text


async def call_tool(via: ClientSession | LiveServer, tool: str,
                    args: dict[str, Any] | None = None, /, **more: Any) -> CallToolResult:
    """One `tools/call` of `tool` with `args` and `more` through the SDK client: on an open
    session, or on a server (one session just for this call)."""
    args = {**(args or {}), **more}
    if isinstance(via, LiveServer):
        async with via.session() as s:
            return await s.call_tool(tool, args)
    return await via.call_tool(tool, args)


async def call(via: ClientSession | LiveServer, tool: str, **args: Any) -> tuple[bool, Any]:
    """(is_error, structured result or error text); a result has both (its text item is
    for a model). The structured result comes whole: its lean form's defaults restored
    (`tests.kit.complete`)."""
    res = await call_tool(via, tool, args)
    text = next(c.text for c in res.content if isinstance(c, TextContent))
    if res.is_error:
        return True, text
    assert text and res.structured_content is not None
    return False, complete(tool, res.structured_content)


def env_without_loomfs(**extra: str) -> dict[str, str]:
    """This process's environment without any LOOMFS_* setting (a token, a port, a config
    the developer exported), plus `extra`: what a spawned server sees."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOMFS_")}
    env.update(extra)
    return env


def free_port() -> int:
    """A loopback port free now (for a server that must come back on the same port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    def __init__(
        self, config: Path, *, token: str | None = None,
        uvicorn_options: dict[str, Any] | None = None, client_tokens: bool = False,
        **app_kwargs: Any,
    ) -> None:
        # client_tokens: the server of a config with [[clients]], each with its own token.
        self.registry = Registry(str(config), client_tokens=client_tokens)
        self.server = LoomServer(self.registry)
        self.token = token
        # IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (see app/startup.py).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.port = self._sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        # `ui`: the owner's page, or a callable making it from this server (tests/ui/uikit.py).
        if callable(app_kwargs.get("ui")):
            app_kwargs["ui"] = app_kwargs["ui"](self)
        self.ui = app_kwargs.get("ui")
        self.app = build_app(self.server, token=token, **app_kwargs)
        self._uvicorn = uvicorn.Server(
            uvicorn.Config(
                self.app,
                log_config=None,
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=2,
                proxy_headers=False,  # as app/startup.py: forwarded-for is never trusted
                forwarded_allow_ips="",
                # The shipped limits (app/startup.py), unless a test asks for others.
                **(uvicorn_limits() if uvicorn_options is None else uvicorn_options),
            )
        )
        self._thread = threading.Thread(
            target=self._uvicorn.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + START_DEADLINE
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("live server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @contextlib.asynccontextmanager
    async def session(
        self, message_handler: Any = None, token: str | None = None
    ) -> AsyncIterator[ClientSession]:
        """An initialised 2025-11-25 ClientSession over Streamable HTTP (with `token`, that
        bearer token instead of the server's)."""
        headers = {"Authorization": f"Bearer {token}"} if token else self.headers()
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(self.url, http_client=http) as (read, write),
            ClientSession(read, write, message_handler=message_handler) as s,
        ):
            await s.initialize()
            yield s


@contextlib.contextmanager
def live_server(config: Path, **kwargs: Any) -> Iterator[LiveServer]:
    srv = LiveServer(config, **kwargs).start()
    try:
        yield srv
    finally:
        srv.stop()


def session_policy(app: Any) -> Any:
    """The `app.http.sessions.SessionPolicy` inside an app built by `build_app` (found by
    walking the middleware chain: each holds the next as `.guarded` or `.app`)."""
    from app.http.sessions import SessionGate

    node = app
    while node is not None:
        if isinstance(node, SessionGate):
            return node.policy
        node = getattr(node, "guarded", None) or getattr(node, "app", None)
    raise LookupError("no SessionGate in this app")
