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

What no event shows: a write through a shared memory map. The kernel updates a file's
times at the first write fault on a page that was clean (`page_mkwrite`); a page already
dirty takes further writes with no change to the size or the times until writeback has
cleaned it, and inotify reports the mapping only at its open and when it goes (`IN_CLOSE_*`
comes when the last reference to the opened file is dropped: a mapping holds one past its
descriptor's `close`). So the watch also counts opens: `held` are the files with more
`IN_OPEN` than closes seen (the server's own reads open and close, and cancel out; one
under way when a search drains makes it read that file, no more), which every search
reads. A file opened before the watch began shows no open: `RACY_WINDOW_NS` covers it
(`access.open_listed`: a file read within that window of its last change is stored as
stale, read by every search, until a build reads it again past the window, as git treats a
racily clean entry). A thread reads the queue as events come (`_pump`), so that the opens
of the server's own reads and walks do not overflow it between two searches.
"""

from __future__ import annotations

import contextlib
import select
import threading
import weakref
from collections.abc import Callable

try:
    from inotify_simple import INotify
    from inotify_simple import flags as F
except ImportError:  # pragma: no cover  # not Linux: no watch, the change scan
    INotify = None

from app import hostfiles
from app.fs.filters.ignore import KINDS

Pruned = Callable[[str, str, bool], bool]

if INotify is not None:
    MASK = (F.CREATE | F.DELETE | F.MODIFY | F.CLOSE_WRITE | F.ATTRIB | F.MOVED_FROM
            | F.MOVED_TO | F.DELETE_SELF | F.MOVE_SELF | F.OPEN | F.CLOSE_NOWRITE)
    _FOLDER_GONE = F.DELETE_SELF | F.MOVE_SELF | F.UNMOUNT
    _ENTRY_MOVED = F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO
    _CLOSED = F.CLOSE_WRITE | F.CLOSE_NOWRITE
    _CHANGED = F.CREATE | F.DELETE | F.MODIFY | F.CLOSE_WRITE | F.ATTRIB | _ENTRY_MOVED

MOST_HELD = 4096  # files held open at once that the watch follows; past it, it is broken
PUMP_WAIT = 1.0  # seconds the queue's thread waits for events before it looks again
PUMP_PAUSE = 0.005  # and after each read: the events of a burst read together
MARGIN_NS = 10_000_000_000


def dirty_window_ns(vm: str = "/proc/sys/vm") -> int:
    """How long a page written through a map may stay dirty (so its file's times do not
    move on a further write): the kernel's dirty expiry plus its writeback interval, read
    at start (defaults 30 s and 5 s when unreadable, not a positive number, or periodic
    writeback is off), plus MARGIN_NS for writeback that runs late."""
    total = 0
    for name, default in (("dirty_expire_centisecs", 3000), ("dirty_writeback_centisecs", 500)):
        try:
            cs = int(hostfiles.read_small(f"{vm}/{name}", 32).decode("ascii").strip())
        except (OSError, ValueError):
            cs = default
        total += cs if cs > 0 else default
    return total * 10_000_000 + MARGIN_NS


RACY_WINDOW_NS = dirty_window_ns()  # 45 s with the kernel's defaults


class Watch:
    """The watches of one build era of one root."""

    def __init__(self, pruned: Pruned | None = None, before: Watch | None = None) -> None:
        self.pruned = pruned  # (folder prefix, name, made?) -> the walk never enters it
        self.lock = threading.Lock()
        self.folders: dict[int, str] = {}  # watch descriptor -> walk path prefix
        self.dirty: dict[str, int] = {}  # path -> the drain that saw it changed
        self.opens: dict[str, int] = {}  # path -> opens seen less closes seen, when above 0
        self.moving: dict[int, int] = {}  # a move's cookie -> the opens of the name it left
        if before is not None:  # the watch this one replaces: its files still held, held
            with before.lock:  # (one whose close it missed stays so until a close is seen)
                if len(before.opens) <= MOST_HELD:
                    self.opens.update(before.opens)
        self.seq = 0  # drains so far
        self.stop = threading.Event()  # the queue's thread ends
        self.broken = INotify is None
        self.ino = None
        if INotify is not None:
            try:
                self.ino = INotify()
            except OSError:
                self.broken = True
            else:
                weakref.finalize(self, _end, self.ino, self.stop)  # with it, unwarned
                threading.Thread(target=_pump, args=(weakref.ref(self), self.ino.fileno(),
                                 self.stop), name="loomfs-watch", daemon=True).start()

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
        """Every queued event read into `dirty` and `opens`; the drain's number."""
        with self.lock:
            self.seq += 1
            self._read(self.seq)
            return self.seq

    def pump(self) -> None:
        """The events queued so far read, as the next drain will count them."""
        with self.lock:
            self._read(self.seq + 1)

    def held(self) -> set[str]:
        """The files some process has open (opens seen and not yet their closes)."""
        with self.lock:
            return set(self.opens)

    def _read(self, seq: int) -> None:
        if self.ino is None or self.broken:
            return
        try:
            events = self.ino.read(timeout=0)
        except OSError:
            self.broken = True
            return
        for ev in events:
            self._event(ev.wd, ev.mask, ev.name, ev.cookie, seq)

    def _event(self, wd: int, mask: int, name: str, cookie: int, seq: int) -> None:
        if mask & F.Q_OVERFLOW or mask & _FOLDER_GONE:
            self.broken = True
            return
        prefix = self.folders.get(wd)
        if prefix is None or self.broken:  # broken: nothing more to learn (nor to look up)
            return
        if mask & F.ISDIR and not mask & _ENTRY_MOVED:
            return  # a folder opened, closed, its mode changed: the walk's to see
        if mask & F.ISDIR:
            made = bool(mask & (F.CREATE | F.MOVED_TO))
            if self.pruned is None or not self.pruned(prefix, name, made):
                self.broken = True  # a folder the walk enters came or went
            return
        if not name:
            return
        if mask & (F.OPEN | _CLOSED | F.MOVED_FROM | F.MOVED_TO):
            self._held(prefix + name, mask, cookie)
        if not mask & _CHANGED:
            return
        if name in KINDS:
            self.broken = True  # what is ignored changed
            return
        self.dirty[prefix + name] = seq

    def _held(self, path: str, mask: int, cookie: int) -> None:
        """Opens less closes, per file; a file moved takes its count to its new name."""
        n = self.opens.pop(path, 0)
        if mask & F.MOVED_FROM:
            if n:
                self.moving[cookie] = n
            n = 0
        elif mask & F.MOVED_TO:
            n = self.moving.pop(cookie, 0)
        n += bool(mask & F.OPEN) - bool(mask & _CLOSED)  # a close before the watch: none
        if n > 0:
            self.opens[path] = n
        if len(self.opens) + len(self.moving) > MOST_HELD:
            self.broken = True

    def settled(self, upto: int) -> None:
        """A complete build began after drain `upto`: what it saw changed until then, it
        read afterwards."""
        with self.lock:
            self.dirty = {p: s for p, s in self.dirty.items() if s > upto}

    def close(self) -> None:
        with self.lock:
            self.broken = True
            if self.ino is not None:
                _end(self.ino, self.stop)
                self.ino = None


def _end(ino: INotify, stop: threading.Event) -> None:
    stop.set()  # first: the thread looks no more at a descriptor about to be closed
    with contextlib.suppress(OSError):
        ino.close()


def _pump(ref: weakref.ref[Watch], fd: int, stop: threading.Event) -> None:
    """The queue read as events come, while the watch lasts (it holds no reference to it
    between two reads): the kernel's queue holds 16,384 events, which the opens and
    closes of one build or one large search would pass."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    while not stop.is_set():
        try:
            poll.poll(PUMP_WAIT * 1000)
        except OSError:
            return
        if stop.is_set():
            return
        w = ref()
        if w is None:
            return
        w.pump()
        del w
        stop.wait(PUMP_PAUSE)
