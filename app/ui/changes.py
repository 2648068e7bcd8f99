"""The changes: what an agent's changes left in the roots' trash (the versions a write,
edit, patch, move or copy kept, and the deletes), newest first, each with a restore
button; and one item's diff against the file now at its path (docs/owner-page.md).

Every read is bounded. The listing reads the newest `PER_ROOT` records of each root's
trash (`app.fs.change.undo.newest`: one listing of the trash's names, then only those
records), merged by time; the page says "the newest N of M". A diff reads at most
`MAX_SIDE` bytes of each side (the kept version through `undo.read_item`, the current
file through the root), compares at most `MAX_SIDE_LINES` lines a side and shows at most
`MAX_LINES` lines of the diff. It says so when a side is past a bound, gone, binary
(not UTF-8, or holding a NUL byte) or not a regular file, instead of showing anything.

The current file is opened through the root (`Root.open_file` on `Root.unaudited()`):
the root's deny rules and its own files apply, in-root links are followed as for a
tool, and no audit line is written, since looking is not a change and the owner's page
writes only the owner's actions (a log line per view would flood the activity). The
work runs in a worker thread, never on the event loop that serves the agent's calls.
Contents are shown as text, escaped, inside `<pre>`, never as HTML.
"""

from __future__ import annotations

import difflib
import os
import stat as stat_mod
from dataclasses import dataclass
from urllib.parse import quote, urlencode

import anyio.to_thread
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.bounded import read_at_most
from app.errors import LoomError, NotFound
from app.fs.change import undo
from app.fs.change.inventory import Item
from app.fs.change.layout import TRASH, stamp_key
from app.security import ops
from app.security.resolve import Root
from app.ui.access import context, login_needed, owner
from app.ui.render import human, page
from app.ui.sessions import OwnerSession

PER_ROOT = 200  # of each root's trash, the newest records read for the listing
MAX_SIDE = 256 << 10  # bytes read of each side of a diff
# Lines compared of each side. difflib's time grows with the product of both sides and
# more on crafted shapes: two files of 20,000 lines, every other line changed, took 19 s,
# a 199-line cycle against its permutation 39 s; at 5,000 the same shapes take about 1 s.
MAX_SIDE_LINES = 5_000
MAX_LINES = 2000  # lines of a diff shown
VIEW_OP = "owner_view"  # what the root's checks are asked as (no line is written)


@dataclass(frozen=True)
class Change:
    root: str
    item: Item
    diffable: bool  # a version, or a deleted regular file: it has bytes to compare

    @property
    def op(self) -> str:
        if self.item.op != "-":
            return self.item.op
        return "delete" if self.item.kind == "delete" else "-"

    @property
    def when(self) -> str:
        return f"{self.item.when:%Y-%m-%d %H:%M:%S}"

    @property
    def size(self) -> str:
        return human(self.item.bytes, self.item.whole)

    @property
    def href(self) -> str:
        return f"/ui/changes/{quote(self.root, safe='')}?{urlencode({'id': self.item.id})}"

    @property
    def form_id(self) -> Markup:
        # The ID exactly as the trash has it: escaped, but not `reveal`ed (a revealed
        # ⟦U+202E⟧ would name no item); it is a hidden field, never shown.
        return escape(self.item.id)


def _regular(root: Root, item: Item) -> bool:
    """Whether the item in the trash is a regular file (one lstat, no link followed)."""
    if item.kind == "version":
        return True
    try:
        fd = root.open_subdir((TRASH, item.stamp, *item.inner[:-1]))
    except OSError:
        return False
    try:
        st = ops.lstat(fd, item.inner[-1])
    except OSError:
        return False
    finally:
        os.close(fd)
    return stat_mod.S_ISREG(st.st_mode)


@dataclass
class Listing:
    changes: list[Change]  # newest first
    read: int  # items read (at most PER_ROOT a root)
    total: int  # items in the trashes read
    notes: list[str]  # roots whose trash could not be read, and why


def gather(roots: dict[str, Root], only_root: str = "", only_op: str = "") -> Listing:
    changes: list[Change] = []
    total = read = 0
    notes: list[str] = []
    for name, root in roots.items():
        if only_root and name != only_root:
            continue
        try:
            got = undo.newest(root, PER_ROOT)
        except undo.UndoRefused as exc:
            notes.append(f"The trash of root '{name}' is not read: {exc.message}.")
            continue
        except OSError as exc:
            notes.append(f"The trash of root '{name}' cannot be read ({exc.strerror}).")
            continue
        total += got.total
        read += len(got.items)
        changes.extend(Change(name, i, _regular(root, i)) for i in got.items)
    changes.sort(key=lambda c: (stamp_key(c.item.stamp) or ("", 0), c.root), reverse=True)
    if only_op:
        changes = [c for c in changes if c.op == only_op]
    return Listing(changes, read, total, notes)


async def changes_page(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    roots = context(request).registry.current.roots
    filters = {k: v for k in ("root", "op") if (v := request.query_params.get(k, ""))}
    listing = await anyio.to_thread.run_sync(
        lambda: gather(roots, filters.get("root", ""), filters.get("op", "")))
    ops = sorted({"write", "edit", "patch", "move", "copy", "delete", "restore",
                  *(c.op for c in listing.changes)})
    return page("changes.html", session=session, view="changes", listing=listing,
                per_root=PER_ROOT, filters=filters, roots=sorted(roots), ops=ops)


# -- one item's diff -------------------------------------------------------------------


@dataclass
class Side:
    data: bytes | None  # None: nothing to compare (`why` says what)
    why: str = ""
    gone: bool = False  # no file at the path now: compared as empty


@dataclass
class Diff:
    lines: list[tuple[str, str]]  # (CSS class, text) of each line shown
    total: int  # lines of the whole diff
    notes: list[str]


def _current(root: Root, path: str) -> Side:
    """The file at `path` now, through the root's checks, at most `MAX_SIDE` bytes."""
    try:
        opened = root.unaudited().open_file(path, op=VIEW_OP)
    except NotFound:
        return Side(b"", gone=True)
    except LoomError as exc:
        return Side(None, f"The file at its path cannot be compared: {exc.message}.")
    with opened:
        data = read_at_most(opened.fd, MAX_SIDE)
    if data is None:
        return Side(None, f"The current file is too large to compare (more than "
                          f"{human(MAX_SIDE)}; at most that is read of a side).")
    return Side(data)


def _kept(root: Root, item: Item) -> Side:
    data = undo.read_item(root, item.id, MAX_SIDE)
    if data is not None:
        return Side(data)
    if item.bytes > MAX_SIDE:
        return Side(None, f"The kept version is too large to compare ({human(item.bytes)}; "
                          f"at most {human(MAX_SIDE)} is read of a side).")
    return Side(None, "The item is not a regular file (a folder or a link): no text to compare.")


def _text(side: Side, which: str) -> tuple[list[str] | None, str]:
    """The lines of a side, or None and why: binary (a NUL, or not UTF-8) or too many."""
    assert side.data is not None
    if b"\0" in side.data:
        return None, f"The {which} is binary (it holds a NUL byte): no text diff."
    try:
        text = side.data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"The {which} is binary (not UTF-8 text): no text diff."
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the line feed ending the last line starts no line
    if len(lines) > MAX_SIDE_LINES:
        return None, (f"The {which} is too large to compare ({len(lines)} lines; at most "
                      f"{MAX_SIDE_LINES} are compared of a side).")
    return lines, ""


def _kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "meta"
    return {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")


def diff(root: Root, item: Item) -> Diff:
    kept, now = _kept(root, item), _current(root, item.path)
    notes = ["The file is gone from its path: the diff is against nothing."] if now.gone else []
    unread = [s.why for s in (kept, now) if s.data is None]
    if unread:
        return Diff([], 0, notes + unread)
    old, why_old = _text(kept, "kept version")
    new, why_new = _text(now, "current file")
    if old is None or new is None:
        return Diff([], 0, notes + [w for w in (why_old, why_new) if w])
    was = f"{item.path} (kept {item.when:%Y-%m-%d %H:%M:%S} UTC)"
    lines = list(difflib.unified_diff(old, new, was, f"{item.path} (now)", lineterm=""))
    if not lines:
        notes.append("The kept version and the current file are the same.")
    if len(lines) > MAX_LINES:
        notes.append(f"The first {MAX_LINES} of {len(lines)} lines of the diff are shown.")
    return Diff([(_kind(x), x) for x in lines[:MAX_LINES]], len(lines), notes)


def _not_found(session: OwnerSession, why: str) -> Response:
    return page("notice.html", 404, title="No such change", session=session,
                lines=[why, "The changes view lists what the trash holds now."])


async def change_page(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    name = request.path_params["root"]
    root = context(request).registry.current.roots.get(name)
    if root is None:
        return _not_found(session, f"There is no root '{name}'.")
    item_id = request.query_params.get("id", "")
    if not undo.well_formed(item_id):
        return _not_found(session, "That is not the ID of an item of the trash.")

    def work() -> tuple[Item, Diff] | str:
        try:
            item = undo.find(root, item_id)
            return item, diff(root, item)
        except undo.UndoRefused as exc:
            return exc.message
        except OSError as exc:
            return f"the trash cannot be read ({exc.strerror})"

    done = await anyio.to_thread.run_sync(work)
    if isinstance(done, str):
        return _not_found(session, done[:1].upper() + done[1:] + ".")
    item, shown = done
    change = Change(name, item, True)
    return page("change.html", session=session, view="changes", change=change, diff=shown)


ROUTES = [
    Route("/changes", changes_page),
    Route("/changes/{root}", change_page),
]
