"""The doors of the page: who is logged in, and whether a POST may change anything."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from app.security.resolve import Root
from app.ui.context import UiContext
from app.ui.headers import same_origin
from app.ui.render import page
from app.ui.sessions import COOKIE, OwnerSession, csrf_ok

MAX_FORM_FIELDS = 16


def context(request: Request) -> UiContext:
    ctx: UiContext = request.app.state.ui
    return ctx


def owner(request: Request) -> OwnerSession | None:
    return context(request).sessions.get(request.cookies.get(COOKIE))


def login_needed() -> Response:
    return page("notice.html", 401, title="Log in to the owner's page", lines=[
        "This page is for the person who runs the server, through a login link.",
        "The link is printed when the server starts; for a fresh one run: "
        "loom-fs-mcp --ui-link (with the same --config, and --port if not 8000).",
    ], session=None)


def refused(status: int, why: str, session: OwnerSession | None) -> Response:
    return page("notice.html", status, title="Not done", lines=[why, "Nothing was changed."],
                session=session)


@dataclass(frozen=True)
class Post:
    """A POST the page may act on: who sent it, its form, and this process's page."""

    session: OwnerSession
    fields: dict[str, str]
    ctx: UiContext

    def root(self) -> tuple[str, Root | None]:
        """The root the form names (`root`), and that root if this server has one."""
        name = self.fields.get("root", "")
        return name, self.ctx.registry.current.roots.get(name)


async def checked_post(request: Request) -> Post | Response:
    """The session and the form of a POST the page may act on, or the refusal to answer
    (no session 401; another origin or a wrong CSRF token 403). Nothing is changed before."""
    session = owner(request)
    if session is None:
        return login_needed()
    if not same_origin(request.scope):
        return refused(403, "this change did not come from this page (its Origin is not "
                       "this server's)", session)
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    if not csrf_ok(session, fields.get("csrf")):
        return refused(403, "this form is out of date or not from this page (its CSRF "
                       "token does not match): reload the page and try again", session)
    return Post(session, fields, context(request))
