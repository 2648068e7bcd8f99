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


def test_an_authenticated_connection_leaves_the_pool_and_stays_open(small_pool: int) -> None:
    sid = open_session(small_pool, TOKEN)
    with contextlib.closing(socket.create_connection(("127.0.0.1", small_pool))) as kept:
        body = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
        kept.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nAccept: application/json, "
            b"text/event-stream\r\nmcp-session-id: " + sid.encode()
            + b"\r\nmcp-protocol-version: 2025-11-25\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body)
        kept.settimeout(10)
        assert kept.recv(4096).startswith(b"HTTP/1.1 200 ")
        with Flood(small_pool, 12, SHAPES["silent"]):  # three times the pool, never reopened
            assert probe(small_pool, TOKEN, sid, 3) == 200
            assert _first_answer(kept, 0.3) is None  # not closed for the newcomers


def test_the_uvicorn_names_the_protocol_relies_on_exist() -> None:
    """app/http/protocol.py reads or sets these names of uvicorn's protocol and its cycle."""
    import asyncio

    import uvicorn
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
    from uvicorn.server import ServerState

    from app.http.protocol import RELIED_ON

    config = uvicorn.Config(app=lambda scope, receive, send: None, http="httptools")
    config.load()
    loop = asyncio.new_event_loop()
    try:
        protocol = HttpToolsProtocol(config, ServerState(), {}, _loop=loop)
        cycle = RequestResponseCycle(
            scope={}, transport=None, flow=None, logger=None, access_logger=None,  # type: ignore[arg-type,typeddict-item]
            access_log=False, default_headers=[], message_event=asyncio.Event(),
            expect_100_continue=False, keep_alive=True, on_response=lambda: None)
        owners = {"cycle": cycle, "config": config}
        for name in RELIED_ON:
            owner, _, attribute = name.rpartition(".")
            assert hasattr(owners[owner] if owner else protocol, attribute), name
    finally:
        loop.close()
