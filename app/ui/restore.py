"""`POST /ui/restore`: the owner puts an item of a root's trash back, by one click.

The form (on the changes and trash views) names the root and the item's ID; the
work is `app.fs.change.undo.put_back` (a delete never over an existing entry, a
version over the current file with that file kept as a version first), run as the
owner: the version it keeps records `client=owner`, and the page writes one audit
line `owner_restore` (ALLOW, or DENY with why), through the root with its own audit
off so the action is one line. No confirmation: a restore that replaces keeps what it
replaced, so the answer offers the restore that undoes it.
"""

from __future__ import annotations

import logging

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.fs.change.undo import MAX_ID, OP, Restored, UndoRefused, put_back, well_formed
from app.ui.access import checked_post
from app.ui.context import UiContext, acting_as_owner
from app.ui.render import page

log = logging.getLogger("loomfs.ui")
BACK = {"changes": ("/ui/changes", "Back to the changes"),
        "trash": ("/ui/trash", "Back to the trash")}


async def restore(request: Request) -> Response:
    checked = await checked_post(request)
    if isinstance(checked, Response):
        return checked
    session, ctx = checked.session, checked.ctx
    back = BACK.get(checked.fields.get("back", ""), BACK["changes"])
    (name, root), item_id = checked.root(), checked.fields.get("id", "")

    def answer(status: int, title: str, lines: list[str]) -> Response:
        return page("notice.html", status, title=title, lines=lines, back=back,
                    session=session)

    if root is None:
        return answer(404, "Not restored", [f"There is no root '{name}'.",
                                            "Nothing was changed."])
    if not well_formed(item_id):
        return answer(404, "Not restored", [f"'{item_id[:MAX_ID]}' is not an item of the "
                                            "trash.", "Nothing was changed."])
    def work() -> Restored:
        with acting_as_owner():  # the version it keeps records client=owner
            return put_back(root.unaudited(), item_id)

    try:
        # Off the event loop: renames, fsyncs and perhaps a wait for an agent's call on the
        # same file, which the server's MCP calls must not wait behind.
        done = await anyio.to_thread.run_sync(work)
    except UndoRefused as exc:
        _audit(ctx, "DENY", name, item_id, f"restore: {exc.message}")
        return answer(409, "Not restored", [exc.message])
    except OSError as exc:
        log.warning("root %s: item %s could not be restored (%s)", name, item_id, exc.strerror)
        _audit(ctx, "DENY", name, item_id, f"restore: {exc.strerror}")
        return answer(409, "Not restored", [f"The trash could not be used ({exc.strerror}).",
                                            "Nothing was restored."])
    _audit(ctx, "ALLOW", name, done.path, None)
    lines = [f"'{done.path}' in root '{name}' is back (item {item_id})."]
    if done.replaced is not None:
        lines.append(f"What it replaced is kept in the trash as version {done.replaced}: "
                     "restore that to undo this.")
    return answer(200, "Restored", lines)


def _audit(ctx: UiContext, decision: str, root: str, rel: str, rule: str | None) -> None:
    if ctx.owner_log is not None:
        ctx.owner_log(decision, root, rel, OP, rule)


ROUTES = [Route("/restore", restore, methods=["POST"])]
