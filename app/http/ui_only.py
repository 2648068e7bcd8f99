"""`loom-fs-mcp --ui`: the owner's page alone, behind the same Host/Origin guard and body
limit as the serving process's (no `/mcp`: this process serves no client)."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.applications import Starlette
from starlette.types import ASGIApp

from app.http.body import BodyLimit
from app.http.factory import ui_routes
from app.http.guards import HostOriginGuard
from app.ui.context import UiContext
from app.ui.pages import build_ui

UI_BODY_LIMIT = 64 << 10  # the page's forms are a few fields


def build_ui_app(ui: UiContext, allowed_hosts: Iterable[str] = (),
                 allowed_origins: Iterable[str] = ()) -> ASGIApp:
    app = Starlette(routes=ui_routes(build_ui(ui)))
    return HostOriginGuard(BodyLimit(app, lambda: UI_BODY_LIMIT), allowed_hosts, allowed_origins)
