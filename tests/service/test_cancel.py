"""A call whose client gives up stops soon, instead of running to the end."""

from __future__ import annotations

import json
import time

import anyio
import httpx
import pytest

import app.tools.base as base
from tests.live import INIT_REQUEST, MCP_POST_HEADERS, live_server

FILES = 1500


@pytest.fixture
def many_files(tree):
    bulk = tree / "bulk"
    bulk.mkdir()
    for i in range(FILES):
        (bulk / f"f{i:05d}.txt").write_text("nothing to see here\n" * 20)
    return tree


@pytest.fixture
def checks(monkeypatch) -> list[float]:
    """When each cancel check ran: one per file, slowed so a search takes ~3 s."""
    seen: list[float] = []
    original = base.Call.check

    def slow_check(self) -> None:
        seen.append(time.monotonic())
        time.sleep(0.002)
        original(self)

    monkeypatch.setattr(base.Call, "check", slow_check)
    return seen


async def test_cancelled_search_stops_its_worker(one_root_config, many_files, checks) -> None:
    with live_server(one_root_config("reference")) as srv:
        async with srv.session() as s:
            with pytest.raises(Exception):  # noqa: B017 - the SDK's timeout error type
                await s.call_tool(
                    "search_text", {"query": "needle-not-there"}, read_timeout_seconds=0.4
                )
            gave_up = time.monotonic()
            await anyio.sleep(1.0)
            # The session survives and answers the next call.
            ok = await s.call_tool("list_roots", {})
            assert not ok.is_error
    assert checks, "the search never started"
    assert len(checks) < FILES, "the search ran to the end"
    assert max(checks) < gave_up + 0.5, "the worker went on long after the cancel"


def _sse_or_json(r: httpx.Response) -> dict:
    if r.headers.get("content-type", "").startswith("application/json"):
        return r.json()
    data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


async def test_http_client_disconnect_stops_the_worker(one_root_config, many_files, checks) -> None:
    with live_server(one_root_config("reference")) as srv:
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.post(srv.url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)
            sid = r.headers["mcp-session-id"]
            headers = {
                **MCP_POST_HEADERS,
                "mcp-session-id": sid,
                "mcp-protocol-version": "2025-11-25",
            }
            await http.post(
                srv.url,
                headers=headers,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "search_text", "arguments": {"query": "absent"}},
            }
            # A client that gives up: its own connection, closed after 0.4 s.
            async with httpx.AsyncClient(timeout=0.4) as impatient:
                with pytest.raises(httpx.TimeoutException):
                    await impatient.post(srv.url, headers=headers, json=call)
            gave_up = time.monotonic()
            await anyio.sleep(1.0)
            ping = await http.post(
                srv.url, headers=headers, json={"jsonrpc": "2.0", "id": 8, "method": "ping"}
            )
            assert _sse_or_json(ping)["id"] == 8
    assert checks, "the search never started"
    assert len(checks) < FILES, "the search ran to the end"
    assert max(checks) < gave_up + 0.5, "the worker went on after the client left"
