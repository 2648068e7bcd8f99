"""Stop the work of a tool call whose HTTP client went away (`CancelOnDisconnect`)."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from app.calls import call_key
from app.http.body import body_of
from app.http.guards import header
from app.server import LoomServer

SNIFF_WHOLE = 1 << 16  # bodies up to this are parsed whole for their id
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,20}|"[^"\\]{0,200}")\s*[,}]')
_TOOLS_CALL = re.compile(rb'\s*:\s*"tools/call"')


class CancelOnDisconnect:
    """Stop the work of a tool call whose HTTP client went away before its answer.

    The SDK does not cancel a handler when the connection drops, so this watches
    the connection itself: it takes the call's id from the body `BodyLimit`
    already read, then alone reads the server's `receive`, hands every message on
    to the app, and on a disconnect before the response is complete sets that
    call's cancel flag (`LoomServer.inflight`, an `app.calls.InFlight` registered
    by `app.tools.base.run`).
    """

    def __init__(self, app: ASGIApp, server: LoomServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = body_of(scope) if scope["type"] == "http" else None
        request_id = _tool_call_id(body) if body and scope.get("method") == "POST" else None
        if request_id is None:
            await self.app(scope, receive, send)
            return
        key = call_key(scope.get("client"), header(scope, b"mcp-session-id"), request_id)
        complete = False
        inbox: list[Any] = []
        arrived = anyio.Event()

        async def tracked_send(message: Any) -> None:
            nonlocal complete
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        async def app_receive() -> Any:
            nonlocal arrived
            while not inbox:
                await arrived.wait()
                arrived = anyio.Event()
            return inbox.pop(0)

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect" and not complete:
                    self.server.inflight.cancel(key)
                inbox.append(message)
                arrived.set()
                if message["type"] == "http.disconnect":
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                await self.app(scope, app_receive, tracked_send)
            finally:
                tg.cancel_scope.cancel()


def _keys(body: bytes, key: bytes) -> list[int]:
    """Where `key` (quoted) stands outside a string: inside one its quotes are escaped.
    At most two: two already make it ambiguous."""
    out: list[int] = []
    pos = body.find(key)
    while pos >= 0 and len(out) < 2:
        if body[pos - 1 : pos] != b"\\":
            out.append(pos + len(key))
        pos = body.find(key, pos + len(key))
    return out


def _tool_call_id(body: bytes) -> Any:
    """The JSON-RPC id of a single `tools/call` request, else None (cheap pre-check).

    A large body (a write_file) is not parsed: that would hold a second, larger
    copy of it just for its id. Its id and method are found with `bytes.find`
    where they stand outside strings; anything ambiguous is parsed after all."""
    if b'"tools/call"' not in body:
        return None
    if len(body) > SNIFF_WHOLE and body.lstrip()[:1] == b"{":
        ids, methods = _keys(body, b'"id"'), _keys(body, b'"method"')
        if len(ids) == 1 and len(methods) == 1 and _TOOLS_CALL.match(body, methods[0]):
            m = _ID_VALUE.match(body, ids[0])
            if m:
                return json.loads(m.group(1))
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # deeply nested: the SDK answers it with a 400
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        return message.get("id")
    return None
