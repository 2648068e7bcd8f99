"""uvicorn's httptools protocol with every byte of framing counted and answers read before more.

Threat: any local process (or, with `--allow-remote`, anyone who can connect),
before any token is checked. httptools has no cap of its own: 400 MB of
headers were once accepted on one connection, and after the head the trailer
lines that follow a chunked body were kept whole by uvicorn (160 MiB of them
raised the server's peak by 164 MiB). A client that pipelines requests without
reading the answers had them all parsed and queued (96,000 calls on 32
connections: +97 MiB, growing with what the client sent).

`LimitedHttpToolsProtocol` hands the parser the bytes it receives in pieces
(`FEED` bytes, or the rest of a body whose length is declared) and counts, per
request, the bytes fed minus the body bytes the parser reports: what is left is
framing (request line, headers, the empty lines before a request, chunk-size
lines, chunk extensions, trailers). So the cap lives where the bytes arrive and
holds whatever the parser would have kept:
- the head (everything before the body) at most `MAX_HEAD_BYTES`: 431 and close;
- all framing of one request at most `MAX_FRAMING_BYTES`: 400 and close (or
  just close once an answer has started). Trailers are dropped, never stored.
The counters see the stream `FEED` bytes at a time (where one request ends
inside a piece, the next one's first bytes there go uncounted), so a cap may be
passed by at most that much.

Back-pressure: once a request has arrived whole, no byte after it is parsed
until its answer is complete and the client has read enough of the answers
that the socket's send buffer is below uvicorn's high-water mark; meanwhile the
connection is not read (the unparsed rest of one read is all that is held). An
answer the client leaves unread for `ANSWER_TIMEOUT` closes the connection.
So a connection holds at most one answer, one read of unparsed bytes and the
requests that fit in one piece.

Deadlines: the head must arrive within `HEAD_TIMEOUT` of the connection or of
the first byte of a keep-alive request (408 and close), a body within
`BODY_TIMEOUT` of its head (408, or close once an answer started).

Connections, authenticated work first: a connection is *authenticated* once a
request on it passed the token check (`app.http.guards.BearerAuth` calls the
`DOOR` extension this protocol puts in every request's scope); until then it
is in a pool of its own, which never takes a place an authenticated client
needs. (The cap was once shared by everyone: 300 silent connections reopened
as soon as they were closed had 76 of 86 authenticated calls answered 503.)
- authenticated connections at most `MAX_CONNECTIONS`, and as many /mcp
  requests past the token check in flight: 503 above either;
- the others at most `MAX_UNAUTHENTICATED`: past it the oldest are closed
  (503, "the oldest are closed first"), never one with an answer under way nor
  one the loop has not yet read once. The sweep runs after the next poll of
  the sockets (a zero-delay timer: asyncio runs it after that poll's reads),
  and takes only connections that arrived before it was set, so a client that
  sent its request with its connection has its head read, and is no longer a
  candidate, before any sweep can choose it. A connection that sent part of a
  head is the youngest in arrival order and so the last to go;
- a shorter head deadline (`UNAUTHENTICATED_HEAD_TIMEOUT`) and keep-alive
  (`UNAUTHENTICATED_KEEP_ALIVE`) while not authenticated.
Between two sweeps the pool may hold what arrived in one turn of the loop.

Relied on in uvicorn (`RELIED_ON`, checked on the installed version by
tests/service/test_uvicorn_relied_on.py): the attributes below are read or set on
`HttpToolsProtocol`, its cycle and its flow control; pyproject.toml pins uvicorn below
its next minor.

What this does not do: tell clients apart (on loopback every peer is
127.0.0.1): one holder of the token may use every authenticated place.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.http.guards import DOOR

MAX_HEAD_BYTES = 64 << 10  # request line and headers (and any empty lines before them)
MAX_FRAMING_BYTES = 128 << 10  # all framing of one request: head, chunk lines, trailers
FEED = 512  # bytes handed to the parser at a time, outside a body of declared length
HEAD_TIMEOUT = 10.0  # seconds to send a request's head
BODY_TIMEOUT = 60.0  # seconds to send its body, once the head is in
ANSWER_TIMEOUT = 60.0  # seconds an answer may sit unread before the connection closes
MAX_CONNECTIONS = 256  # authenticated connections; /mcp requests past the token in flight
MAX_UNAUTHENTICATED = 512  # connections without an authenticated request: the oldest closed
UNAUTHENTICATED_HEAD_TIMEOUT = 5.0  # seconds to send a head, before an authenticated request
UNAUTHENTICATED_KEEP_ALIVE = 2.0  # seconds idle between requests, before one

# What this module reads or sets on uvicorn's protocol (`HttpToolsProtocol`), its
# `RequestResponseCycle` and its `FlowControl`, beyond the asyncio.Protocol methods it
# overrides and the constructor's arguments.
RELIED_ON: tuple[str, ...] = (
    "loop", "transport", "flow", "cycle", "scope", "config", "server_state",
    "timeout_keep_alive", "on_response_complete", "on_message_begin", "on_header",
    "on_headers_complete", "on_body", "on_message_complete",
    "cycle.response_started", "cycle.response_complete", "cycle.more_body",
    "cycle.disconnected", "cycle.message_event", "config.timeout_keep_alive",
    "flow.write_paused", "flow.pause_reading", "flow.resume_reading",
)


def _response(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class _HeldFlow(FlowControl):
    """uvicorn's flow control, except that reading stays paused while `held`: uvicorn
    resumes reading whenever the app asks for the body, which would undo the hold."""

    held = False

    def resume_reading(self) -> None:
        if not self.held:
            super().resume_reading()


SHED = _response(503, "Service Unavailable", "Service Unavailable: too many connections "
                 "without an authenticated request; the oldest are closed first")


class _Doors:
    """The connections of one uvicorn server, by whether a request on them passed the
    token check."""

    def __init__(self) -> None:
        self.waiting: dict[LimitedHttpToolsProtocol, int] = {}  # -> arrival number, in order
        self.authenticated: set[LimitedHttpToolsProtocol] = set()
        self.in_flight = 0  # /mcp requests past the token check, not finished
        self.arrivals = 0
        self.sweeping = False

    def arrive(self, conn: LimitedHttpToolsProtocol) -> None:
        self.arrivals += 1
        self.waiting[conn] = self.arrivals
        if len(self.waiting) > conn.max_unauthenticated and not self.sweeping:
            self._sweep_after_the_next_poll(conn)

    def _sweep_after_the_next_poll(self, conn: LimitedHttpToolsProtocol) -> None:
        self.sweeping = True
        conn.loop.call_later(0, self._sweep, self.arrivals, conn.max_unauthenticated, conn.loop)

    def _sweep(self, polled: int, cap: int, loop: asyncio.AbstractEventLoop) -> None:
        """Close the oldest connections that arrived by `polled` and are not answering, until
        at most `cap` are left; again after the next poll if newer ones keep it over."""
        self.sweeping = False
        excess = len(self.waiting) - cap
        for conn, number in list(self.waiting.items()):
            if excess <= 0 or number > polled:
                break
            if not conn.answering():
                del self.waiting[conn]
                conn.shed()
                excess -= 1
        if excess > 0 and next(reversed(self.waiting.values())) > polled:
            self.sweeping = True
            loop.call_later(0, self._sweep, self.arrivals, cap, loop)

    def leave(self, conn: LimitedHttpToolsProtocol) -> None:
        self.waiting.pop(conn, None)
        self.authenticated.discard(conn)


_DOORS: weakref.WeakKeyDictionary[ServerState, _Doors] = weakref.WeakKeyDictionary()


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    max_head = MAX_HEAD_BYTES
    max_framing = MAX_FRAMING_BYTES
    head_timeout = HEAD_TIMEOUT
    body_timeout = BODY_TIMEOUT
    answer_timeout = ANSWER_TIMEOUT
    max_connections = MAX_CONNECTIONS
    max_unauthenticated = MAX_UNAUTHENTICATED
    unauthenticated_head_timeout = UNAUTHENTICATED_HEAD_TIMEOUT
    unauthenticated_keep_alive = UNAUTHENTICATED_KEEP_ALIVE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._doors = _DOORS.setdefault(self.server_state, _Doors())
        self._authenticated = False
        self._gone = False
        self.timeout_keep_alive = min(  # type: ignore[assignment]  # uvicorn says int
            self.timeout_keep_alive, self.unauthenticated_keep_alive)
        self._in_head = True
        self._framing = 0  # bytes fed for this request minus its body bytes
        self._body_left: int | None = None  # of a body whose length is declared
        self._unparsed = memoryview(b"")  # received, not yet fed (held back)
        self._deadline: asyncio.TimerHandle | None = None
        self._unread: asyncio.TimerHandle | None = None
        self._held: _HeldFlow  # the flow control, set with the connection

    # --- deadlines

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _stop(self, raw: bytes) -> None:
        """Answer `raw` unless this request's answer has started (a half-sent one is cut
        off, and the app sees a disconnect), and close: nothing more is parsed."""
        self._disarm()
        self._unparsed = memoryview(b"")
        if self.transport.is_closing():
            return
        cycle = self.cycle  # in the head: the previous request's, if any
        if self._in_head or cycle is None or not cycle.response_started:
            self.transport.write(raw)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # a half-sent answer or body is dropped
            cycle.message_event.set()
        self.transport.close()

    def _head_timeout(self) -> float:
        return self.head_timeout if self._authenticated else self.unauthenticated_head_timeout

    def _expired(self) -> None:
        self._deadline = None
        what = "headers" if self._in_head else "body"
        self._stop(_response(408, "Request Timeout",
                             f"Request Timeout: the {what} took too long to arrive"))

    # --- the connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow = self._held = _HeldFlow(transport)
        self._arm(self._head_timeout())  # a connection that never sends a whole head is dropped
        self._doors.arrive(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone = True
        self._doors.leave(self)
        self._disarm()
        if self._unread is not None:
            self._unread.cancel()
        self._unparsed = memoryview(b"")
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._unparsed = memoryview(bytes(self._unparsed) + data) if self._unparsed else \
            memoryview(data)
        self._feed()

    def _feed(self) -> None:
        """Hand the unparsed bytes to the parser piece by piece, counting the framing, until
        they are all parsed or an answer must be read first."""
        while self._unparsed and not self.transport.is_closing():
            if self._must_wait():
                self._held.held = True
                self._held.pause_reading()
                return
            if self._in_head and self._deadline is None:
                self._arm(self._head_timeout())  # the first byte of a keep-alive request
            size = self._body_left if not self._in_head and self._body_left else FEED
            piece, self._unparsed = self._unparsed[:size], self._unparsed[size:]
            self._framing += len(piece)
            super().data_received(piece)  # type: ignore[arg-type]  # httptools takes a view
            if self._in_head and self._framing > self.max_head:
                self._stop(_response(
                    431, "Request Header Fields Too Large",
                    f"Request Header Fields Too Large: the limit is {self.max_head} bytes"))
            elif self._framing > self.max_framing:
                self._stop(_response(
                    400, "Bad Request", "Bad Request: a request's framing (request line, "
                    "headers, chunk-size lines and extensions, trailers) may hold at most "
                    f"{self.max_framing} bytes"))
        self._unparsed = memoryview(b"")
        if self._held.held:
            self._held.held = False
            self._held.resume_reading()

    def _must_wait(self) -> bool:
        """Whether the next request must wait: the last one's answer is not complete, or the
        client has not read the answers already sent."""
        cycle = self.cycle
        if cycle is None:
            return False
        if not cycle.more_body and not cycle.response_complete:
            return True
        return cycle.response_complete and self.flow.write_paused

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._unparsed and not self.transport.is_closing():
            self.loop.call_soon(self._feed)  # after the app's send returns

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._unread is None:
            self._unread = self.loop.call_later(self.answer_timeout, self._unread_too_long)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._unread is not None:
            self._unread.cancel()
            self._unread = None
        if self._unparsed and not self.transport.is_closing():
            self._feed()

    def _unread_too_long(self) -> None:
        self._unread = None
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        self._unparsed = memoryview(b"")
        self.transport.close()

    # --- the two pools

    def answering(self) -> bool:
        """Whether a request's answer is under way on this connection."""
        return self.cycle is not None and not self.cycle.response_complete

    def shed(self) -> None:
        """Closed to make room: the oldest without an authenticated request."""
        self._stop(SHED)

    def _enter(self) -> Callable[[], None] | None:
        """The token check passed for a request on this connection: authenticate it, and
        count the request in flight. Returns what to call when the request is done, or None
        when either cap is reached (the request is answered 503)."""
        doors = self._doors
        if not self._authenticated:
            if len(doors.authenticated) >= self.max_connections:
                return None
            if not self._gone:
                doors.waiting.pop(self, None)
                doors.authenticated.add(self)
                self._authenticated = True
                self.timeout_keep_alive = self.config.timeout_keep_alive
        if doors.in_flight >= self.max_connections:
            return None
        doors.in_flight += 1
        done = False

        def leave() -> None:
            nonlocal done
            if not done:
                done = True
                doors.in_flight -= 1

        return leave

    # --- parser callbacks

    def on_message_begin(self) -> None:
        if self._deadline is None:
            self._arm(self._head_timeout())
        super().on_message_begin()
        self.scope["extensions"] = {DOOR: self._enter}

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._in_head:
            return  # a trailer: counted as framing, never kept (ASGI has no request trailers)
        if name.lower() == b"content-length" and value.strip().isdigit():
            self._body_left = int(value)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._arm(self.body_timeout)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._framing -= len(body)
        if self._body_left is not None:
            self._body_left -= len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head = True
        self._framing = 0
        self._body_left = None
        super().on_message_complete()
