"""list_directory and stat_path.

A listing is the shared walk (breadth-first, sorted per directory, denied
names pruned and invisible, links listed as `symlink` and never entered),
cut into offset pages. Only the entries of the page are stat'ed. Paths are
relative to the root and keep the spelling of the request: listing `docs`
(an in-root link to `src`) shows `docs/...`, which resolves again.
"""

from __future__ import annotations

import datetime as _dt
import os
import stat as stat_mod
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from app.errors import NotARegularFile, NotFound, os_error
from app.fs.control import Control
from app.fs.hashing import sha256_fd
from app.fs.text import textio
from app.fs.text.paging import fit_page, page_note
from app.security import ops
from app.security.paths import MAX_DEPTH, join
from app.security.resolve import Root, check_regular
from app.security.walk import DIR, FILE, WalkEntry, Walker, kind_of_mode

# A recursive listing goes at most MAX_DEPTH deep (`max_depth` is refused beyond): as deep as
# anything the server makes.
DEFAULT_LIMIT = 100  # entries a page holds unless the call asks otherwise


def _last_part(data: dict[str, Any]) -> str:
    return str(data.get("path", "")).rpartition("/")[2]


def _count(data: dict[str, Any]) -> int:
    return len(data.get("entries", ()))


# Defaults say what a field left out of the structured content means (`app.tools.lean`).
class Entry(BaseModel):
    path: str
    name: str = Field(default_factory=_last_part, description="Left out: path's last part.")
    type: str = "file"  # file | dir | symlink | other
    size: int | None = None  # files only: a link's target is never looked at
    modified: str | None = Field(
        default=None, description="Left out of structured content: stat_path has it.")


class ListResult(BaseModel):
    # What the readable text shows of an entry, no more: its name is its path's last part;
    # `returned` is how many entries there are.
    LEAN_EXCLUDE: ClassVar[dict[str, Any]] = {
        "entries": {"__all__": {"name", "modified"}}, "returned": True}

    root: str
    path: str
    entries: list[Entry]
    offset: int = 0
    limit: int = DEFAULT_LIMIT  # the value used, after max_search_results clamped it
    returned: int = Field(default_factory=_count, description="Left out: len(entries).")
    has_more: bool = False
    next_offset: int | None = None
    skipped_links: int = 0
    note: str | None = None


class StatResult(BaseModel):
    path: str
    type: str
    size: int | None = None
    modified: str | None = None
    created: str | None = None
    mode: str
    is_text: bool = False
    sha256: str | None = None


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def relabel(start: tuple[str, ...], shown: str):
    """Map walk paths (the resolved start) back to the spelling of the request."""
    real = join(start)
    if real == shown:
        return lambda p: p
    cut = len(real) + 1 if real else 0
    prefix = f"{shown}/" if shown else ""
    return lambda p: prefix + p[cut:]


def entry_of(e: WalkEntry, path: str) -> dict[str, object]:
    size = modified = None
    try:
        st = ops.lstat(e.dir_fd, e.name)
        modified = iso(st.st_mtime)
        if e.kind == FILE:
            size = st.st_size
    except OSError:  # gone since the directory was read
        pass
    return {"path": path, "name": e.name, "type": e.kind, "size": size, "modified": modified}


def unreadable_note(walker: Walker) -> str | None:
    return unreadable_text(walker.unreadable_dirs)


def unreadable_text(n: int) -> str | None:
    """What an answer says of the `n` folders it could not open or list."""
    if not n:
        return None
    return f"{n} director{'y' if n == 1 else 'ies'} could not be read and were skipped"


def depth_note(folders: int, depth: int) -> str | None:
    """What a recursive listing left out below its depth: folders it listed, not entered."""
    if not folders:
        return None
    how = f"max_depth={depth + 1} lists deeper" if depth < MAX_DEPTH else "list them one by one"
    return f"{folders} folder(s) at depth {depth} not entered; {how}"


def list_directory(
    root: Root,
    path: str,
    *,
    recursive: bool,
    max_depth: int,
    offset: int,
    limit: int,
    cap: int,
    control: Control,
) -> ListResult:
    with root.open_dir(path, op="list_directory") as d:
        start, shown = d.parts, d.rel
    walker = Walker(root, start, max_depth if recursive else 1)
    name_of = relabel(start, shown)
    page: list[dict[str, object]] = []
    # Which entries of the page are folders at the last depth listed (never entered).
    unentered: list[bool] = []
    more = False
    for seen, e in enumerate(walker):
        if seen >= offset:
            if len(page) == limit:
                more = True
                break
            page.append(entry_of(e, name_of(e.path)))
            unentered.append(recursive and e.kind == DIR and e.depth == max_depth)
        if not seen & 1023:
            control.check()

    def make(n: int) -> ListResult:
        has_more = more or n < len(page)
        notes = [page_note(n, offset, n < len(page), cap), unreadable_note(walker),
                 depth_note(sum(unentered[:n]), max_depth)]
        return ListResult(
            # Entries stay dicts: pydantic validates them, cheaper than a model each.
            root=root.name, path=shown, entries=page[:n], offset=offset, limit=limit,  # type: ignore[arg-type]
            returned=n, has_more=has_more, next_offset=offset + n if has_more else None,
            skipped_links=walker.skipped_links, note="; ".join(x for x in notes if x) or None,
        )

    return fit_page(make, page, cap)[0]


def stat_path(root: Root, path: str) -> StatResult:
    """Metadata of one entry; an in-root link is followed, like every explicit access."""
    op = "stat_path"
    parts = root.authorize(path, perm="read", op=op)
    if not parts:
        with root.open_dir("", op=op) as d:
            return _stat_of(d.fd, "", os.fstat(d.fd), root)
    with root.open_parent(path, op=op, perm="read") as parent:
        rel = parent.rel
        st = parent.lstat()
        if st is None:
            raise NotFound(f"no such file or directory: '{rel}'")
        if stat_mod.S_ISREG(st.st_mode):
            try:
                fd = ops.open_file(parent.fd, parent.name)
            except OSError as exc:
                raise os_error(exc, rel) from None
            try:
                fst = os.fstat(fd)
                check_regular(fst)
                return _stat_of(fd, rel, fst, root)
            finally:
                os.close(fd)
        if not stat_mod.S_ISLNK(st.st_mode):
            return _stat_of(None, rel, st, root)
    # A link: follow it the way reads do (in-root only, deny on the target).
    try:
        with root.open_file(path, op=op) as f:
            return _stat_of(f.fd, f.rel, f.st, root)
    except NotARegularFile as exc:
        if "is a directory" not in exc.message:
            raise
        with root.open_dir(path, op=op) as d:
            return _stat_of(d.fd, d.rel, os.fstat(d.fd), root)


def _stat_of(fd: int | None, rel: str, st: os.stat_result, root: Root) -> StatResult:
    kind = kind_of_mode(st.st_mode)
    is_text = False
    sha = None
    if kind == FILE and fd is not None:
        head = os.pread(fd, textio.HEAD, 0)
        is_text = not textio.sniff(head).binary
        sha = sha256_fd(fd, st.st_size, root.max_read_bytes)
    return StatResult(
        path=rel,
        type=kind,
        size=st.st_size if kind == FILE else None,
        modified=iso(st.st_mtime),
        created=iso(getattr(st, "st_birthtime", None)),
        mode=f"{stat_mod.S_IMODE(st.st_mode):04o}",
        is_text=is_text,
        sha256=sha,
    )
