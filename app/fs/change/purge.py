"""Emptying a root's trash: for the person who runs the server, never for the agent.

`delete` moves entries to `<root>/.mcp-trash/<UTC stamp>[-N]/` and nothing
ever erases them, so the trash grows until someone empties it. No tool can:
the trash is on the floor deny list. This is the command line's
`--empty-trash ROOT --older-than DAYS` (add `--dry-run` to only list), run by
a person on the host: it removes the stamp directories older than DAYS.

It opens the root, then `.mcp-trash` with no link followed, and removes each
old stamp directory through directory handles, never following a link (a
link in the trash is removed as a link, its target untouched), one folder
open at a time and with no recursion, so a tree of any depth can be emptied.
Entries whose names are not stamps are left alone.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from app.fs.change.layout import RECORD, STAMP, TRASH, bump_generation, on_disk
from app.security import ops


@dataclass
class Emptied:
    removed: list[str] = field(default_factory=list)  # stamp directories, oldest first
    kept: int = 0  # stamp directories younger than the cutoff
    bytes: int = 0  # sizes of the regular files removed (or that would be)


class Cut(Exception):
    """A measuring walk met more entries than its tally's `max_entries`."""


@dataclass
class Tally:
    """What a walk met: the regular files' sizes, and what every entry takes on disk;
    with `max_entries`, `Cut` past that many entries (for a measure that must stay
    bounded; never on a walk that removes, which would stop halfway)."""

    bytes: int = 0
    disk: int = 0
    entries: int = 0
    max_entries: int | None = None

    def add(self, st: os.stat_result) -> None:
        if self.max_entries is not None and self.entries >= self.max_entries:
            raise Cut(f"more than {self.max_entries} entries")
        self.entries += 1
        self.disk += on_disk(st)
        if stat.S_ISREG(st.st_mode):
            self.bytes += st.st_size


Ident = tuple[int, int]


def _ident(st: os.stat_result) -> Ident:
    return (st.st_dev, st.st_ino)


class _Frame:
    """A folder being emptied: its identity, its name in its parent, subfolders left."""

    __slots__ = ("ident", "name", "subdirs")

    def __init__(self, ident: Ident, name: str, subdirs: list[str]) -> None:
        self.ident, self.name, self.subdirs = ident, name, subdirs


def walk_tree(dir_fd: int, name: str, remove: bool, into: Tally | None = None) -> Tally:
    """Sizes of the regular files under `name` and what it all takes on disk (removing
    everything when `remove`), with no recursion and one folder open at a time, whatever
    the depth; added to `into` when given (several walks in one tally).

    Depth-first: each folder's files are handled when it is opened, then its subfolders
    one by one; a folder done is left through `..`, whose device and inode must be those
    of the folder the walk came from (a folder moved meanwhile stops the walk with an
    error rather than leading it elsewhere). Links are removed as links, never followed.
    """
    st = ops.lstat(dir_fd, name)
    total = Tally() if into is None else into
    total.add(st)
    if not stat.S_ISDIR(st.st_mode):
        if remove:
            ops.unlink(dir_fd, name)
        return total
    fd = ops.open_dir(dir_fd, name)
    try:
        stack = [_Frame(_ident(os.fstat(dir_fd)), "", [])]  # the folder holding `name`
        sub = name
        while stack:
            if sub:  # entered: `fd` is `sub`, a child of stack[-1]
                subdirs = _files_of(fd, remove, total)
                stack.append(_Frame(_ident(os.fstat(fd)), sub, subdirs))
            frame = stack[-1]
            if frame.subdirs:
                sub = frame.subdirs.pop()
                child = ops.open_dir(fd, sub)
                os.close(fd)
                fd = child
                continue
            sub = ""
            stack.pop()
            if not stack:
                break
            up = ops.open_up(fd)
            os.close(fd)
            fd = up
            if _ident(os.fstat(fd)) != stack[-1].ident:
                raise OSError(errno.ESTALE, "a folder in the trash moved while it was emptied")
            if remove:
                ops.rmdir(fd, frame.name)
    finally:
        os.close(fd)
    return total


def _files_of(fd: int, remove: bool, total: Tally) -> list[str]:
    """The entries directly in `fd` added to `total` (every non-folder removed when
    `remove`); the names of its subfolders."""
    subdirs: list[str] = []
    with ops.scandir(fd) as it:
        entries = list(it)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        total.add(st)
        if stat.S_ISDIR(st.st_mode):
            subdirs.append(entry.name)
        elif remove:
            ops.unlink(fd, entry.name)
    return subdirs


def _record_size(trash_fd: int, name: str) -> int:
    try:
        fd = ops.open_dir(trash_fd, name)
    except OSError:
        return 0
    try:
        st = ops.lstat(fd, RECORD)
    except OSError:
        return 0
    finally:
        os.close(fd)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def empty_trash(root_path: str, older_than: timedelta, *, dry_run: bool = False,
                now: datetime | None = None) -> Emptied:
    """Remove the trash's stamp directories older than `older_than` (FileNotFoundError
    when the root has no trash; NotADirectoryError/OSError when it is not a plain one)."""
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    out = Emptied()
    root_fd = ops.open_root(root_path)
    try:
        trash_fd = ops.open_dir(root_fd, TRASH)
    finally:
        os.close(root_fd)
    try:
        with ops.scandir(trash_fd) as it:
            names = sorted(e.name for e in it)
        for name in names:
            m = STAMP.match(name)
            if not m:
                continue
            when = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
            if when >= cutoff:
                out.kept += 1
                continue
            record = _record_size(trash_fd, name)  # the trash's own note, not a delete's bytes
            out.bytes += walk_tree(trash_fd, name, remove=not dry_run).bytes - record
            out.removed.append(name)
        if out.removed and not dry_run:
            bump_generation(trash_fd)  # a server's account of this trash lists it again
    finally:
        os.close(trash_fd)
    return out
