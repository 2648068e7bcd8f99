"""Emptying a root's trash: for the person who runs the server, never for the agent.

`delete` moves entries to `<root>/.mcp-trash/<UTC stamp>[-N]/` and nothing
ever erases them, so the trash grows until someone empties it. No tool can:
the trash is on the floor deny list. This is the command line's
`--empty-trash ROOT --older-than DAYS` (add `--dry-run` to only list), run by
a person on the host: it removes the stamp directories older than DAYS.

It opens the root, then `.mcp-trash` with no link followed, and removes each
old stamp directory through directory handles, never following a link (a
link in the trash is removed as a link, its target untouched). Entries whose
names are not stamps are left alone.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from app.fs.trash import TRASH

_STAMP = re.compile(r"^(\d{8}T\d{6}Z)(?:-\d+)?$")
_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass
class Emptied:
    removed: list[str] = field(default_factory=list)  # stamp directories, oldest first
    kept: int = 0  # stamp directories younger than the cutoff
    bytes: int = 0  # sizes of the regular files removed (or that would be)


def _size(dir_fd: int, name: str) -> int:
    total = 0
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISREG(st.st_mode):
        return st.st_size
    if not stat.S_ISDIR(st.st_mode):
        return 0
    fd = os.open(name, _FLAGS, dir_fd=dir_fd)
    try:
        for entry in os.scandir(fd):
            total += _size(fd, entry.name)
    finally:
        os.close(fd)
    return total


def _remove(dir_fd: int, name: str) -> None:
    """Remove `name` under `dir_fd`; a directory's content first, by handle, no link followed."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    fd = os.open(name, _FLAGS, dir_fd=dir_fd)
    try:
        for entry in list(os.scandir(fd)):
            _remove(fd, entry.name)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def empty_trash(root_path: str, older_than: timedelta, *, dry_run: bool = False,
                now: datetime | None = None) -> Emptied:
    """Remove the trash's stamp directories older than `older_than` (FileNotFoundError
    when the root has no trash; NotADirectoryError/OSError when it is not a plain one)."""
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    out = Emptied()
    root_fd = os.open(root_path, _FLAGS)
    try:
        trash_fd = os.open(TRASH, _FLAGS, dir_fd=root_fd)
    finally:
        os.close(root_fd)
    try:
        for name in sorted(e.name for e in os.scandir(trash_fd)):
            m = _STAMP.match(name)
            if not m:
                continue
            when = datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
            if when >= cutoff:
                out.kept += 1
                continue
            out.bytes += _size(trash_fd, name)
            if not dry_run:
                _remove(trash_fd, name)
            out.removed.append(name)
    finally:
        os.close(trash_fd)
    return out
