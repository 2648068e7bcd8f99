"""The guards every HTTP request passes first: who may ask, and with which headers.

Small pure-ASGI middlewares, outermost first (`app.http.factory.build_app` stacks them):
1. `HostOriginGuard` - DNS-rebinding defence: Host must be loopback or listed
   (421), a present Origin must be loopback or listed (403).
2. `BearerAuth` - when a token is required, /mcp needs it (401); the token is read from
   its holder on every request, so a reload that read a rotated token file applies at once.
   With `[[clients]]` the token is compared with every client's (`ClientTokens`, from the
   registry's current snapshot) and the client it is goes into the scope
   (`app.calls.CLIENT_KEY`), for the call to run under that client's grant.
   A request that passes tells its connection so (the `DOOR` extension of
   `app.http.protocol`): the connection leaves the pool of connections without an
   authenticated request, and the request counts as in flight until it is done (503 when
   either cap is reached).
3. `app.http.body.BodyLimit` - requests above the limit get 413 before anything
   reads them.
4. `TrimMcpHeaders` - `Mcp-Method`/`Mcp-Name` without surrounding whitespace.
Inside them (`factory.build_app`): `CancelOnDisconnect`, `JsonWhenNothingStreams`, and
`app.http.sessions.SessionGate` - only a well-formed `initialize` opens a session, and a
full table evicts by use or answers 503.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from app.calls import CLIENT_KEY
from app.security.tokenfile import ClientTokens, TokenHolder

ClientTable = Callable[[], "ClientTokens | None"]  # the clients' tokens now (a reload's)

# The ASGI extension `app.http.protocol.LimitedHttpToolsProtocol` puts in each request's
# scope: a callable the token check calls once the request passed it, returning what to call
# when the request is done, or None when no place is left (answer 503).
DOOR = "loomfs.authenticated"


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


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


async def plain(
    send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """A short text/plain answer from a guard (the app never sees the request)."""
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
            if not self.host_ok(header(scope, b"host")):
                await plain(send, 421, "Misdirected Request: Host not allowed")
                return
            origin = header(scope, b"origin")
            if origin is not None and not self.origin_ok(origin):
                await plain(send, 403, "Forbidden: Origin not allowed")
                return
        await self.app(scope, receive, send)


class BearerAuth:
    """`Authorization: Bearer <token>`, the scheme in any case (RFC 9110 §11.1), compared
    in constant time with the token its holder has now (a string: that token, for good)."""

    def __init__(
        self, app: ASGIApp, token: str | TokenHolder | None, prefix: str = "/mcp",
        clients: ClientTable | None = None,
    ):
        self.app = app
        self.token = token if isinstance(token, TokenHolder) else TokenHolder(token)
        self.prefix = prefix
        if clients is not None and self.token.current is not None:
            raise ValueError("a server token and client tokens are never both required")
        self.clients = clients

    @staticmethod
    def client_of(header: str | None, table: ClientTokens | None) -> str | None:
        """The client whose token the header carries (every token compared), or None."""
        scheme, _, credentials = (header or "").strip().partition(" ")
        got = credentials.strip().encode("latin-1")
        found = table.match(got) if table is not None else None
        return found if scheme.lower() == "bearer" else None

    @staticmethod
    def authorized(header: str | None, expected: bytes) -> bool:
        scheme, _, credentials = (header or "").strip().partition(" ")
        got = credentials.strip().encode("latin-1")
        same = hmac.compare_digest(got, expected)  # compared whatever the scheme
        return scheme.lower() == "bearer" and same

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        expected = self.token.current  # once per request: a rotation never splits one
        path = scope.get("path", "")
        guarded = scope["type"] == "http" and (
            path == self.prefix or path.startswith(self.prefix + "/"))
        if not guarded:
            await self.app(scope, receive, send)
            return
        refused = expected is not None and not self.authorized(
            header(scope, b"authorization"), expected)
        if self.clients is not None:
            client = self.client_of(header(scope, b"authorization"), self.clients())
            refused = client is None
            if client is not None:
                scope = {**scope, CLIENT_KEY: client}
        if refused:
            await plain(
                send,
                401,
                "Unauthorized: a valid bearer token is required",
                [(b"www-authenticate", b'Bearer realm="loom-fs-mcp"')],
            )
            return
        door = scope.get("extensions", {}).get(DOOR)
        done = door() if door is not None else _nothing
        if done is None:
            await plain(send, 503, "Service Unavailable: too many authenticated connections "
                        "or requests in flight")
            return
        try:
            await self.app(scope, receive, send)
        finally:
            done()


def _nothing() -> None:
    return None


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
