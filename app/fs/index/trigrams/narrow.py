"""The trigram index at work in a search: the files it proposes, the rest read as before.

`narrowing` gives `search_text` what narrows its files (`app.fs.search.needs.Narrow`, which
`app.corpus.trigram` builds on it): the planner's query
(`grams.plan`) asked of the index, then the search's own walk (its start folder, ignore
files, `exclude` and `file_glob` applied as in a scan) filtered file by file. A file is left
out only when the index vouches for it: an entry of a generation the query may trust, the
same signature on disk as when it was indexed (one `stat`), and none of the query's
trigrams. Every other file is searched as in a scan: not indexed yet (a build under way),
changed since, too large to index, held open by a process (`Watch.held`: written through a
map, it changes with no sign on disk), or read within the racy window of its last change
(stored stale, `watch.RACY_WINDOW_NS`). Every file kept is read and matched by the searcher
itself: the index proposes, the bytes decide. A binary file (a NUL in its first 4 KiB) is
left out without being read; a scan would read it and count it in `skipped_binary`.

`Keeper` runs the builds (`trigram_build.Build`), one at a time, in a background thread: a
search starts one when none is running, and never waits for it. `stop()` cancels one
between two files; what it committed stays, and the next build resumes from there.
`close()` does so when the server stops, and starts none again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

import apsw

from app.fs.filters.ignore import KINDS
from app.fs.index.access import STALE, stale
from app.fs.index.storage import Unavailable
from app.fs.index.trigrams import direct, trigram_build
from app.fs.index.trigrams.entry import (
    GEN_AT,
    ID_AT,
    ID_MASK,
    KEY_AT,
    KEY_MASK,
    STATE_MASK,
    UNMATCHED,
    Entry,
    key,
    racy,
)
from app.fs.index.trigrams.grams import plan
from app.fs.index.trigrams.trigram import BINARY, WHOLE, TrigramIndex
from app.fs.index.trigrams.trigram_build import Build, BuildState
from app.fs.index.trigrams.watch import RACY_WINDOW_NS, Watch
from app.fs.reading.listing import unreadable_text
from app.security import ops
from app.security.admission import Folder
from app.security.resolve import Root

log = logging.getLogger("loomfs.index")

# Seconds the index is trusted without a walk after a walk looked at every file: past them a
# search walks (a `stat` per file) and starts a build that walks again. What no watch reports
# (a file written through a hard link made from outside the root since that walk, a network
# file system written by another machine) is so never older than this (and one build's walk).
REWALK = 60.0

Answer = tuple[Iterator[Folder], Callable[[], str | None]]  # the files to read, and a note


class Scope(NamedTuple):
    """What a call reads besides its pattern."""

    start: tuple[str, ...]  # its start folder
    keep: Callable[[str, str], bool]  # its file_glob (path under start, name)
    plain: bool  # ignore files honoured and no exclude: the files the build walks


# (strings one of which every match holds, folded?, the walk's folders, the call's scope)
# -> the files to read and the note to give once they are used up; None: a plain scan.
Narrowing = Callable[[tuple[str, ...], bool, Iterator[Folder], Scope], Answer | None]


class Keeper:
    """The background builds of one index."""

    def __init__(self, idx: TrigramIndex, now: Callable[[], int] = time.time_ns) -> None:
        self.idx, self.now = idx, now  # the clock racy files are judged by
        self.thread: threading.Thread | None = None
        self.stop_flag = threading.Event()
        self.last = BuildState()
        self.lock = threading.Lock()
        self.closed = False  # the server is stopping: no build starts again
        self.began = 0  # when the last build started, by `now`

    def kick(self, root: Root, identity: str) -> None:
        """Start a build unless one is running."""
        with self.lock:
            if self.closed or (self.thread is not None and self.thread.is_alive()):
                return
            self.stop_flag = threading.Event()
            self.began = self.now()
            build = Build(self.idx, root, identity, self.stop_flag, self.now)
            self.thread = threading.Thread(target=self._run, args=(build,),
                                           name="loomfs-trigram", daemon=True)
            self.thread.start()

    def _run(self, build: Build) -> None:
        try:
            self.last = build.run()
        except Exception as exc:  # the index is an accelerator: searches scan
            build.state.error = f"{type(exc).__name__}: {exc}"
            self.last = build.state
            log.warning("trigram index build stopped: %s", build.state.error)

    def stop(self) -> None:
        self.stop_flag.set()
        if self.thread is not None:
            self.thread.join()

    def close(self) -> None:
        """For good (the server stops): the build under way stopped between two files,
        what it committed kept; the index's reading connection and its watch closed."""
        with self.lock:
            self.closed = True
        self.stop()
        self.idx.close()
        if self.idx.watch is not None:
            self.idx.watch.close()

    def progress(self) -> str | None:
        """What a note says of the build under way, or None when none runs."""
        if self.thread is None or not self.thread.is_alive():
            return None
        return f"a build is under way: the index holds {len(self.idx.view)} files so far"

    def wait(self, timeout: float | None = None) -> BuildState:
        """The build under way finished (tests, `--check`)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return self.last


class _Reached(list[str]):
    """One folder's names for the searcher, counting in `owner.unindexed` those the index
    could not vouch for as the searcher comes to each: a search that its page or a budget
    stops in the folder counts only the files it reached, not the folder's."""

    def __init__(self, names: list[str], unvouched: set[str], owner: _Filter | _Counted
                 ) -> None:
        super().__init__(names)
        self.unvouched, self.owner = unvouched, owner

    def __iter__(self) -> Iterator[str]:
        for name in super().__iter__():
            self.owner.unindexed += name in self.unvouched
            yield name


class _Filter:
    """One search's pass over the walk's folders, with the index's answer."""

    def __init__(self, view: dict[str, Entry], ids: set[int], gen: int,
                 progress: Callable[[], str | None], held: set[str]) -> None:
        self.view, self.ids, self.gen, self.progress = view, ids, gen, progress
        self.held = held  # files a process has open: read, whatever their signature
        self.unindexed = 0  # files read because the index could not vouch for them
        self.left_out = 0

    def folders(self, dirs: Iterator[Folder]) -> Iterator[Folder]:
        view, ids, gen, held = self.view, self.ids, self.gen, self.held
        for fd, prefix, names in dirs:
            keep: list[str] = []
            unvouched: set[str] = set()
            for name in names:
                # The entry's fields read from its packed int (`entry.py`), not as attributes:
                # this loop runs once per file of the tree.
                e = view.get(prefix + name)
                if (e is None or e >> GEN_AT > gen or e & STATE_MASK == WHOLE
                        or (held and prefix + name in held)):
                    keep.append(name)
                    if e is None or e >> GEN_AT > gen or e & STATE_MASK != WHOLE:
                        unvouched.add(name)
                    continue
                try:
                    st = ops.lstat(fd, name)
                except OSError:
                    continue  # gone since the listing
                if key(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != (
                        e >> KEY_AT & KEY_MASK):
                    keep.append(name)
                    unvouched.add(name)
                elif e & STATE_MASK != BINARY and e >> ID_AT & ID_MASK in ids:
                    keep.append(name)
                else:
                    self.left_out += 1
            yield Folder(fd, prefix, _Reached(keep, unvouched, self) if unvouched else keep)

    def note(self) -> str | None:
        return _note(self.unindexed, self.progress(), len(self.view))


def _note(unindexed: int, progress: str | None, held: int) -> str | None:
    if not unindexed:
        return None
    why = [progress]
    if held >= trigram_build.MOST_FILES:
        why.append(f"the index holds at most {trigram_build.MOST_FILES} files of a root: "
                   "the others are read by every search")
    return (f"the search index did not yet cover {unindexed} of the files searched "
            "(being built, or changed since): they were read in full"
            + "".join(f" ({w})" for w in why if w))


class _Counted:
    """A walk-less answer's folders, counting the files read because they changed, and the
    folders it could not open (`direct.folders` fills `unopened`)."""

    def __init__(self, root: Root, paths: list[str], dirty: set[str], keeper: Keeper
                 ) -> None:
        self.unopened: list[str] = []
        self.dirs = direct.folders(root, paths, self.unopened)
        self.dirty, self.keeper, self.unindexed = dirty, keeper, 0

    def folders(self) -> Iterator[Folder]:
        for fd, prefix, names in self.dirs:
            changed = {n for n in names if prefix + n in self.dirty}
            yield Folder(fd, prefix, _Reached(names, changed, self) if changed else names)

    def note(self) -> str | None:
        notes = [_note(self.unindexed, self.keeper.progress(), len(self.keeper.idx.view)),
                 unreadable_text(len(self.unopened))]
        return "; ".join(n for n in notes if n) or None


def narrowing(idx: TrigramIndex, keeper: Keeper, root: Root, identity: str
              ) -> Narrowing:
    """What narrows one call's files on one root: without a walk when the watch allows
    (`direct.py`), else the walk's files filtered (`_Filter`)."""

    def narrow(strings: tuple[str, ...], fold: bool, dirs: Iterator[Folder], scope: Scope
               ) -> Answer | None:
        expr = plan(strings, fold)
        if idx.identity not in (None, identity):  # built for other rules: scanned until
            keeper.kick(root, identity)  # a build has started it again
            return None
        watch = idx.trusted_watch() if scope.plain and expr is not None else None
        if watch is not None and time.monotonic() - idx.walked_at >= REWALK:
            watch = None  # too long since a walk looked at every file: this call walks
        if watch is not None and expr is not None:
            decided, got = _walkless(keeper, root, identity, watch, expr, scope, stale_of)
            if decided:
                return got
        keeper.kick(root, identity)
        if expr is None:
            return None
        with idx.lock:
            view, gen = idx.view, idx.gen
        try:
            ids, _ = idx.matching(expr)
        except (apsw.Error, Unavailable):
            return None
        if idx.view is not view:  # rebuilt meanwhile: what the query saw is another index
            return None
        w = idx.watch  # broken, it still knows what was held when it broke: held still
        held = w.held() if w is not None and w.drain() else set()
        if w is not None:
            with w.lock:
                changed = set(w.dirty)
            _unvouch(idx, changed, stale_of)
        f = _Filter(view, ids, gen, keeper.progress, held)
        return f.folders(dirs), f.note

    stale_of = _Stale()
    return narrow


class _Stale:
    """The view's entries stored stale (`entry.racy`), found again only when the view has
    changed (a new generation): asked under the index's lock."""

    def __init__(self) -> None:
        self.gen, self.got = -1, dict[str, int]()

    def __call__(self, view: dict[str, Entry], gen: int) -> dict[str, int]:
        if gen != self.gen:
            self.got, self.gen = racy(view), gen
        return self.got


def _unvouch(idx: TrigramIndex, paths: set[str], stale_of: _Stale) -> None:
    """The entries of files the watch saw changed marked stale in the view: the next build
    reads them whatever their signature (a page written again through a map, the map then
    gone, moves nothing on disk; the close says it was written)."""
    with idx.lock:
        view = idx.view
        for p in paths:
            e = view.get(p)
            if e is not None and e.sig[1] != STALE and e.sig != UNMATCHED:
                view[p] = Entry(stale(e.sig), e.id, e.state, e.gen)
                stale_of.gen = -1


def _walkless(keeper: Keeper, root: Root, identity: str, watch: Watch, expr: str,
              scope: Scope, stale_of: _Stale) -> tuple[bool, Answer | None]:
    """The answer without a walk (True, and None when the call scans), or (False, None)
    when the walk must decide. Read besides the candidates: what the watch saw changed,
    the files some process holds open, those stored stale (read within the racy window),
    the linked files whose signature moved. A build starts when something changed, or
    when a stale file's window has passed since the last build began (read again then, it
    is trusted)."""
    idx = keeper.idx
    with watch.lock:
        dirty, held = set(watch.dirty), set(watch.opens)
    _unvouch(idx, dirty, stale_of)
    with idx.lock:
        view, linked = idx.view, idx.linked
        stale = stale_of(view, idx.gen)
        new = [p for p in dirty | held if p not in view]
    unsure = held | stale.keys()  # read by this call, trusted by none
    hidden = direct.unlisted(root, new) if len(new) <= direct.MOST_NEW else None
    under = "/".join(scope.start) + "/" if scope.start else ""
    looked = [p for p in linked - dirty  # what this call reads, and ignore files
              if p.startswith(under) or p.rpartition("/")[2] in KINDS]
    moved = direct.changed(root, looked, view) if hidden is not None else None
    if hidden is None or moved is None:
        return False, None
    dirty = (dirty - hidden) | moved
    got = _direct(keeper, root, expr, view, dirty | (unsure - hidden), scope)
    # The refresh of what changed starts once the candidates are known: started first, it
    # could swap the view under the query and cost this call a walk.
    now = keeper.now()
    if dirty or any(keeper.began < c + RACY_WINDOW_NS <= now for c in stale.values()):
        keeper.kick(root, identity)
    return True, got


def _direct(keeper: Keeper, root: Root, expr: str, view: dict[str, Entry],
            dirty: set[str], scope: Scope) -> Answer | None:
    idx = keeper.idx
    try:
        ids, _ = idx.matching(expr)
    except (apsw.Error, Unavailable):  # the index cannot answer: the call scans
        return None
    try:
        got = idx.paths_of(view, ids)
    except (apsw.Error, Unavailable):
        return None
    if got is None:  # rebuilt meanwhile: what the query saw is another index
        return None
    paths = direct.candidates(got[0], got[1], dirty, scope.start, scope.keep)
    if paths is None:
        return None
    counted = _Counted(root, paths, dirty, keeper)
    return counted.folders(), counted.note
