"""Limits the HTTP stack lacks: header size, read timeouts, connections, sessions.

Threat: any local process (or, with `--allow-remote`, anyone who can connect)
may open connections and sessions. Without these a single client could keep
the server busy or out of memory for everyone else: 400 MB of headers were
accepted on one unauthenticated connection (httptools has no cap), a request
trickled one byte at a time held its socket forever, and 10,000 sessions that
were never closed locked every new client out for 30 minutes.

- `LimitedHttpToolsProtocol`: uvicorn's httptools protocol (its C parser is
  what keeps a call cheap, docs/measured.md) with a cap on the bytes of a
  request's head (431 and close), a deadline for the head (408 and close,
  counted from the connection or from the first byte of a keep-alive request)
  and one for the body (408, or close once a response started). The checks are
  a counter and a timer per request: no parsing of our own.
- `uvicorn_limits()`: those, plus uvicorn's own connection cap
  (`limit_concurrency`: 503 above it) and keep-alive idle timeout.
- `evict_when_full`: the SDK's session cap answers 503 to every new client
  while the cap is reached; instead the session idle the longest (else the
  oldest) is closed to make room, so a flood of abandoned sessions costs its
  author their own sessions, not other clients theirs. A closed session's id
  then answers 404 and its client re-initialises (MCP spec).

What this does not do: tell clients apart (on loopback every peer is
127.0.0.1), so many connections that each behave within the limits still
share the connection cap.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 << 10  # request line and headers together
HEAD_TIMEOUT = 10.0  # seconds to send a request's head
BODY_TIMEOUT = 60.0  # seconds to send its body, once the head is in
MAX_CONNECTIONS = 256  # uvicorn's limit_concurrency: connections or requests in flight
KEEP_ALIVE_TIMEOUT = 5.0  # uvicorn's default, stated here because it is part of the bound
# ~45 KB each. Half the connection cap: a session holds at most one GET stream
# (one connection), so sessions alone can never fill the connection cap.
MAX_SESSIONS = MAX_CONNECTIONS // 2
SESSION_IDLE_TIMEOUT = 600.0  # seconds without a request in flight (an open GET stream counts)


def _response(status: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    max_head = MAX_HEAD_BYTES
    head_timeout = HEAD_TIMEOUT
    body_timeout = BODY_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _refuse(self, raw: bytes) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(raw)
            self.transport.close()

    def _expired(self) -> None:
        self._deadline = None
        cycle = self.cycle
        if self._in_head or cycle is None or not cycle.response_started:
            what = "headers" if self._in_head else "body"
            self._refuse(_response(408, "Request Timeout", f"Request Timeout: the {what} took "
                                   "too long to arrive"))
        elif not self.transport.is_closing():
            cycle.disconnected = True  # the app sees a disconnect; the half-sent body is dropped
            cycle.message_event.set()
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.head_timeout)  # a connection that never sends a whole head is dropped

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_head:
            self._refuse(_response(
                431, "Request Header Fields Too Large",
                f"Request Header Fields Too Large: the limit is {self.max_head} bytes"))

    def on_message_begin(self) -> None:
        if self._deadline is None:
            self._arm(self.head_timeout)
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        self._arm(self.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head = True
        super().on_message_complete()


def uvicorn_limits(protocol: type[HttpToolsProtocol] = LimitedHttpToolsProtocol
                   ) -> dict[str, Any]:
    """The uvicorn.Config options that bound what one client can hold."""
    return {
        "http": protocol,
        "limit_concurrency": MAX_CONNECTIONS,
        "timeout_keep_alive": KEEP_ALIVE_TIMEOUT,
    }


def evict_when_full(manager: Any) -> None:
    """Make the SDK's session manager close its longest-idle session instead of
    refusing a new one at `max_sessions` (SDK private API, pinned `mcp<3`)."""
    admit = manager._admit_session

    def admit_or_evict(requestor: Any) -> Any:
        sessions = manager._server_instances
        if manager.max_sessions is not None and len(sessions) >= manager.max_sessions:
            _evict(manager)
        return admit(requestor)

    manager._admit_session = admit_or_evict


def _evict(manager: Any) -> None:
    def idleness(item: tuple[str, Any]) -> tuple[bool, float]:
        transport = item[1]
        scope = transport.idle_scope
        busy = getattr(transport, "_requests_in_flight", 0) > 0
        # Idle ones first, the earliest deadline (the longest idle) first; then the
        # busy ones in creation order (dicts keep it), oldest first.
        return busy, scope.deadline if scope is not None and not busy else math.inf

    session_id, transport = min(manager._server_instances.items(), key=idleness)
    # Forget it now (its id answers 404 at once); ending its idle scope ends its
    # server task, which terminates the transport.
    manager._server_instances.pop(session_id, None)
    manager._session_owners.pop(session_id, None)
    if transport.idle_scope is not None:  # set whenever the manager has an idle timeout
        transport.idle_scope.cancel()
