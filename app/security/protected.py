"""The server's own files, denied at the floor by identity as well as by path.

The config file, the token file and every audit log this process has written
(each rotated backup, and the old files after a reload moved the log or
lowered its backups) must never be readable, listable or changeable through a
root, whatever name they are reached by: a hard link or a rename keeps the
inode, so the check is on `(st_dev, st_ino)` as well as on the relative path
(`DenyRules(protected=...)`).

An identity means the server's file only while that file exists: once its
last link is gone, the file system hands the inode number to the next file
created (ext4 does so at once; tmpfs and btrfs count up), and an ordinary new file would be
refused as the server's own. So each protected file is *held*: an open
descriptor (`O_PATH` where the system has it) keeps its inode allocated, and
the number cannot be handed out while it is held. `sweep` lets go of a file
whose last link is gone (`st_nlink` 0 on the held descriptor): first out of
the published set, then the descriptor is closed, so a reused number is never
in the set. It runs at every load, at every audit log opening (rotation) and,
through `sweep_due`, at most every `SWEEP_SECONDS` on the way to a call.

Identities only accumulate while their files live: a rotation (an editor's
save of the config, a new token file renamed over the old, an audit rollover)
adds the new file and keeps the old one for as long as it has a link anywhere,
so a hard link to an old config or token inside a root stays refused.

One `Protected` lives as long as the registry and is shared by every root of
every snapshot. Readers never lock: each change publishes new frozen sets in
attribute assignments. Not protected against: a file the server never opened
(a config saved but not yet loaded is protected by its path only).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
import weakref
from collections.abc import Iterable
from typing import NamedTuple

Identity = tuple[int, int]


class Known(NamedTuple):
    """The identities held, and their inode numbers (the walk's one-lookup fast miss)."""

    ids: frozenset[Identity]
    inodes: frozenset[int]

    def holds(self, dev: int, ino: int) -> bool:
        """Whether (dev, ino) is one of the files held: the one identity test (a set miss
        on the inode number first)."""
        return ino in self.inodes and (dev, ino) in self.ids

SWEEP_SECONDS = 30.0
# Open enough to hold: O_PATH needs no permission and is never a read; elsewhere a
# non-blocking read-only open (a FIFO must not stall the load).
_HOLD_FLAGS = getattr(os, "O_PATH", os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)) | getattr(
    os, "O_CLOEXEC", 0
)


# Why a path can name no file to hold: nothing there, or nothing any root can reach.
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP,
                        errno.ENAMETOOLONG})


def _close_all(held: dict[Identity, int]) -> None:
    for fd in held.values():
        os.close(fd)
    held.clear()


def _unlinked(fd: int) -> bool:
    try:
        return os.fstat(fd).st_nlink == 0
    except OSError:
        return False  # cannot look: keep holding it (it still means the server's file)


class Protected:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Identity, int] = {}  # identity -> descriptor keeping its inode
        self._log_paths: dict[str, int] = {}  # audit path -> most backups it was given
        self._swept_at = time.monotonic()
        # One immutable pair, published by one assignment: a reader that takes `known` once
        # never sees new ids beside old inode numbers (a fast miss on a file just protected).
        self.known: Known = Known(frozenset(), frozenset())
        self._finalizer = weakref.finalize(self, _close_all, self._held)

    def __len__(self) -> int:
        return len(self._held)

    def _publish(self) -> None:
        ids = frozenset(self._held)
        self.known = Known(ids, frozenset(i for _, i in ids))

    @property
    def ids(self) -> frozenset[Identity]:
        return self.known.ids

    @property
    def inodes(self) -> frozenset[int]:
        return self.known.inodes

    def _adopt(self, fd: int) -> Identity | None:
        """Hold the file open on `fd` (taking the descriptor) if it is a regular file."""
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        ident = (st.st_dev, st.st_ino)
        with self._lock:
            if stat.S_ISREG(st.st_mode) and ident not in self._held:
                self._held[ident] = fd
                self._publish()
                return ident
        os.close(fd)
        return ident if stat.S_ISREG(st.st_mode) else None

    def hold_fd(self, fd: int) -> Identity | None:
        """Protect the file open on `fd` (the caller keeps `fd`; a duplicate is held)."""
        return self._adopt(os.dup(fd))

    def hold_paths(self, paths: Iterable[str | None]) -> None:
        """Protect the files at these paths as they are now (a missing one: nothing).

        Raises OSError when a file cannot be opened for another reason than its absence
        (no descriptor left): it cannot be held, and the caller refuses rather than let
        it stay protected by its path only."""
        for path in paths:
            if not path:
                continue
            try:
                fd = os.open(path, _HOLD_FLAGS)
            except OSError as exc:
                if exc.errno in _NOT_THERE:
                    continue
                raise
            self._adopt(fd)

    def sweep(self) -> int:
        """Let go of every held file whose last link is gone; how many were let go."""
        with self._lock:
            self._swept_at = time.monotonic()
            gone = [ident for ident, fd in self._held.items() if _unlinked(fd)]
            fds = [self._held.pop(ident) for ident in gone]
            if fds:
                self._publish()
        for fd in fds:  # after the publish: no reader sees a number that can be reused
            os.close(fd)
        return len(fds)

    def sweep_due(self) -> None:
        if time.monotonic() - self._swept_at >= SWEEP_SECONDS:
            self.sweep()

    def close(self) -> None:
        with self._lock:
            self._finalizer()
            self._publish()

    def note_log_path(self, path: str, backups: int) -> None:
        with self._lock:
            self._log_paths[path] = max(backups, self._log_paths.get(path, 0))

    def log_paths(self) -> tuple[str, ...]:
        """Every audit file name this process has used, with every backup suffix."""
        with self._lock:
            items = list(self._log_paths.items())
        return tuple(
            name for path, n in items for name in (path, *(f"{path}.{i}" for i in range(1, n + 1)))
        )

    def hit(self, st: os.stat_result) -> bool:
        return self.known.holds(st.st_dev, st.st_ino)
