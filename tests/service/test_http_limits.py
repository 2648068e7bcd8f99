"""Limits no HTTP client can push past: sessions, header size, slow senders,
connections, nested JSON (docs/service.md#limits-no-client-can-push-past).

The header flood runs against the console script (the shipped uvicorn
configuration, its memory read from /proc); the others against the app under
uvicorn in this process, with small limits so that a test takes seconds.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from app import sdk
from app.http.limits import (
    HEAD_TIMEOUT,
    MAX_HEAD_BYTES,
    LimitedHttpToolsProtocol,
    uvicorn_limits,
)
from benchmarks._floods import open_session, probe
from tests.live import INIT_REQUEST, MCP_POST_HEADERS, LiveServer, live_server
from tests.service.test_cli_http import free_port, spawn_http, wait_healthy

TOKEN = "limits-token"


def _initialize(client: httpx.Client, url: str) -> str:
    r = client.post(url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


# --- sessions


def test_a_session_flood_never_locks_a_new_client_out(
    one_root_config: Callable[..., Path],
) -> None:
    with live_server(one_root_config(), max_sessions=5) as srv, httpx.Client(timeout=10) as c:
        flood = [_initialize(c, srv.url) for _ in range(20)]  # never closed
        assert len(sdk.session_table(srv.server.session_manager)) <= 5
        fresh = _initialize(c, srv.url)  # the SDK's default would answer 503 here
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        ok = c.post(srv.url, json=ping, headers={**MCP_POST_HEADERS, "mcp-session-id": fresh,
                                                "mcp-protocol-version": "2025-11-25"})
        assert ok.status_code == 200, ok.text
        # The longest idle were the ones closed: their ids now answer 404 (re-initialise).
        old = c.post(srv.url, json=ping, headers={**MCP_POST_HEADERS, "mcp-session-id": flood[0],
                                                 "mcp-protocol-version": "2025-11-25"})
        assert old.status_code == 404


async def test_the_sdk_client_connects_after_a_flood(one_root_config: Callable[..., Path]) -> None:
    with live_server(one_root_config(), max_sessions=3) as srv:
        with httpx.Client(timeout=10) as c:
            for _ in range(10):
                _initialize(c, srv.url)
        async with srv.session() as s:
            res = await s.call_tool("list_roots", {})
            assert not res.is_error


# --- headers


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    raise AssertionError("no VmRSS")


def _flood_headers(port: int, total: int) -> bytes:
    """Send a head of `total` bytes (as far as the server lets us); return its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        line = b"X-Pad: " + b"a" * 8000 + b"\r\n"
        sent = 0
        with contextlib.suppress(OSError):  # the server closes on us: that is the point
            while sent < total:
                s.sendall(line)
                sent += len(line)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                answer += chunk
        return answer


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_header_flood_is_refused_431_and_memory_stays_flat(
    one_root_config: Callable[..., Path],
) -> None:
    port = free_port()
    proc = spawn_http(one_root_config(), "--port", str(port))
    try:
        wait_healthy(port, proc)
        before = _rss_kib(proc.pid)
        # 50 MB offered each time. The server answers 431 and closes; a client still
        # sending may see the reset before the answer, so not every try reads it.
        answers = [_flood_headers(port, 50 << 20) for _ in range(5)]
        assert any(a.startswith(b"HTTP/1.1 431 ") for a in answers), answers
        assert all(a == b"" or a.startswith(b"HTTP/1.1 431 ") for a in answers), answers
        assert _rss_kib(proc.pid) - before < 16 * 1024  # KiB: flat, not 250 MB
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_headers_under_the_cap_are_served(live: LiveServer) -> None:
    pad = "a" * (MAX_HEAD_BYTES // 2)
    r = httpx.get(f"{live.base}/healthz", headers={"X-Pad": pad}, timeout=5)
    assert r.status_code == 200


# --- slow senders and the connection cap


class _Quick(LimitedHttpToolsProtocol):
    head_timeout = 0.5
    unauthenticated_head_timeout = 0.5
    body_timeout = 0.5
    max_connections = 2


@pytest.fixture
def quick(one_root_config: Callable[..., Path]) -> Iterator[LiveServer]:
    with live_server(one_root_config(), token=TOKEN,
                     uvicorn_options=uvicorn_limits(_Quick)) as srv:
        yield srv


def _dropped_within(s: socket.socket, drip: bytes, seconds: float) -> tuple[float, bytes]:
    """Send `drip` a byte every 50 ms until the server closes; (elapsed, what it said)."""
    t0 = time.monotonic()
    answer = b""
    s.settimeout(0.05)
    for i in range(int(seconds / 0.05)):
        if drip:
            with contextlib.suppress(OSError):
                s.send(drip[i % len(drip) : i % len(drip) + 1])
        try:
            chunk = s.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        answer += chunk
    return time.monotonic() - t0, answer


@pytest.mark.parametrize(
    ("opening", "drip"),
    [
        # headers trickled, never finished
        (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: 1\r\n"),
        # a head in full, then a body trickled
        (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         b"Authorization: Bearer limits-token\r\nContent-Length: 100000\r\n\r\n", b"{"),
        # a connection that says nothing
        (b"", b""),
    ],
    ids=["slow-headers", "slow-body", "silent"],
)
def test_slow_senders_are_dropped(quick: LiveServer, opening: bytes, drip: bytes) -> None:
    with socket.create_connection(("127.0.0.1", quick.port), timeout=5) as s:
        s.sendall(opening)
        elapsed, answer = _dropped_within(s, drip or b"", 5.0)
    assert elapsed < 3.0, "the slow sender kept its connection"
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_the_authenticated_cap_holds_and_frees_as_its_connections_close(
    quick: LiveServer,
) -> None:
    sid = open_session(quick.port, TOKEN)
    body = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    ping = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nAccept: application/json, "
            b"text/event-stream\r\nmcp-session-id: " + sid.encode()
            + b"\r\nmcp-protocol-version: 2025-11-25\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body)
    held = [socket.create_connection(("127.0.0.1", quick.port), timeout=10) for _ in range(2)]
    try:
        for s in held:  # two authenticated keep-alive connections: the cap (2)
            s.sendall(ping)
            assert s.recv(4096).startswith(b"HTTP/1.1 200 ")
        assert probe(quick.port, TOKEN, sid) == 503
        assert probe(quick.port, "wrong", sid) == 401  # the token check comes first
    finally:
        for s in held:
            s.close()
    # Their places free when they close (a loaded machine may notice late: wait a little).
    deadline = time.monotonic() + 5
    while probe(quick.port, TOKEN, sid) != 200:
        assert time.monotonic() < deadline, "the closed connections kept their places"
        time.sleep(0.1)


def test_shipped_timeouts_are_seconds_not_minutes() -> None:
    assert 1 <= HEAD_TIMEOUT <= 30
    assert uvicorn_limits()["http"] is LimitedHttpToolsProtocol


# --- nested JSON


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("method", ["tools/call", "tools/list", "ping"])
def test_deeply_nested_json_is_a_400_never_a_500(live: LiveServer, method: str) -> None:
    with httpx.Client(timeout=30) as c:
        sid = _initialize(c, live.url)
        params = (b'{"name":"read_text_file","arguments":{"path":' + _nested(100_000) + b"}}"
                  if method == "tools/call" else b'{"x":' + _nested(100_000) + b"}")
        body = (b'{"jsonrpc":"2.0","id":7,"method":' + json.dumps(method).encode()
                + b',"params":' + params + b"}")
        r = c.post(live.url, content=body, headers={
            **MCP_POST_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        assert r.status_code == 400, (r.status_code, r.text[:300])
        assert httpx.get(f"{live.base}/healthz", timeout=5).status_code == 200


# --- the disconnect watcher finds a large call's id without parsing it

BIG = "y" * (1 << 17)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
          "params": {"name": "write_file", "arguments": {"content": BIG + '"id": 9'}}}, 7),
        ({"jsonrpc": "2.0", "method": "tools/call",
          "params": {"arguments": {"content": BIG}}, "id": "abc"}, "abc"),
        # an "id" key in the arguments too: ambiguous, so parsed after all
        ({"jsonrpc": "2.0", "method": "tools/call",
          "params": {"arguments": {"id": 3, "content": BIG}}, "id": 5}, 5),
        ({"jsonrpc": "2.0", "method": "tools/list", "params": {"x": "tools/call" + BIG},
          "id": 5}, None),
    ],
)
def test_a_large_call_id_is_found(message: dict[str, object], expected: object) -> None:
    from app.http.disconnect import _tool_call_id

    assert _tool_call_id(json.dumps(message).encode()) == expected
