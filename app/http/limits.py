"""Every limit the HTTP service ships with, in one list, and the uvicorn options that apply them.

Threat: any local process (or, with `--allow-remote`, anyone who can connect)
may open connections and sessions. Without these a single client could keep
the server busy or out of memory for everyone else. Where each is enforced:
- the bytes of a request's framing, the deadlines and the hold on a connection
  whose answers are not read: `app.http.protocol.LimitedHttpToolsProtocol`;
- connections: two pools, in the same protocol (authenticated ones up to
  `MAX_CONNECTIONS`, 503 above it; the others up to `MAX_UNAUTHENTICATED`, the
  oldest closed, with deadlines of their own), and uvicorn's keep-alive idle
  timeout;
- sessions: the SDK's cap and idle timeout, with `app.http.sessions` deciding
  who is evicted when the table is full;
- the body: `app.http.body.BodyLimit`.

docs/service.md lists the same numbers; `tests/service/test_shipped_limits.py`
checks each one on the console script as shipped.

What this does not do: tell clients apart (on loopback every peer is
127.0.0.1), so the holders of the token share the authenticated places.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.http.protocol import (
    ANSWER_TIMEOUT,
    BODY_TIMEOUT,
    FEED,
    HEAD_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_FRAMING_BYTES,
    MAX_HEAD_BYTES,
    MAX_UNAUTHENTICATED,
    UNAUTHENTICATED_HEAD_TIMEOUT,
    UNAUTHENTICATED_KEEP_ALIVE,
    LimitedHttpToolsProtocol,
)
from app.http.sessions import PROTECTED_FOR

__all__ = [
    "ANSWER_TIMEOUT", "BODY_TIMEOUT", "FEED", "HEAD_TIMEOUT", "KEEP_ALIVE_TIMEOUT",
    "MAX_CONNECTIONS", "MAX_FRAMING_BYTES", "MAX_HEAD_BYTES", "MAX_SESSIONS",
    "MAX_UNAUTHENTICATED", "PROTECTED_FOR", "SESSION_IDLE_TIMEOUT",
    "UNAUTHENTICATED_HEAD_TIMEOUT", "UNAUTHENTICATED_KEEP_ALIVE", "LimitedHttpToolsProtocol",
    "uvicorn_limits",
]

KEEP_ALIVE_TIMEOUT = 5.0  # uvicorn's default, stated here because it is part of the bound
# ~45 KB each. Half the connection cap: a session holds at most one GET stream
# (one connection), so sessions alone can never fill the connection cap.
MAX_SESSIONS = MAX_CONNECTIONS // 2
SESSION_IDLE_TIMEOUT = 600.0  # seconds without a request in flight (an open GET stream counts)


def uvicorn_limits(protocol: type[HttpToolsProtocol] = LimitedHttpToolsProtocol
                   ) -> dict[str, Any]:
    """The uvicorn.Config options that bound what one client can hold. With our protocol
    the connection caps are its own (uvicorn's `limit_concurrency` counted every connection,
    with the token or not, against one cap); another protocol gets uvicorn's."""
    ours = isinstance(protocol, type) and issubclass(protocol, LimitedHttpToolsProtocol)
    return {
        "http": protocol,
        "ws": "none",  # no route speaks WebSocket: an upgrade is served as plain HTTP
        "limit_concurrency": None if ours else MAX_CONNECTIONS,
        "timeout_keep_alive": KEEP_ALIVE_TIMEOUT,
        # The pools' sweep runs after the next poll of the sockets: asyncio's order.
        "loop": "asyncio",
    }
