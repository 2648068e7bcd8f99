"""Connections without the token never keep an authenticated client out
(docs/service.md#limits-no-client-can-push-past).

Once the connection cap (256) was shared by everyone: 300 silent connections,
each reopened as soon as the server closed it, had an authenticated client's
calls answered 503 on 76 of 86 tries; 400 slowloris connections, 19 of 85.
Here the app runs under uvicorn in this process with the shipped limits, a
flood of connections without the token, more than either cap, is held open, and an authenticated
client makes every call on a connection of its own (so that it too arrives
without credentials, into the pool the flood fills): every call succeeds.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.http.limits import (
    MAX_CONNECTIONS,
    MAX_UNAUTHENTICATED,
    LimitedHttpToolsProtocol,
    uvicorn_limits,
)
from benchmarks._floods import SHAPES, Flood, open_session, probe
from tests.live import live_server

TOKEN = "flood-token"
FLOOD = max(MAX_CONNECTIONS, MAX_UNAUTHENTICATED) + 44  # more than either cap
CALLS = 20


@pytest.mark.parametrize("shape", list(SHAPES))
def test_connections_without_the_token_never_keep_an_authenticated_client_out(
    one_root_config: Callable[..., Path], shape: str
) -> None:
    assert FLOOD > MAX_UNAUTHENTICATED  # every place without the token is taken
    with live_server(one_root_config(), token=TOKEN) as srv:
        sid = open_session(srv.port, TOKEN)
        with Flood(srv.port, FLOOD, SHAPES[shape]) as flood:
            statuses = [probe(srv.port, TOKEN, sid, n) for n in range(2, 2 + CALLS)]
            assert flood.opened >= FLOOD
        assert statuses == [200] * CALLS


class _Small(LimitedHttpToolsProtocol):
    max_unauthenticated = 4


@pytest.fixture
def small_pool(one_root_config: Callable[..., Path]) -> Iterator[int]:
    with live_server(one_root_config(), token=TOKEN,
                     uvicorn_options=uvicorn_limits(_Small)) as srv:
        yield srv.port


def _first_answer(s: socket.socket, timeout: float) -> bytes | None:
    """What the server says before it closes `s` (None: still open after `timeout`)."""
    s.settimeout(timeout)
    answer = b""
    try:
        while chunk := s.recv(4096):
            answer += chunk
    except TimeoutError:
        return None
    except OSError:
        pass
    return answer


def test_past_the_cap_the_oldest_connections_without_the_token_are_closed(small_pool: int) -> None:
    held = [socket.create_connection(("127.0.0.1", small_pool)) for _ in range(7)]
    try:
        for s in held[:3]:  # the oldest: told why, then closed
            answer = _first_answer(s, 10)
            assert answer is not None and answer.startswith(b"HTTP/1.1 503 "), answer
            assert b"without an authenticated request" in answer
        assert [_first_answer(s, 0.3) for s in held[3:]] == [None] * 4
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize("token", [TOKEN, None], ids=["token", "no-auth"])
def test_an_authenticated_connection_leaves_the_pool_and_stays_open(
    one_root_config: Callable[..., Path], token: str | None
) -> None:
    """With --no-auth there is no token to check: a request to /mcp is what authenticates."""
    with live_server(one_root_config(), token=token,
                     uvicorn_options=uvicorn_limits(_Small)) as srv:
        port, bearer = srv.port, token or ""
        sid = open_session(port, bearer)
        with contextlib.closing(socket.create_connection(("127.0.0.1", port))) as kept:
            body = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
            kept.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                + bearer.encode() + b"\r\nContent-Type: application/json\r\nAccept: "
                b"application/json, text/event-stream\r\nmcp-session-id: " + sid.encode()
                + b"\r\nmcp-protocol-version: 2025-11-25\r\nContent-Length: %d\r\n\r\n"
                % len(body) + body)
            kept.settimeout(10)
            assert kept.recv(4096).startswith(b"HTTP/1.1 200 ")
            with Flood(port, 12, SHAPES["silent"]):  # three times the pool, never reopened
                assert probe(port, bearer, sid, 3) == 200
                assert _first_answer(kept, 0.3) is None  # not closed for the newcomers


class _Loop:
    def __init__(self) -> None:
        self.later: list[tuple[Callable[..., None], tuple[object, ...]]] = []

    def call_later(self, delay: float, callback: Callable[..., None], *args: object) -> None:
        assert delay == 0  # after the next poll of the sockets, not before
        self.later.append((callback, args))

    def turn(self) -> None:
        due, self.later = self.later, []
        for callback, args in due:
            callback(*args)


class _Connection:
    max_unauthenticated = 1

    def __init__(self, name: str, loop: _Loop, shed: list[str], answering: bool = False):
        self.name, self.loop, self._shed, self._answering = name, loop, shed, answering

    def answering(self) -> bool:
        return self._answering

    def shed(self) -> None:
        self._shed.append(self.name)


def test_the_sweep_closes_the_oldest_read_once_and_not_being_answered() -> None:
    from app.http.protocol import _Doors

    doors, loop, shed = _Doors(), _Loop(), list[str]()
    c1, c2, c3, c4 = (_Connection(n, loop, shed, answering=n == "c2")
                      for n in ("c1", "c2", "c3", "c4"))
    for c in (c1, c2):
        doors.arrive(c)  # type: ignore[arg-type]
    assert shed == [] and len(loop.later) == 1  # over the cap: a sweep after the next poll
    for c in (c3, c4):
        doors.arrive(c)  # type: ignore[arg-type]  # came after the sweep was set: not read yet
    assert len(loop.later) == 1
    loop.turn()
    assert shed == ["c1"]  # c2 is being answered; c3 and c4 wait for the next sweep
    loop.turn()
    assert shed == ["c1", "c3", "c4"]
    assert list(doors.waiting) == [c2] and loop.later == []
