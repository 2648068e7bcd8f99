"""One change at a time per directory entry: the server's own calls on one file are serialised.

`expected_sha256` promises one winner per hash: of the calls that read a file
with the same hash, one changes it and the others are told it changed. A hash
check followed by a rename cannot keep that promise on its own (two calls may
both check before either renames), so every change of an entry (`write_file`,
`edit_file`, `move_file`, `delete`) holds the entry's keys from its first look
at the entry to its rename:

- the entry's name: (device and inode of the folder holding it, its name).
  A file being created has no identity yet; a replaced file gets a new one, and
  the name is what stays. Two requests reaching one folder by different paths
  (an in-root link to a folder) share the folder's identity;
- the file's identity (device, inode), so that two names of one file (hard
  links) share a key as well.

Name keys are taken first, then identity keys, each group in sorted order:
every call takes its keys in one global order (all name keys sort before all
identity keys), so two calls never wait for each other in a cycle, whatever
pairs of entries a move names. The identity keys are read once the name keys
are held: the server's own calls cannot change what a held name holds.

What this does not cover: programs other than this server, which take no keys.
Against them the hash is checked, and the file's identity again just before the
rename (`app.fs.change.write.unchanged_guard`), a window of microseconds; POSIX offers
no lock every writer must respect. One table serves the whole process (keys
are identities on disk, the same whatever root reaches them); an entry lives
while a call holds it or waits for it, so the table never outgrows the calls
in flight.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator

from app.security.handles import Parent

# ("0name", folder dev, folder ino, name) or ("1file", dev, ino): the prefixes sort
# every name key before every identity key.
Key = tuple[str, int, int, str] | tuple[str, int, int]
POLL_SECONDS = 0.05  # how often a waiting call looks at its cancel flag


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0  # holding or waiting


class LockTable:
    """Locks by key, made on first use and dropped when no call holds or awaits them."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._entries: dict[Key, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.contextmanager
    def hold(self, keys: Iterable[Key], wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold every key, taken in sorted order. `wait` runs while blocked (it may raise,
        e.g. when the call is cancelled: nothing stays held)."""
        taken: list[tuple[Key, _Entry]] = []
        locked: list[_Entry] = []
        try:
            for key in sorted(set(keys)):
                entry = self._use(key)
                taken.append((key, entry))
                _acquire(entry.lock, wait)
                locked.append(entry)
            yield
        finally:
            for entry in reversed(locked):
                entry.lock.release()
            with self._mutex:
                for key, entry in taken:
                    entry.users -= 1
                    if not entry.users:
                        del self._entries[key]

    def _use(self, key: Key) -> _Entry:
        with self._mutex:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            entry.users += 1
            return entry


def _acquire(lock: threading.Lock, wait: Callable[[], None] | None) -> None:
    if wait is None:
        lock.acquire()
        return
    while not lock.acquire(timeout=POLL_SECONDS):
        wait()


TABLE = LockTable()


def name_key(parent: Parent) -> Key:
    st = os.fstat(parent.fd)
    return ("0name", st.st_dev, st.st_ino, parent.name)


@contextlib.contextmanager
def changing(*entries: Parent, wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the keys of the entries about to change (each given by its parent's handle
    and name): their names, then the identities of those that exist."""
    with TABLE.hold([name_key(p) for p in entries], wait):
        found = [st for st in (p.lstat() for p in entries) if st is not None]
        with TABLE.hold([("1file", st.st_dev, st.st_ino) for st in found], wait):
            yield
