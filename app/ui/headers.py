"""The headers every `/ui/` answer carries, and the same-origin rule for its POSTs.

Everything the page shows came from an agent (file names, contents, client names), so
escaping (autoescaping templates, `app.ui.render`) is backed by a Content-Security-Policy
that lets nothing run but this process's own script file: no inline script or style, no
external asset, no framing, no `<base>`, forms posting only here.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'"
)
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Not `no-referrer`: under it a browser sends `Origin: null` with the page's own form
    # POSTs, which the Host/Origin guard and `same_origin` then refuse. `same-origin` sends
    # no Referer to any other site and the real Origin here.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
_NAMES = {name for name, _ in HEADERS}


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class SecurityHeaders:
    """Adds `HEADERS` to every answer (replacing any the app set under those names)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in _NAMES]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)


def same_origin(scope: Scope) -> bool:
    """A POST from this page: its Origin names this very host and port (a browser sends
    Origin on every POST), and `Sec-Fetch-Site`, when sent, says same-origin."""
    origin, host = header(scope, b"origin"), header(scope, b"host")
    if not origin or not host:
        return False
    if origin.strip().lower().rstrip("/") != f"http://{host.strip().lower()}":
        return False
    site = header(scope, b"sec-fetch-site")
    return site is None or site == "same-origin"
