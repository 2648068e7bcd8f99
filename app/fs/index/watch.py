"""Which files changed since the trigram index read them, without a walk: inotify.

A build adds a watch on each folder it walks, through the walk's own directory handle
(`/proc/self/fd/N`: the folder the walk opened, not a path looked up again). The kernel
queues an event for every change below a watched folder at the moment of the change; a
search reads the queue (`drain`, without waiting) before it trusts the index, so a change
made before the search began, by the server or anyone else, is in `dirty` by then.

The watch answers for files only: a folder made, removed or moved (unless the walk never
enters it: `pruned`, the deny rules or ignore files), an ignore file changed,
a watch that could not be added (the user's `max_user_watches`), or the kernel's queue
overflowing (`Q_OVERFLOW`, 16,384 events by default between two searches) all make it
`broken`: searches then take the change scan (a walk with one `stat` per file) until a
build with a new watch has walked the tree again. Without inotify (not Linux, or
`inotify_simple` missing) there is no watch, and the same fallback holds.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable

try:
    from inotify_simple import INotify
    from inotify_simple import flags as F
except ImportError:  # pragma: no cover  # not Linux: no watch, the change scan
    INotify = None

from app.fs.filters.ignore import KINDS

Pruned = Callable[[str, str, bool], bool]

if INotify is not None:
    MASK = (F.CREATE | F.DELETE | F.MODIFY | F.CLOSE_WRITE | F.ATTRIB | F.MOVED_FROM
            | F.MOVED_TO | F.DELETE_SELF | F.MOVE_SELF)
    _FOLDER_GONE = F.DELETE_SELF | F.MOVE_SELF | F.UNMOUNT
    _ENTRY_MOVED = F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO


class Watch:
    """The watches of one build era of one root."""

    def __init__(self, pruned: Pruned | None = None) -> None:
        self.pruned = pruned  # (folder prefix, name, made?) -> the walk never enters it
        self.lock = threading.Lock()
        self.folders: dict[int, str] = {}  # watch descriptor -> walk path prefix
        self.dirty: dict[str, int] = {}  # path -> the drain that saw it changed
        self.seq = 0  # drains so far
        self.broken = INotify is None
        self.ino = None
        if INotify is not None:
            try:
                self.ino = INotify()
            except OSError:
                self.broken = True
            else:
                weakref.finalize(self, self.ino.close)  # closed with the watch, unwarned

    def add(self, dir_fd: int, prefix: str) -> None:
        """Watch the folder the walk has open at `dir_fd`."""
        if self.ino is None or self.broken:
            return
        try:
            wd = self.ino.add_watch(f"/proc/self/fd/{dir_fd}", MASK)
        except OSError:  # out of watches, or no /proc: the change scan
            self.broken = True
            return
        self.folders[wd] = prefix

    def drain(self) -> int:
        """Every queued event read into `dirty`; the drain's number."""
        with self.lock:
            self.seq += 1
            if self.ino is None or self.broken:
                return self.seq
            try:
                events = self.ino.read(timeout=0)
            except OSError:
                self.broken = True
                return self.seq
            for ev in events:
                self._event(ev.wd, ev.mask, ev.name)
            return self.seq

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & F.Q_OVERFLOW or mask & _FOLDER_GONE:
            self.broken = True
            return
        prefix = self.folders.get(wd)
        if prefix is None or self.broken:  # broken: nothing more to learn (nor to look up)
            return
        if mask & F.ISDIR and mask & _ENTRY_MOVED:
            made = bool(mask & (F.CREATE | F.MOVED_TO))
            if self.pruned is None or not self.pruned(prefix, name, made):
                self.broken = True  # a folder the walk enters came or went
            return
        if name in KINDS:
            self.broken = True  # what is ignored changed
            return
        if name:
            self.dirty[prefix + name] = self.seq

    def settled(self, upto: int) -> None:
        """A complete build began after drain `upto`: what it saw changed until then, it
        read afterwards."""
        with self.lock:
            self.dirty = {p: s for p, s in self.dirty.items() if s > upto}

    def close(self) -> None:
        with self.lock:
            self.broken = True
            if self.ino is not None:
                with contextlib.suppress(OSError):
                    self.ino.close()
                self.ino = None
