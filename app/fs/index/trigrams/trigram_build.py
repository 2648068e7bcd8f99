"""The trigram index's build: a walk of the root, each changed file read and indexed, in
committed batches, in the background.

The walk is the searches' own (`Walker`: denied names pruned, links never followed, the
server's own files left out; ignore files honoured, as a search does by default), so the
index holds no file a search could not read. A file is opened by name from the walk's
directory handle (`access.open_listed`) and read up to `MOST_BYTES`: a larger one is listed
as not indexed (a search reads it), one with a NUL in its first 4 KiB as binary (a search
passes over it), any other decoded as a search reads it (UTF-16/32 by its BOM, else UTF-8,
bad bytes replaced, which keeps every valid character where it was) and given to SQLite,
which keeps its trigrams only.

Bounds: a file is read a window at a time and handed to SQLite in parts (`trigram_text`),
so what one file costs in memory is bounded whatever its alphabet (an 8 MiB file of random
CJK text, 2.8 million distinct trigrams in one row, took 480 MB); at most `MOST_FILES`
files held (a file past them is not added, and the index is not complete: searches walk and
read it); a batch is committed every `COMMIT_BYTES` of text or `COMMIT_SECONDS`, and then
published (`TrigramIndex.publish`), so a stopped build keeps what it did and the next one
resumes (a file whose signature is unchanged is not read again). `stop` is looked at
between files. Files the walk no longer sees are removed once a walk is complete, and so is
everything when the rules changed (`adopt`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import apsw

from app.fs.filters.ignore import KINDS, Filter
from app.fs.index.access import Signature, open_listed, stale, storable
from app.fs.index.trigrams.adopt import adopt
from app.fs.index.trigrams.direct import pruned
from app.fs.index.trigrams.shards import (
    PENDING,
    SHARDS,
    Writer,
    add_grams,
    drop_grams,
    shard_path,
)
from app.fs.index.trigrams.trigram import (
    BINARY,
    TEXT,
    WHOLE,
    TrigramIndex,
    open_db,
)
from app.fs.index.trigrams.trigram_text import FileText
from app.fs.index.trigrams.watch import RACY_WINDOW_NS, Watch
from app.security.resolve import Root
from app.security.walk import Walker

MOST_BYTES = 8 << 20  # a larger file is not indexed: searches read it (the largest default
# max_read_bytes: below it, every file a search reads by default is indexed)
MOST_FILES = 200_000  # files one root's index holds at most: searches read the others
COMMIT_BYTES = 16 << 20
COMMIT_SECONDS = 1.0
TRIM_BYTES = 1 << 20  # a build that read more gives the memory it freed back (`give_back`)

Changed = dict[str, tuple[Signature, int, int] | None]


@dataclass
class BuildState:
    """What a build did, for notes and `--check`."""

    files: int = 0  # files seen by the walk
    indexed: int = 0  # files read and indexed by this build
    indexed_bytes: int = 0
    removed: int = 0
    past_most: int = 0  # files left out: the index already held MOST_FILES
    complete: bool = False
    error: str | None = None


@functools.cache
def _trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def give_back() -> None:
    """The memory a build freed returned to the system: glibc keeps it otherwise (some
    20 MiB of SQLite's and the parts' after 32 MiB of random text), for the life of the
    process. Nothing where there is no `malloc_trim`."""
    trim = _trim()
    if trim is not None:
        trim(0)


class Build:
    """One pass over a root (run in the index's background thread)."""

    def __init__(self, idx: TrigramIndex, root: Root, identity: str,
                 stop: threading.Event, now: Callable[[], int] = time.time_ns) -> None:
        self.idx, self.root, self.identity, self.stop, self.now = idx, root, identity, stop, now
        self.state = BuildState()
        self.changed: Changed = {}
        self.batch = 0
        self.held = 0  # files the index holds, or will once swept: at most MOST_FILES
        self.writers: list[Writer] = []  # shards 1.. (`shards.py`)
        # Rows pending until their shard commits, as they will be; rows to remove then.
        self.final: dict[str, tuple[Signature, int, int]] = {}
        self.gone: list[int] = []
        self.shards_done: list[threading.Event] = []  # the shards' commits under way
        self.trusted: dict[str, tuple[Signature, int, int]] = {}  # rows they hold
        self.dropped: list[int] = []
        self.con: apsw.Connection | None = None
        self.watch: Watch | None = None  # a new watch, given each folder the walk opens
        self.linked: set[str] = set()  # files with another link: the watch cannot vouch

    def run(self) -> BuildState:
        con = self.con = open_db(self.idx.path)
        try:
            others = [open_db(shard_path(self.idx.path, k)) for k in range(1, SHARDS)]
        except BaseException:
            con.close()
            raise
        self.writers = [Writer(o) for o in others]
        try:
            return self._run(con, others)
        finally:
            for w in self.writers:
                if w.is_alive():
                    w.finish(keep=False)
                else:
                    w.con.close()
            if self.state.indexed_bytes >= TRIM_BYTES:
                give_back()

    def _run(self, con: apsw.Connection, others: list[apsw.Connection]) -> BuildState:
        idx = self.idx
        watch, fresh = idx.watch, False
        if watch is None or watch.broken:  # a new era: every folder watched as it is walked
            if watch is not None:
                watch.close()
            idx.watched, watch, fresh = False, Watch(partial(pruned, self.root), watch), True
            idx.watch = watch
        started, began = watch.drain(), time.monotonic()
        self.watch = watch if fresh else None
        try:
            adopt(con, idx, self.identity, others)
            for w in self.writers:
                w.start()
            known = dict(idx.view)
            seen: set[str] = set()
            self.held = len(known)
            con.execute("BEGIN IMMEDIATE")
            walked = self._walk(con, known, seen)
            if walked:  # complete: the index holds every file (none left out at MOST_FILES)
                self._sweep(con, known, seen)
                self.state.complete = not self.state.past_most
                con.execute("INSERT OR REPLACE INTO meta VALUES ('complete', ?)",
                            ("1" if self.state.complete else "0",))
            self._commit(con, again=False)
            for w in self.writers:
                w.finish(keep=True)
                if w.error is not None:
                    raise w.error
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            if walked:
                watch.settled(started)
                with idx.lock:
                    idx.complete = self.state.complete
                    idx.watched = idx.watched or (fresh and not watch.broken)
                    idx.linked, idx.walked_at = frozenset(self.linked), began
        except BaseException:
            with contextlib.suppress(apsw.Error):
                if not con.getautocommit():
                    con.execute("ROLLBACK")
            raise
        finally:
            con.close()
        return self.state

    def _walk(self, con: apsw.Connection, known: dict, seen: set[str]) -> bool:
        """Every listed file looked at; False when stopped before the end."""
        filt = Filter(self.root, (), [], False)
        walker = Walker(self.root, (), keep=filt if filt.active else None)
        deadline = time.monotonic() + COMMIT_SECONDS
        for d in walker.dirs():
            if self.stop.is_set():  # a tree of folders without files stops as well
                return False
            if self.watch is not None:
                self.watch.add(d.fd, d.prefix)
            for entry in d.entries:
                if self.stop.is_set():
                    return False
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                path = d.prefix + entry.name
                if not storable(path):
                    continue
                seen.add(path)
                self.state.files += 1
                if st.st_nlink > 1:  # written through another name, no event reaches us
                    self.linked.add(path)
                old = known.get(path)
                sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if old is not None and old.sig == sig:
                    continue
                if entry.name in KINDS and self.watch is None and self.idx.watch is not None:
                    self.idx.watch.broken = True  # rules changed with no event (a hard link)
                if old is None and self.held >= MOST_FILES:
                    self.state.past_most += 1
                    continue
                self._index(con, path, entry.name, d.fd, None if old is None else old.id)
                if self.batch >= COMMIT_BYTES or time.monotonic() >= deadline:
                    self._commit(con)
                    deadline = time.monotonic() + COMMIT_SECONDS
        return True

    def _index(self, con: apsw.Connection, path: str, name: str, dir_fd: int,
               old: int | None) -> None:
        opened = open_listed(name, dir_fd, self.now, RACY_WINDOW_NS)
        if opened is None:
            return
        fd, sig = opened
        try:
            fid = self._id(con, path, old)
            state, read = self._grams(con, fid, fd, sig[0], replace=old is not None)
        finally:
            os.close(fd)
        if state is None:  # a read failed midway: read by searches, and by the next build
            sig, state = stale(sig), WHOLE
        self._row(con, path, fid, sig, state)
        self.state.indexed += 1
        self.state.indexed_bytes += read
        self.batch += read

    def _grams(self, con: apsw.Connection, fid: int, fd: int, size: int, replace: bool
               ) -> tuple[int | None, int]:
        """The trigrams of the file open at `fd` written, a part at a time (those it had
        dropped first): its state (None: a read failed) and the bytes read."""
        writer = self.writers[fid % SHARDS - 1] if fid % SHARDS else None
        put = writer.put if writer is not None else partial(add_grams, con)
        drop = writer.drop if writer is not None else partial(drop_grams, con)
        if replace:
            drop(fid)
        if size > MOST_BYTES:  # a search reads it (and the bound is in the reads below)
            return WHOLE, 0
        text = FileText(fd, MOST_BYTES)
        wrote = False
        try:
            for rowid, part in text.rows(fid):
                put(rowid, part)
                wrote = True
        except OSError:
            state: int | None = None
        else:
            state = WHOLE if text.over else BINARY if text.binary else TEXT
        if wrote and state != TEXT:
            drop(fid)
        return state, 0 if state == WHOLE else text.read

    def _id(self, con: apsw.Connection, path: str, old: int | None) -> int:
        """The file's id: its row's, or a new row's (held without its text until `_row`)."""
        if old is not None:
            return old
        self.held += 1
        con.execute("INSERT INTO files (path, size, mtime, ctime, ino, state) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (path, *PENDING, WHOLE))
        return con.last_insert_rowid()

    def _row(self, con: apsw.Connection, path: str, fid: int, sig: Signature,
             state: int) -> None:
        """The file's row, as it will be trusted (shard 0) or pending (the others, trusted
        once their shard has committed its trigrams)."""
        final = fid % SHARDS == 0
        row = (*sig, state) if final else (*PENDING, WHOLE)
        con.execute("UPDATE files SET size = ?, mtime = ?, ctime = ?, ino = ?, state = ? "
                    "WHERE id = ?", (*row, fid))
        self.changed[path] = (row[:4], fid, row[4])
        if not final:
            self.final[path] = (sig, fid, state)

    def _sweep(self, con: apsw.Connection, known: dict, seen: set[str]) -> None:
        for path in known.keys() - seen:
            fid = known[path].id
            if fid % SHARDS:  # pending, its trigrams dropped by the shard, then removed
                con.execute("UPDATE files SET size = ?, mtime = ?, ctime = ?, ino = ?, state = ? "
                            "WHERE id = ?", (*PENDING, WHOLE, fid))
                self.writers[fid % SHARDS - 1].drop(fid)
                self.gone.append(fid)
            else:
                drop_grams(con, fid)
                con.execute("DELETE FROM files WHERE id = ?", (fid,))
            self.changed[path] = None
            self.state.removed += 1

    def _commit(self, con: apsw.Connection, again: bool = True) -> None:
        """The batch committed and published: the rows first (those of other shards
        pending), then the other shards' trigrams, then those rows as trusted. The shards
        commit while the next batch is read: the rows they hold are made trusted in the
        next batch's commit, once the shards' commits are done."""
        self._settle(con)
        con.execute("COMMIT")
        self.idx.publish(self.changed)
        self.changed, self.batch = {}, 0
        if self.final or self.gone:
            self.shards_done = [w.commit() for w in self.writers]
            self.trusted, self.final = self.final, {}
            self.dropped, self.gone = self.gone, []
        con.execute("BEGIN IMMEDIATE")
        if not again:  # the last batch: its rows made trusted now
            self._settle(con)
            con.execute("COMMIT")
            self.idx.publish(self.changed)
            self.changed = {}

    def _settle(self, con: apsw.Connection) -> None:
        """Once the shards have committed the last batch's trigrams: its rows trusted (in
        the transaction open on `con`), its removed rows gone."""
        for done in self.shards_done:
            done.wait()
        for w in self.writers:
            w.check()
        self.shards_done = []
        for path, (sig, fid, state) in self.trusted.items():
            con.execute("UPDATE files SET size = ?, mtime = ?, ctime = ?, ino = ?, "
                        "state = ? WHERE id = ?", (*sig, state, fid))
            if path not in self.changed:  # else rewritten since: pending again
                self.changed[path] = (sig, fid, state)
        for fid in self.dropped:
            con.execute("DELETE FROM files WHERE id = ?", (fid,))
        self.trusted, self.dropped = {}, []
