"""The trash per root: what it takes on disk against the root's caps, its newest items
each with a restore form, and emptying older than N days behind a confirmation.

One load costs, per root with a trash: one small file read for the serving process's
running account (`app.fs.change.ledger.known_split`): when it is current, it gives the
versions/deletes split and what the trash takes on disk (each item measured as it came,
with the folder's own files measured now), and nothing is walked; otherwise the split is
said to be unknown (counting it here would read every record, 10,000 of them in a full
trash) and the trash folder is walked once (every entry `lstat`ed, as `walk_tree` does;
at most `MAX_WALKED` entries, past which the page says "at least"). Then the listing of
its stamp folders and the newest `SHOWN` items read (their records and bounded walks:
`undo.newest`). Measured in docs/measured.md (`benchmarks/trash_page.py`).

Emptying is `app.fs.change.purge.empty_trash`, as `--empty-trash` runs it: the first POST
lists what would go (a dry run, nothing removed), the confirm form posts the same fields
with `confirm=yes`. It bumps the trash's generation, so another process's account lists
the trash again at its next change; the serving process's own account takes the removed
stamps out instead (`ledger.emptied`) and stays current. When it fails midway the page
bumps the generation too (some may be gone).
Days are a whole number from 0 to `MAX_DAYS`; anything else is 400, nothing removed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.fs.change.inventory import Item, dropped
from app.fs.change.layout import TRASH, bump_generation, stamp_key, stamp_time
from app.fs.change.ledger import Split, emptied, known_split, own_files
from app.fs.change.purge import Cut, Emptied, Tally, empty_trash, walk_tree
from app.fs.change.undo import UndoRefused, newest
from app.security import ops
from app.security.resolve import Root
from app.ui.access import checked_post, context, login_needed, owner, refused
from app.ui.context import UiContext
from app.ui.render import human, page
from app.ui.sessions import OwnerSession

SHOWN = 100  # newest items listed per root
MAX_WALKED = 100_000  # entries the measure of one trash looks at, at most
MAX_DAYS = 3650  # ten years: a larger number is refused rather than overflowing a date
_DAYS = re.compile(r"[0-9]{1,5}")  # ASCII digits only: `\d` takes any script's
NEAR = 0.9  # a gauge past this share of its cap is shown as near it (trimming is close)


@dataclass(frozen=True)
class Gauge:
    label: str
    value: int
    cap: int
    shown: str  # the value in words

    @property
    def high(self) -> int:
        return int(self.cap * NEAR)


@dataclass
class Usage:
    """One root's trash as one load saw it."""

    root: str
    has_trash: bool = False
    disk: int = 0  # the whole trash folder on disk: items, and the folder's own files
    whole: bool = True  # `disk` counts every entry (False: at least that, the walk cut)
    stamps: int = 0  # stamp folders (items)
    max_bytes: int = 0
    max_items: int = 0
    split: Split | None = None
    dropped: dict[str, object] = field(default_factory=dict)
    newest: list[Item] = field(default_factory=list)
    total: int = 0  # what `newest` is the newest of
    unreadable: str = ""  # why the trash could not be read, if it could not
    restorable: bool = True  # a restore writes: a root without `write` refuses it

    @property
    def gauges(self) -> list[Gauge]:
        least = "" if self.whole else "at least "
        return [Gauge("On disk", self.disk, self.max_bytes,
                      f"{least}{human(self.disk)} of {human(self.max_bytes)}"),
                Gauge("Items", self.stamps, self.max_items,
                      f"{self.stamps} of {self.max_items}")]

    @property
    def deletes_past_cap(self) -> bool:
        s = self.split
        return s is not None and (s.deletes_disk > self.max_bytes or s.deletes > self.max_items)


def _measure(trash_fd: int) -> tuple[int, bool]:
    """What the trash folder takes on disk, everything in it, each entry once, and whether
    the walk saw it all (it stops after `MAX_WALKED` entries: a deleted tree of a million
    files is then "at least"). An entry removed while it is walked (trimming, a restore)
    counts as what was seen of it."""
    tally = Tally(max_entries=MAX_WALKED)
    tally.add(os.fstat(trash_fd))
    with ops.scandir(trash_fd) as it:
        names = [e.name for e in it]
    for name in names:
        try:
            walk_tree(trash_fd, name, remove=False, into=tally)
        except Cut:
            return tally.disk, False
        except OSError:
            continue
    return tally.disk, True


def usage(root: Root) -> Usage:
    found = Usage(root.name, max_bytes=root.recovery.trash_max_bytes,
                  max_items=root.recovery.trash_max_items,
                  restorable="write" in root.permissions)
    try:
        trash_fd = root.open_subdir((TRASH,))
    except FileNotFoundError:
        return found
    except OSError as exc:
        found.unreadable = f"the trash is not a plain folder ({exc.strerror})"
        return found
    found.has_trash = True
    try:
        found.split = known_split(trash_fd)
        if found.split is None:
            found.disk, found.whole = _measure(trash_fd)
        else:  # what the account measured of each item as it came, and the folder's own
            s = found.split
            found.disk = s.versions_disk + s.deletes_disk + own_files(trash_fd)
        found.dropped = dropped(trash_fd)
        listed = newest(root, SHOWN)
        found.newest, found.total, found.stamps = listed.items, listed.total, listed.total
    except UndoRefused as exc:
        found.unreadable = exc.message
    except OSError as exc:
        found.unreadable = f"the trash could not be read ({exc.strerror})"
    finally:
        os.close(trash_fd)
    return found


def usages(ctx: UiContext) -> list[Usage]:
    return [usage(root) for root in ctx.registry.current.roots.values()]


async def trash_page(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    # Off the event loop: the walk of a large trash takes a few hundred milliseconds,
    # which the server's MCP calls must not wait for.
    found = await anyio.to_thread.run_sync(usages, context(request))
    return page("trash.html", session=session, view="trash", usages=found, shown=SHOWN,
                max_days=MAX_DAYS, max_walked=MAX_WALKED)


def parse_days(text: str | None) -> int | None:
    """A whole number of days from 0 to `MAX_DAYS`, or None."""
    if text is None or not _DAYS.fullmatch(text.strip()):
        return None
    days = int(text)
    return days if days <= MAX_DAYS else None


def _when(name: str) -> str:
    return f"{stamp_time(name):%Y-%m-%d %H:%M:%S} UTC"


def _refuse(ctx: UiContext, root: str, status: int, rule: str, why: str,
            session: OwnerSession) -> Response:
    if ctx.owner_log is not None:
        ctx.owner_log("DENY", root or "-", TRASH, "owner_empty_trash", rule)
    return refused(status, why, session)


async def empty(request: Request) -> Response:
    """The dry run (no `confirm=yes`: what would go, and the confirm form), or the emptying."""
    checked = await checked_post(request)
    if isinstance(checked, Response):
        return checked
    session, form, ctx = checked.session, checked.fields, checked.ctx
    name, root = checked.root()
    if root is None:
        return _refuse(ctx, "-", 404, "unknown_root", "there is no such root", session)
    days = parse_days(form.get("days"))
    if days is None:
        return _refuse(ctx, name, 400, "bad_days", f"the number of days must be a whole "
                       f"number from 0 to {MAX_DAYS}", session)
    confirmed = form.get("confirm") == "yes"
    work = functools.partial(empty_trash, root.real, timedelta(days=days),
                             dry_run=not confirmed, now=datetime.now(timezone.utc))
    try:
        done = await anyio.to_thread.run_sync(_accounted if confirmed else _plain, root, work)
    except FileNotFoundError:
        return _refuse(ctx, name, 404, "no_trash", f"root '{name}' has no trash", session)
    except OSError as exc:
        why = f"The trash of root '{name}' could not be emptied ({exc.strerror})."
        if not confirmed:
            return refused(409, why, session)
        _bump(root)  # some may be gone: the serving process's account must re-list
        if ctx.owner_log is not None:
            ctx.owner_log("DENY", name, TRASH, "owner_empty_trash", f"failed: {exc.strerror}")
        return page("notice.html", 409, title="Not done", session=session, lines=[
            why, "Some of the older items may have been removed before it stopped: the "
            "trash view shows what it holds now."], back=("/ui/trash", "Back to the trash"))
    return _answer(ctx, session, name, days, done, confirmed)


def _plain(root: Root, work: Callable[[], Emptied]) -> Emptied:
    return work()


def _accounted(root: Root, work: Callable[[], Emptied]) -> Emptied:
    """`work` (the emptying) with the serving process's account of the trash kept
    current (`ledger.emptied`): the next change lists nothing, the split stays known."""
    trash_fd = root.open_subdir((TRASH,))  # FileNotFoundError: no trash, as `work` says
    try:
        return emptied(trash_fd, work)
    finally:
        os.close(trash_fd)


def _bump(root: Root) -> None:
    with contextlib.suppress(OSError):
        trash_fd = root.open_subdir((TRASH,))
        try:
            bump_generation(trash_fd)
        finally:
            os.close(trash_fd)


def _answer(ctx: UiContext, session: OwnerSession, root: str, days: int, done: Emptied,
            confirmed: bool) -> Response:
    gone = sorted(done.removed, key=lambda n: stamp_key(n) or (n, 0))
    if confirmed and ctx.owner_log is not None:
        ctx.owner_log("ALLOW", root, TRASH, "owner_empty_trash", None)
    return page("trash_empty.html", session=session, view="trash", root=root, days=days,
                confirmed=confirmed, count=len(gone), bytes=done.bytes, kept=done.kept,
                oldest=_when(gone[0]) if gone else "", newest=_when(gone[-1]) if gone else "")


ROUTES = [
    Route("/trash", trash_page),
    Route("/trash/empty", empty, methods=["POST"]),
]
