"""Who gets a session when the table is full, and what may open one (app/http/sessions.py).

The app under uvicorn in this process with a small cap; the shipped cap is
checked on the console script by tests/service/test_shipped_limits.py. Once 300
initialize-only sessions evicted a client in the middle of its work (it got
404 "Session not found"), and an invalid POST (`{}`) was answered 400 with a
session id of its own after evicting someone else's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from app.http.sessions import OPENING_GRACE, PROTECTED_FOR, SessionPolicy, _Use
from tests.live import INIT_REQUEST, MCP_POST_HEADERS, LiveServer, live_server, session_policy

PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def _open(c: httpx.Client, srv: LiveServer) -> str:
    r = c.post(srv.url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)
    assert r.status_code == 200, r.text
    return r.headers["mcp-session-id"]


def _ping(c: httpx.Client, srv: LiveServer, sid: str) -> int:
    r = c.post(srv.url, json=PING, headers={**MCP_POST_HEADERS, "mcp-session-id": sid,
                                            "mcp-protocol-version": "2025-11-25"})
    return r.status_code


def _settled(srv: LiveServer, sid: str) -> None:
    """Wait until the server is done with the requests of `sid` (the client has its answer
    a moment before the server's record of the request is closed)."""
    policy = session_policy(srv.app)
    deadline = time.monotonic() + 10
    while sid not in policy.uses or policy.uses[sid].busy:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def _used(c: httpx.Client, srv: LiveServer, sid: str) -> None:
    """A call in session `sid`, and the server done with it (its record updated)."""
    assert _ping(c, srv, sid) == 200
    _settled(srv, sid)


def _live_ids(srv: LiveServer) -> set[str]:
    return set(srv.server.session_manager._server_instances)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- what may open a session

JSON_RPC = {"Content-Type": "application/json"}
BOTH = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        # not an initialize request
        (b"{}", MCP_POST_HEADERS, 400),
        (b"[]", MCP_POST_HEADERS, 400),
        (b"not json", MCP_POST_HEADERS, 400),
        (b"", MCP_POST_HEADERS, 400),
        (b"[" * 100_000 + b"]" * 100_000, MCP_POST_HEADERS, 400),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
         MCP_POST_HEADERS, 400),
        (json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
         MCP_POST_HEADERS, 400),
        (json.dumps({k: v for k, v in INIT_REQUEST.items() if k != "id"}).encode(),
         MCP_POST_HEADERS, 400),  # an initialize notification
        (json.dumps({**INIT_REQUEST, "jsonrpc": "1.0"}).encode(), MCP_POST_HEADERS, 400),
        (json.dumps([INIT_REQUEST]).encode(), MCP_POST_HEADERS, 400),  # a batch
        # an initialize the SDK would refuse for its headers
        (json.dumps(INIT_REQUEST).encode(), {**JSON_RPC, "Accept": "application/json"}, 406),
        (json.dumps(INIT_REQUEST).encode(), {**JSON_RPC, "Accept": "text/html"}, 406),
        (json.dumps(INIT_REQUEST).encode(), {**BOTH, "Content-Type": "text/plain"}, 415),
        (json.dumps(INIT_REQUEST).encode(), BOTH, 415),
    ],
)
def test_an_invalid_opening_request_never_creates_or_evicts_a_session(
    one_root_config: Callable[..., Path], body: bytes, headers: dict[str, str], status: int
) -> None:
    with live_server(one_root_config(), max_sessions=3) as srv, httpx.Client(timeout=30) as c:
        full = {_open(c, srv) for _ in range(3)}  # the table is full of never-used sessions
        r = c.post(srv.url, content=body, headers=headers)
        assert r.status_code == status, r.text
        assert "mcp-session-id" not in r.headers
        assert r.json()["error"]["code"] == -32600
        assert _live_ids(srv) == full


# --- who is evicted when the table is full


def test_a_flood_of_new_sessions_never_evicts_a_session_in_use(
    one_root_config: Callable[..., Path],
) -> None:
    with live_server(one_root_config(), max_sessions=4) as srv, httpx.Client(timeout=30) as c:
        working = _open(c, srv)
        assert _ping(c, srv, working) == 200
        flood = [_open(c, srv) for _ in range(40)]  # initialize-only
        assert _ping(c, srv, working) == 200  # was 404 "Session not found"
        assert len(_live_ids(srv)) <= 4
        assert flood[-1] in _live_ids(srv) and flood[0] not in _live_ids(srv)


def test_when_every_session_was_used_within_a_minute_the_newcomer_gets_503_and_retry_after(
    one_root_config: Callable[..., Path],
) -> None:
    with live_server(one_root_config(), max_sessions=3) as srv, httpx.Client(timeout=30) as c:
        clock = _Clock()
        session_policy(srv.app).clock = clock
        used = []
        for _ in range(3):
            used.append(_open(c, srv))
            _used(c, srv, used[-1])
            clock.now += 10  # calls ended at 1000, 1010, 1020
        r = c.post(srv.url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)  # at 1030
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == str(int(1000 + PROTECTED_FOR - 1030))
        assert "mcp-session-id" not in r.headers
        assert all(_ping(c, srv, sid) == 200 for sid in used)


@pytest.mark.parametrize("touch_every", [20.0, 5.0, 59.0])
def test_the_retry_after_given_is_honoured_while_every_session_keeps_being_used(
    one_root_config: Callable[..., Path], touch_every: float
) -> None:
    """Every session touched every `touch_every` s: the newcomer's retry, that many seconds
    later, succeeds. It was a countdown that restarted (60, 57, ... 39, then 57 again) and
    25 of 25 tries over 75 s were refused."""
    with live_server(one_root_config(), max_sessions=3) as srv, httpx.Client(timeout=30) as c:
        clock = _Clock()
        session_policy(srv.app).clock = clock
        used = []
        for _ in range(3):
            used.append(_open(c, srv))
            _used(c, srv, used[-1])
            clock.now += 1
        touched = {sid: clock.now - 3 + n for n, sid in enumerate(used)}
        r = c.post(srv.url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)
        assert r.status_code == 503, r.text
        retry_at = clock.now + int(r.headers["retry-after"])
        promised = [retry_at]
        while clock.now < retry_at:  # every session keeps being used until the retry
            clock.now = min(retry_at, clock.now + 1)
            for sid in used:
                if clock.now - touched[sid] >= touch_every:
                    _used(c, srv, sid)
                    touched[sid] = clock.now
            if clock.now < retry_at:  # a newcomer meanwhile is told the same moment
                again = c.post(srv.url, json=INIT_REQUEST, headers=MCP_POST_HEADERS)
                assert again.status_code == 503, again.text
                promised.append(clock.now + int(again.headers["retry-after"]))
        assert set(promised) == {retry_at}, "Retry-After counted down to a moment that moved"
        assert _open(c, srv) not in used  # the retry, on time, gets a session


def test_the_order_of_eviction_never_used_first_then_longest_idle_over_a_minute(
    one_root_config: Callable[..., Path],
) -> None:
    with live_server(one_root_config(), max_sessions=3) as srv, httpx.Client(timeout=30) as c:
        clock = _Clock()
        session_policy(srv.app).clock = clock
        s1, s2, s3 = (_open(c, srv) for _ in range(3))
        for sid in (s1, s2, s3):  # calls ending at 1000, 1010, 1020
            _used(c, srv, sid)
            clock.now += 10
        clock.now = 1000 + PROTECTED_FOR + 15  # s1 idle 75 s, s2 65 s, s3 55 s
        newcomer = _open(c, srv)
        assert _live_ids(srv) == {s2, s3, newcomer}  # the longest idle went
        _settled(srv, newcomer)
        clock.now += 1
        later = _open(c, srv)
        # The newcomer never made a call: it goes before s2, idle for 66 s.
        assert _live_ids(srv) == {s2, s3, later}
        assert _ping(c, srv, s1) == 404  # an evicted session's client re-initialises


def test_a_session_whose_call_is_in_flight_or_still_opening_is_never_chosen() -> None:
    clock = _Clock()
    manager = SimpleNamespace(_server_instances={}, _admit_session=lambda requestor: None,
                              max_sessions=4, _session_owners={})
    policy = SessionPolicy(manager, clock)
    states: dict[str, _Use | None] = {
        "opening": None,  # admitted, its initialize not answered yet
        "busy-never-called": _Use(opened=0, busy=1),
        "busy-idle-long": _Use(opened=0, last_call=0, busy=1),
        "recent": _Use(opened=0, last_call=clock.now - PROTECTED_FOR + 1),
    }
    for sid, use in states.items():
        manager._server_instances[sid] = object()
        if use is not None:
            policy.uses[sid] = use
    assert policy.victim() is None
    policy.uses["busy-idle-long"].busy = 0
    assert policy.victim() == "busy-idle-long"


def test_a_session_admitted_without_a_recorded_answer_is_evicted_after_the_grace() -> None:
    """Admitted by the SDK, its opening answer never seen as a 200 (the client left first): it
    counts as still opening for OPENING_GRACE, then as never used, not held until the SDK's
    idle timeout."""
    clock = _Clock()
    manager = SimpleNamespace(_server_instances={"lost": object(), "recent": object()},
                              _admit_session=lambda requestor: None, max_sessions=2,
                              _session_owners={})
    policy = SessionPolicy(manager, clock)
    policy.uses["recent"] = _Use(opened=0, last_call=clock.now)
    assert policy.victim() is None
    clock.now += OPENING_GRACE + 1
    policy.uses["recent"].last_call = clock.now
    assert policy.victim() == "lost"


def test_the_sdk_names_the_session_policy_relies_on_exist() -> None:
    """app/http/sessions.py touches these private names of the SDK (pinned mcp<3)."""
    manager: Any = StreamableHTTPSessionManager(app=SimpleNamespace(), max_sessions=2)  # type: ignore[arg-type]
    for name in ("_admit_session", "_server_instances", "_session_owners", "max_sessions"):
        assert hasattr(manager, name), name
    transport = StreamableHTTPServerTransport(mcp_session_id="x", idle_timeout=5)
    assert hasattr(transport, "idle_scope")
