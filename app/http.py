"""The HTTP service: one Starlette app with /healthz and /mcp behind guards.

Guards are small pure-ASGI middlewares, outermost first:
1. `HostOriginGuard` - DNS-rebinding defence: Host must be loopback or listed
   (421), a present Origin must be loopback or listed (403).
2. `BearerAuth` - when a token is configured, /mcp needs it (401).
3. `BodyLimit` - requests above the limit get 413 before anything reads them.
Then `JsonWhenNothingStreams` picks, per POST, a plain JSON answer or an SSE
stream (see there).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app import __version__
from app.calls import call_key
from app.http_limits import MAX_SESSIONS, SESSION_IDLE_TIMEOUT, evict_when_full
from app.server import LoomServer, install_sighup

# Big enough for write_file of a file at the largest max_read_bytes, JSON-escaped.
BODY_OVERHEAD = 1 << 20
BODY_FACTOR = 2


def split_host(value: str) -> str:
    """The host part of a Host header or netloc, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def is_loopback(host: str) -> bool:
    host = split_host(host)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


async def _plain(
    send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class HostOriginGuard:
    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]):
        self.app = app
        self.hosts = {h.strip().lower() for h in allowed_hosts if h.strip()}
        self.origins = {o.strip().lower().rstrip("/") for o in allowed_origins if o.strip()}

    def host_ok(self, host: str | None) -> bool:
        if not host:
            return False
        host = host.strip().lower()
        return is_loopback(host) or host in self.hosts or split_host(host) in self.hosts

    def origin_ok(self, origin: str) -> bool:
        origin = origin.strip().lower().rstrip("/")
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return (
            parts.scheme in ("http", "https")
            and bool(parts.hostname)
            and is_loopback(parts.hostname or "")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if not self.host_ok(_header(scope, b"host")):
                await _plain(send, 421, "Misdirected Request: Host not allowed")
                return
            origin = _header(scope, b"origin")
            if origin is not None and not self.origin_ok(origin):
                await _plain(send, 403, "Forbidden: Origin not allowed")
                return
        await self.app(scope, receive, send)


class BearerAuth:
    """`Authorization: Bearer <token>`, the scheme in any case (RFC 9110 §11.1), compared
    in constant time."""

    def __init__(self, app: ASGIApp, token: str | None, prefix: str = "/mcp"):
        self.app = app
        self.expected = token.encode() if token else None
        self.prefix = prefix

    def authorized(self, header: str | None) -> bool:
        scheme, _, credentials = (header or "").strip().partition(" ")
        got = credentials.strip().encode("latin-1")
        same = hmac.compare_digest(got, self.expected or b"")  # compared whatever the scheme
        return scheme.lower() == "bearer" and same

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.expected is not None and scope["type"] == "http":
            path = scope.get("path", "")
            guarded = path == self.prefix or path.startswith(self.prefix + "/")
            if guarded and not self.authorized(_header(scope, b"authorization")):
                await _plain(
                    send,
                    401,
                    "Unauthorized: a valid bearer token is required",
                    [(b"www-authenticate", b'Bearer realm="loom-fs-mcp"')],
                )
                return
        await self.app(scope, receive, send)


class TrimMcpHeaders:
    """`Mcp-Method`/`Mcp-Name` values without surrounding whitespace (RFC 9110 §5.5: it
    is not part of the value); the SDK compares them with the body as sent."""

    NAMES = (b"mcp-method", b"mcp-name")

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers", ())
            if any(k in self.NAMES and v != v.strip(b" \t") for k, v in headers):
                trimmed = [(k, v.strip(b" \t") if k in self.NAMES else v) for k, v in headers]
                scope = {**scope, "headers": trimmed}
        await self.app(scope, receive, send)


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: Callable[[], int]):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _plain(send, 413, f"Payload Too Large: the limit is {limit} bytes")
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
                await self.app(scope, _replay([], message), send)
                return
            buf.write(message.get("body", b""))
            if buf.tell() > limit:
                await _plain(send, 413, f"Payload Too Large: the limit is {limit} bytes")
                return
            if not message.get("more_body", False):
                break
        body = buf.getvalue()
        del buf, message  # nothing here may keep a second copy alive
        await self.app(scope, _replay([body], None, receive), send)


def _replay(chunks: list[bytes], first: Any = None, then: Receive | None = None) -> Receive:
    """A `receive` that hands back an already-read body, then defers to `then`."""
    pending: list[Any] = (
        [first]
        if first is not None
        else [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
    )

    async def receive() -> Any:
        if pending:
            return pending.pop()
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive


_answer_json: ContextVar[bool] = ContextVar("loomfs_answer_json", default=False)


class PerRequestJSON:
    """The SDK's `json_response` flag, read as a bool: this request's choice."""

    def __bool__(self) -> bool:
        return _answer_json.get()


class JsonWhenNothingStreams:
    """Answer a POST with one JSON body when nothing but its response can be sent on it.

    An SSE answer costs the server about twice the CPU of a JSON one per small
    call, and the client as much again (README "Measured"). Only a request
    that may get more than its response needs the stream: one that asked for
    progress (`progressToken`; looked for in the raw bytes, so a false positive
    just keeps SSE). Our tools send nothing else on a request's stream (no
    sampling, elicitation or request-scoped logs). The request that opens a
    session (no `mcp-session-id`, handshake era) always streams: the session's
    own tasks are started inside it and inherit its choice; they must see SSE.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        # The body is already in memory and bounded (BodyLimit, outside this one).
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([], message), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        version = _header(scope, b"mcp-protocol-version")
        # The SDK's own routing rule: a version outside the handshake era is served
        # per request (2026-07-28), never opening a session.
        per_request = version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
        in_session = _header(scope, b"mcp-session-id") is not None
        token = _answer_json.set((in_session or per_request) and b"progressToken" not in body)
        try:
            await self.app(scope, _replay([body], None, receive), send)
        finally:
            _answer_json.reset(token)


class CancelOnDisconnect:
    """Stop the work of a tool call whose HTTP client went away before its answer.

    The SDK does not cancel a handler when the connection drops, so this watches
    the connection itself: after the (already bounded) body, it alone reads the
    server's `receive`, hands every message on to the app, and on a disconnect
    before the response is complete sets that call's cancel flag
    (`LoomServer.inflight`, an `app.calls.InFlight` registered by `app.tools.base.run`).
    """

    def __init__(self, app: ASGIApp, server: LoomServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        first = await receive()
        body = first.get("body", b"") if first["type"] == "http.request" else b""
        request_id = _tool_call_id(body)
        if request_id is None:
            await self.app(scope, _replay([], first, receive), send)
            return
        key = call_key(scope.get("client"), _header(scope, b"mcp-session-id"), request_id)
        complete = False
        inbox: list[Any] = [first]
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


SNIFF_WHOLE = 1 << 16  # bodies up to this are parsed whole for their id
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d{1,20}|"[^"\\]{0,200}")\s*[,}]')
_TOOLS_CALL = re.compile(rb'\s*:\s*"tools/call"')


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


def body_limit_for(server: LoomServer) -> Callable[[], int]:
    def limit() -> int:
        snap = server.registry.current
        largest = max(r.max_read_bytes for r in snap.roots.values())
        return largest * BODY_FACTOR + BODY_OVERHEAD

    return limit


def build_app(
    server: LoomServer,
    *,
    token: str | None = None,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    json_response: bool | None = None,
    handle_sighup: bool = False,
    watch_disconnects: bool = True,
    max_sessions: int = MAX_SESSIONS,
    session_idle_timeout: float = SESSION_IDLE_TIMEOUT,
) -> ASGIApp:
    """`json_response`: True always JSON, False always SSE, None (default) per request.

    `watch_disconnects=False` leaves out `CancelOnDisconnect` (benchmarks only).
    """
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=PerRequestJSON() if json_response is None else json_response,  # type: ignore[arg-type]
        # Our HostOriginGuard covers every route; the SDK's would only cover /mcp.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=1 << 40,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    )
    evict_when_full(server.session_manager)

    async def healthz(request: Request) -> Response:
        body = {"status": "ok", "version": __version__, "roots": len(server.registry.current.roots)}
        if request.method == "HEAD":
            return Response(status_code=200, media_type="application/json")
        return JSONResponse(body)

    async def not_found(request: Request) -> Response:
        return Response("Not Found", status_code=404, media_type="text/plain")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if handle_sighup:
            install_sighup(server)
        async with server.session_manager.run():
            yield

    routes = [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/.well-known/oauth-protected-resource", not_found),
        Route("/.well-known/oauth-protected-resource/{rest:path}", not_found),
        *mcp_app.routes,
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    guarded: ASGIApp = app if json_response is not None else JsonWhenNothingStreams(app)
    if watch_disconnects:
        guarded = CancelOnDisconnect(guarded, server)
    guarded = TrimMcpHeaders(guarded)
    guarded = BodyLimit(guarded, body_limit_for(server))
    guarded = BearerAuth(guarded, token)
    guarded = HostOriginGuard(guarded, allowed_hosts, allowed_origins)
    return _LifespanPassthrough(guarded, app)


class _LifespanPassthrough:
    """Send lifespan events straight to the Starlette app, HTTP through the guards."""

    def __init__(self, guarded: ASGIApp, app: Starlette) -> None:
        self.guarded = guarded
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
        else:
            await self.guarded(scope, receive, send)
