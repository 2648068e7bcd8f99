"""The request body, read once: bounded, replayed to the app, shown to the guards after.

`BodyLimit` answers 413 to a request above the limit before anything reads it
(by its Content-Length, else while reading), then hands the app one message
holding the whole body. It also leaves that same bytes object in the scope
(`body_of`), so the middlewares after it that decide from the body (the
response mode, the disconnect watcher) look at it without receiving it again.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.guards import header, plain

if TYPE_CHECKING:
    from app.server import LoomServer

# Big enough for write_file of a file at the largest max_read_bytes, JSON-escaped.
BODY_OVERHEAD = 1 << 20
BODY_FACTOR = 2
SCOPE_KEY = "loomfs.body"  # where BodyLimit leaves the body it read (absent: none arrived)


def body_of(scope: Scope) -> bytes | None:
    """The whole body `BodyLimit` read, or None when the client left before sending it."""
    body: bytes | None = scope.get(SCOPE_KEY)
    return body


def body_limit_for(server: LoomServer) -> Callable[[], int]:
    def limit() -> int:
        snap = server.registry.current
        largest = max(r.max_read_bytes for r in snap.roots.values())
        return largest * BODY_FACTOR + BODY_OVERHEAD

    return limit


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: Callable[[], int]):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await plain(send, 413, f"Payload Too Large: the limit is {limit} bytes")
            return
        # Read the whole body first (it is bounded by the limit), then replay it: the
        # app never sees a request that is over the limit, however it is chunked.
        # It is handed on as one bytes object that every reader after us shares
        # (Starlette's `body()` of a single chunk is that chunk): held once.
        # The chunks go into one growing buffer whose getvalue() hands over its own
        # storage (no copy): a list then b"".join would hold the body twice.
        buf = io.BytesIO()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, replay(message), send)
                return
            buf.write(message.get("body", b""))
            if buf.tell() > limit:
                await plain(send, 413, f"Payload Too Large: the limit is {limit} bytes")
                return
            if not message.get("more_body", False):
                break
        body = buf.getvalue()
        del buf, message  # nothing here may keep a second copy alive
        scope = {**scope, SCOPE_KEY: body}
        await self.app(
            scope, replay({"type": "http.request", "body": body, "more_body": False}, receive), send
        )


def replay(first: Any, then: Receive | None = None) -> Receive:
    """A `receive` that hands back `first` (already read), then defers to `then` (or says
    the client is gone, when there is no `then`)."""
    pending: list[Any] = [first]

    async def receive() -> Any:
        if pending:
            return pending.pop()
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive
