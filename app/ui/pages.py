"""The owner's page as one Starlette app, mounted at `/ui` (docs/owner-page.md)."""

from __future__ import annotations

from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from app.ui import overview
from app.ui.access import checked_post, context, login_needed, owner
from app.ui.context import UiContext
from app.ui.headers import SecurityHeaders
from app.ui.render import page
from app.ui.sessions import COOKIE, IDLE

STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}


async def login(request: Request) -> Response:
    ctx = context(request)
    why = ctx.keys.take(request.query_params.get("code"))
    if why is not None:
        status = 429 if why.startswith("too many") else 401
        return page("notice.html", status, title="Not logged in", lines=[
            why + ".", "For a fresh link run: loom-fs-mcp --ui-link (with the same --config)."
        ], session=None)
    answer = RedirectResponse("/ui/", status_code=303)
    answer.set_cookie(COOKIE, ctx.sessions.open(), max_age=int(IDLE), path="/ui",
                      httponly=True, samesite="strict")
    if ctx.owner_log is not None:
        ctx.owner_log("ALLOW", "-", ".", "owner_login", None)
    return answer


async def logout(request: Request) -> Response:
    checked = await checked_post(request)
    if isinstance(checked, Response):
        return checked
    context(request).sessions.close(request.cookies.get(COOKIE))
    answer = RedirectResponse("/ui/", status_code=303)
    answer.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return answer


async def home(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    ctx = context(request)
    return page("overview.html", session=session, view="overview", standalone=ctx.standalone,
                roots=overview.roots(ctx), clients=overview.clients(ctx),
                gauges=overview.gauges(ctx), indexes=overview.indexes(ctx))


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response("Not Found", status_code=404, media_type="text/plain")
    body = resources.files("app.ui").joinpath("static").joinpath(name).read_bytes()
    return Response(body, media_type=STATIC[name])


def routes() -> list[Route]:
    from app.ui import views

    return [
        Route("/", home),
        Route("/login", login),
        Route("/logout", logout, methods=["POST"]),
        Route("/static/{name}", static),
        *views.ROUTES,
    ]


def build_ui(ctx: UiContext) -> ASGIApp:
    app = Starlette(routes=routes())
    app.state.ui = ctx
    return SecurityHeaders(app)
