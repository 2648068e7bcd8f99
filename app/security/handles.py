"""What `Root` hands out: descriptors, never path strings.

`DirHandle` keeps a root's directory open for as long as anything refers to
it; `OpenedFile`, `OpenedDir` and `Parent` are one resolution's result (close
them, or use them as context managers). The open flags never follow a final
link and never block on a FIFO.
"""

from __future__ import annotations

import os
import stat as stat_mod
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.errors import NotARegularFile
from app.security import ops
from app.security.ops import DIR_FLAGS, FILE_FLAGS, HELD_FLAGS
from app.security.paths import join


class DirHandle:
    """A directory file descriptor that lives as long as anything refers to it: a root's
    folder, opened by `ops.open_root` with `HELD_FLAGS`."""

    def __init__(self, path: str) -> None:
        self.fd = ops.open_root(path, HELD_FLAGS)
        self._finalizer = weakref.finalize(self, os.close, self.fd)

    def close(self) -> None:
        self._finalizer()


class _Opened:
    fd: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(eq=False)
class OpenedFile(_Opened):
    fd: int
    rel: str  # the request, normalised
    target: str  # the in-root file it resolved to (differs through in-root links)
    st: os.stat_result


@dataclass(eq=False)
class OpenedDir(_Opened):
    fd: int
    rel: str
    parts: tuple[str, ...]  # the resolved in-root directory, by component

    @property
    def target(self) -> str:
        return join(self.parts)


@dataclass(eq=False)
class Parent(_Opened):
    """The handle of the directory holding `name`; `name` itself is not followed."""

    fd: int
    name: str
    rel: str
    parent_parts: tuple[str, ...]
    target_parts: tuple[str, ...] = field(default=())

    @property
    def target(self) -> str:
        return join(self.target_parts)

    # The operations on the entry itself (app.security.ops: one name, no link followed).

    def lstat(self) -> os.stat_result | None:
        return ops.lstat_or_none(self.fd, self.name)

    def open_file(self) -> int:
        return ops.open_file(self.fd, self.name)

    def open_dir(self) -> int:
        return ops.open_dir(self.fd, self.name)

    def readlink(self) -> str:
        return ops.readlink(self.fd, self.name)

    def mkdir(self, mode: int = 0o777) -> None:
        ops.mkdir(self.fd, self.name, mode)

    def rename_over(self, dst: Parent) -> None:
        """This entry renamed to `dst`'s, replacing what was there."""
        ops.rename(self.fd, self.name, dst.fd, dst.name)

    def rename_noreplace(self, dst: Parent) -> None:
        """This entry renamed to `dst`'s; `FileExistsError` if that name is taken."""
        ops.rename_noreplace(self.fd, self.name, dst.fd, dst.name)


def open_below(top: int, parts: Sequence[str]) -> int:
    """The folder `parts` below the folder `top` (a new descriptor; `top` stays open),
    opened one name at a time with no link followed at any step."""
    fd = os.open(parts[0] if parts else ".", DIR_FLAGS, dir_fd=top)
    try:
        for name in parts[1:]:
            nxt = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


class Descent:
    """Handles down one path from a folder `top`, each opened from the handle above it with
    no link followed: going down a level opens one folder, going up closes one, and `at`
    opens only what lies below the part of the path it shares with the current one, so a
    walk in depth-first order opens every folder once, whatever the depth (never again from
    the top). `opened` counts the folders it opened. `top` stays the caller's to close."""

    def __init__(self, top: int) -> None:
        self.fds = [top]
        self.parts: list[str] = []
        self.opened = 0

    @property
    def fd(self) -> int:
        return self.fds[-1]

    @property
    def depth(self) -> int:
        return len(self.parts)

    def enter(self, name: str) -> int:
        fd = ops.open_dir(self.fds[-1], name)
        self.opened += 1
        self.fds.append(fd)
        self.parts.append(name)
        return fd

    def leave(self) -> None:
        self.parts.pop()
        os.close(self.fds.pop())

    def at(self, parts: Sequence[str]) -> int:
        """The folder `parts` below `top`."""
        keep, most = 0, min(len(parts), len(self.parts))
        while keep < most and parts[keep] == self.parts[keep]:
            keep += 1
        while len(self.parts) > keep:
            self.leave()
        for name in parts[keep:]:
            self.enter(name)
        return self.fds[-1]

    def close(self) -> None:
        while self.parts:
            self.leave()

    def __enter__(self) -> Descent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_regular(st: os.stat_result) -> None:
    if not stat_mod.S_ISREG(st.st_mode):
        raise NotARegularFile()


__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "Descent",
    "DirHandle",
    "OpenedDir",
    "OpenedFile",
    "Parent",
    "check_regular",
    "open_below",
]

