"""The HTTP service: one Starlette app with /healthz and /mcp behind the guards."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app import __version__
from app.http.body import BodyLimit, body_limit_for
from app.http.disconnect import CancelOnDisconnect
from app.http.guards import BearerAuth, HostOriginGuard, TrimMcpHeaders
from app.http.limits import MAX_SESSIONS, SESSION_IDLE_TIMEOUT
from app.http.response_mode import JsonWhenNothingStreams, PerRequestJSON
from app.http.sessions import SessionGate, SessionPolicy
from app.security.tokenfile import TokenHolder
from app.server import LoomServer, install_sighup

if TYPE_CHECKING:
    from app.ui.context import UiContext


def build_app(
    server: LoomServer,
    *,
    token: str | TokenHolder | None = None,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    json_response: bool | None = None,
    handle_sighup: bool = False,
    watch_disconnects: bool = True,
    max_sessions: int = MAX_SESSIONS,
    session_idle_timeout: float = SESSION_IDLE_TIMEOUT,
    ui: UiContext | None = None,
) -> ASGIApp:
    """`json_response`: True always JSON, False always SSE, None (default) per request.

    `ui`: the owner's page, served under `/ui/` (`app.ui`); None leaves it out.

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
    policy = SessionPolicy(server.session_manager)
    registry = server.registry

    def client_share() -> int | None:
        clients = len(registry.current.config.clients)
        return max(1, max_sessions // clients) if clients else None

    policy.client_share = client_share
    server.after_reload.append(
        lambda old, new: policy.end_sessions_of_removed({c.name for c in new.config.clients})
    )
    routes = _routes(server, mcp_app.routes)
    if ui is not None:
        from app.ui.pages import build_ui

        ui.mcp_sessions = policy
        routes += ui_routes(build_ui(ui))
    app = Starlette(routes=routes, lifespan=_lifespan(server, handle_sighup))
    guarded: ASGIApp = SessionGate(app, policy, json_only=json_response is True)
    if json_response is None:
        guarded = JsonWhenNothingStreams(guarded)
    if watch_disconnects:
        guarded = CancelOnDisconnect(guarded, server)
    guarded = TrimMcpHeaders(guarded)
    guarded = BodyLimit(guarded, body_limit_for(server))
    # With [[clients]] (a registry reading their tokens), the token selects the client.
    clients = (lambda: registry.current.tokens) if registry.client_tokens else None
    guarded = BearerAuth(guarded, None if clients else token, clients=clients)
    guarded = HostOriginGuard(guarded, allowed_hosts, allowed_origins)
    return _LifespanPassthrough(guarded, app)


def _routes(server: LoomServer, mcp_routes: list[BaseRoute]) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        body = {"status": "ok", "version": __version__, "roots": len(server.registry.current.roots)}
        if request.method == "HEAD":
            return Response(status_code=200, media_type="application/json")
        return JSONResponse(body)

    async def not_found(request: Request) -> Response:
        return Response("Not Found", status_code=404, media_type="text/plain")

    return [
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/.well-known/oauth-protected-resource", not_found),
        Route("/.well-known/oauth-protected-resource/{rest:path}", not_found),
        *mcp_routes,
    ]


def ui_routes(ui_app: ASGIApp) -> list[BaseRoute]:
    """`/ui/` and what is under it; `/ui` alone goes to `/ui/`."""

    async def to_ui(request: Request) -> Response:
        return RedirectResponse("/ui/", status_code=308)

    return [Route("/ui", to_ui), Mount("/ui", app=ui_app)]


def _lifespan(
    server: LoomServer, handle_sighup: bool
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if handle_sighup:
            install_sighup(server)
        try:
            async with server.session_manager.run():
                yield
        finally:
            with anyio.CancelScope(shield=True):  # a build never left running
                await server.close()

    return lifespan


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
