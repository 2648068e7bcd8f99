"""The server's own files, denied at the floor by identity as well as by path.

The config file, the token file (`LOOMFS_TOKEN_FILE`) and every audit log this
process has written (each rotated backup, and the old files after a reload
moved the log or lowered its backups) must never be readable, listable or
changeable through a root, whatever name they are reached by: a hard link or a
rename keeps the inode, so the check is on `(st_dev, st_ino)` as well as on the
relative path (`DenyRules(protected=...)`).

One `Protected` lives as long as the registry and is shared by every root of
every snapshot. Readers never lock: each change publishes a new frozen set in
one attribute assignment. Config and token identities are replaced at each
load (an editor's save makes a new inode); audit identities only accumulate,
since old logs stay on disk.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

Identity = tuple[int, int]


def identity_of(path: str) -> Identity | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class Protected:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fixed: frozenset[Identity] = frozenset()  # config and token file, per load
        self._logs: frozenset[Identity] = frozenset()  # every audit file written, ever
        self._log_paths: dict[str, int] = {}  # audit path -> most backups it was given
        self.ids: frozenset[Identity] = frozenset()
        self.inodes: frozenset[int] = frozenset()  # the walk's one-lookup fast miss

    def _publish(self) -> None:
        ids = self._fixed | self._logs
        self.ids, self.inodes = ids, frozenset(i for _, i in ids)

    def set_fixed(self, paths: Iterable[str | None]) -> None:
        """The config and token files as they are now (the previous ones are dropped)."""
        found = frozenset(i for p in paths if p for i in [identity_of(p)] if i is not None)
        with self._lock:
            self._fixed = found
            self._publish()

    def add_log(self, ident: Identity) -> None:
        with self._lock:
            if ident not in self._logs:
                self._logs = self._logs | {ident}
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
        return st.st_ino in self.inodes and (st.st_dev, st.st_ino) in self.ids
