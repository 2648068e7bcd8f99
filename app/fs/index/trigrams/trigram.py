"""The trigram index of one root: which files may hold a string, asked without reading them.

One SQLite file per root beside the ranked-search index (`storage.py`: the state directory,
never inside a root; the directory 0700, the file 0600 and ours, or replaced). It holds a
`files` table (path, stat signature, what became of the file) and a contentless FTS5 table,
`tokenize='trigram'` (case folded) and `detail='none'` (which files hold a trigram, not
where): the text of a file is read, cut into trigrams and let go; no copy is kept. Rows are
deleted for real (`contentless_delete`) and their entries dropped from the segments at once
(`secure-delete`), the pages zeroed (`secure_delete`), the log truncated after each batch
(`forget`): a file removed or now denied leaves no entry. This needs SQLite 3.44 or later,
which `apsw` ships (Python's own `sqlite3` is as old as the system's library).

What the index says is a claim about a file as it was: `view` maps each path to the
signature it was indexed at, and a search trusts an entry only while the file's signature
on disk is the same (`narrow.py`); otherwise the file is read as in a scan. `view` is
updated after each commit, each entry stamped with the commit's generation, so a query
that read generation G trusts only entries of G or before.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import urllib.parse
from typing import NamedTuple

import apsw

from app import hostfiles
from app.fs.index.access import Signature
from app.fs.index.storage import OnePerFile, Unavailable, ensure_dir, private_file, remove
from app.fs.index.trigrams import shards, trigram_text
from app.fs.index.trigrams.entry import Entry
from app.fs.index.trigrams.grams import Plan, groups, quote
from app.fs.index.trigrams.trigram_text import PARTS, file_of
from app.fs.index.trigrams.watch import Watch

# 2: files up to 8 MiB indexed (were 1 MiB); the shard count with it: an index split
# another way holds each file's trigrams in another file, so it is made again.
SCHEMA = f"loomfs-trigram-2/{shards.SHARDS}"
GRAMS = ("CREATE VIRTUAL TABLE grams USING fts5(body, tokenize='trigram', detail='none', "
         "content='', contentless_delete=1)")

TEXT, BINARY, WHOLE = 0, 1, 2  # a file's text indexed; binary (never matches); not indexed


def problem() -> str | None:
    """None when this machine's SQLite (apsw's) can hold the index, else why not."""
    try:
        con = apsw.Connection(":memory:")
        make_grams(con)
        con.close()
    except apsw.Error as exc:
        return f"this SQLite cannot hold a trigram index ({exc})"
    return None


def _create(con: apsw.Connection) -> None:
    con.execute("CREATE TABLE files (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT UNIQUE "
                "NOT NULL, size INTEGER, mtime INTEGER, ctime INTEGER, ino INTEGER, "
                "state INTEGER NOT NULL)")
    make_grams(con)


def make_grams(con: apsw.Connection) -> None:
    """The full-text table of trigrams, deleting for real (`secure-delete`)."""
    con.execute(GRAMS)
    con.execute("INSERT INTO grams(grams, rank) VALUES ('secure-delete', 1)")


_opening = threading.Lock()  # the connections this process makes, one at a time
WAL_TRIES = 50  # 50 x 20 ms: another process switching a new file to WAL


def _wal(con: apsw.Connection) -> None:
    """WAL mode, waiting for another connection switching it: SQLite answers that switch
    busy at once, without its busy handler (two connections opening a new file together,
    a build and a search, met it)."""
    for _ in range(WAL_TRIES - 1):
        try:
            con.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except apsw.BusyError:
            time.sleep(0.02)
    con.execute("PRAGMA journal_mode = WAL").fetchall()


def open_db(path: str) -> apsw.Connection:
    """The index file at `path`: made 0600 if missing, replaced if not ours or not our layout."""
    ensure_dir(os.path.dirname(path))
    with _opening:
        return _open_db(path)


def _open_db(path: str) -> apsw.Connection:
    for _ in range(2):
        private_file(path)
        con = apsw.Connection(path)
        con.set_busy_timeout(10_000)
        try:
            con.execute("PRAGMA secure_delete = ON").fetchall()
            _wal(con)
            con.execute("PRAGMA synchronous = NORMAL").fetchall()
            ours = _schema(con)
        except (apsw.NotADBError, apsw.CorruptError, apsw.SQLError):
            ours = False  # another program's file: replaced, not altered
        except apsw.Error:
            con.close()  # busy or failing: this search scans, the file is left alone
            raise
        if ours:
            return con
        con.close()
        remove(path)
    raise Unavailable("the trigram index file keeps being replaced")


def _schema(con: apsw.Connection) -> bool:
    """True when the file holds our layout (made here if the file is empty)."""
    # A file with tables is read as it is: a write lock would wait for a build's batch.
    # An empty one is made in a write transaction from the start: two connections making
    # the same file wait for each other, and neither reads a count the other will change.
    if not con.execute("SELECT count(*) FROM sqlite_master").fetchall()[0][0]:
        _make(con)
    row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchall()
    return bool(row) and row[0][0] == SCHEMA


def _make(con: apsw.Connection) -> None:
    con.execute("BEGIN IMMEDIATE")
    try:
        if not con.execute("SELECT count(*) FROM sqlite_master").fetchall()[0][0]:
            con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            _create(con)
            con.execute("INSERT INTO meta VALUES ('schema', ?), ('identity', '')", (SCHEMA,))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _identity(con: apsw.Connection) -> str | None:
    """The rules a file's trigrams were indexed under (every shard says the same, or the
    index is made again: a shard file replaced, say, holds none of the rows' trigrams)."""
    row = con.execute("SELECT value FROM meta WHERE key = 'identity'").fetchall()
    return str(row[0][0]) if row else None


class TrigramIndex:
    """One root's trigram index: a writer (the build, one thread) and readers (searches)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()  # the view and the generation
        self.read_lock = threading.Lock()  # the reading connection
        self.view: dict[str, Entry] = {}  # each entry packed in one int (`entry.py`)
        self.whole: set[str] = set()  # the view's files held without their text
        self.gen = 0
        self.complete = False  # a build has seen every folder since the index was adopted
        self._readers: dict[int, apsw.Connection] = {}
        self.watch: Watch | None = None  # the changes since the last build walked the tree
        self.watched = False  # a complete build walked the tree under `watch` from its start
        self.linked: frozenset[str] = frozenset()  # files with other links, at that walk
        self.walked_at = 0.0  # when that walk began (`time.monotonic`)
        self.identity: str | None = None  # the rules the tables were built for

    def trusted_watch(self) -> Watch | None:
        """The watch, drained, when a search may trust the index without a walk."""
        w = self.watch
        if w is None or not self.watched or not self.complete:
            return None
        w.drain()
        return None if w.broken else w

    def reader(self, k: int = 0) -> apsw.Connection:
        """The reading connection of shard `k` (0: the index file, with `files`)."""
        con = self._readers.get(k)
        if con is not None and not con.getautocommit():  # a read left open: an old snapshot
            with contextlib.suppress(apsw.Error):
                con.close()
            con = None
        if con is None:
            con = self._readers[k] = open_db(shards.shard_path(self.path, k))
        return con

    def close(self) -> None:
        with self.read_lock:
            for con in self._readers.values():
                with contextlib.suppress(apsw.Error):
                    con.close()
            self._readers = {}

    def load(self, con: apsw.Connection) -> None:
        """The view as the file holds it (at start, or after the rules changed)."""
        rows = con.execute("SELECT path, size, mtime, ctime, ino, id, state FROM files")
        with self.lock:
            self.gen += 1
            gen = self.gen
            self.view = {p: Entry((s, m, c, n), i, st, gen) for p, s, m, c, n, i, st in rows}
            self.whole = {p for p, e in self.view.items() if e.state == WHOLE}
            done = con.execute("SELECT value FROM meta WHERE key = 'complete'").fetchall()
            self.complete = bool(done) and done[0][0] == "1"

    def forget(self) -> None:
        """Nothing is trusted any more (the tables are about to be dropped): a query that
        read the view before this sees it replaced, and scans (`narrow.py`)."""
        with self.lock:
            self.gen += 1
            self.view, self.whole = {}, set()
            self.complete = False

    def publish(self, changed: dict[str, tuple[Signature, int, int] | None]) -> None:
        """After a commit: the paths it wrote (None: removed), stamped with a new generation."""
        with self.lock:
            self.gen += 1
            view, gen, whole = self.view, self.gen, self.whole
            for path, row in changed.items():
                view.pop(path, None)
                whole.discard(path)
                if row is not None:
                    view[path] = Entry(row[0], row[1], row[2], gen)
                    if row[2] == WHOLE:
                        whole.add(path)

    def paths_of(self, view: dict[str, Entry], ids: set[int]) -> tuple[list[str], int] | None:
        """The paths of `ids` (from the `files` table: a row's id is never given to another
        path while the tables last) and of every file held without its text, and how many
        files the index holds; None when the view is no longer `view`: the tables may
        have been made anew (`forget` comes first), and ids with them."""
        with self.read_lock:
            rows = self.reader().execute(
                "SELECT path FROM files WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(ids)),))
            paths = [r[0] for r in rows]
        with self.lock:
            if self.view is not view:
                return None
            return paths + list(self.whole), len(view)

    def matching(self, expr: str) -> tuple[set[int], int]:
        """The ids of the files whose indexed text holds the trigrams of `expr`, and the
        generation the answer may be trusted for (read before the query)."""
        with self.lock:
            gen = self.gen
        with self.read_lock:
            ids: set[int] = set()
            ours = _identity(self.reader(0))
            for k in range(shards.SHARDS):
                con = self.reader(k)
                if k and _identity(con) != ours:  # a shard made anew since: not the rows'
                    raise Unavailable("the trigram index's files disagree: being made again")
                ids |= held_by(con, expr)
            return ids, gen

    def size(self) -> int:
        return size_of(self.path)


def held_by(con: apsw.Connection, expr: str) -> set[int]:
    """The ids of the files of one shard whose text holds the trigrams of `expr` (a `plan`)."""
    ids = {r[0] for r in con.execute("SELECT rowid FROM grams WHERE grams MATCH ?", (expr,))}
    if ids and max(ids) >= PARTS:  # rows of parts among them
        ids = {file_of(i) for i in ids}
    return ids | _parted(con, expr)


def _parted(con: apsw.Connection, expr: str) -> set[int]:
    """The files held in parts (`trigram_text`) that hold every trigram of one of the ANDs
    of `expr`, its string longer than a part's overlap (a shorter one lies whole in one
    part, which the query of `held_by` finds): asked one trigram at a time over the parts,
    as the string's may be in two. Every AND of a query not `plan`'s own is so asked."""
    lengths = expr.lengths if isinstance(expr, Plan) else None
    spanning = [g for k, g in enumerate(groups(expr))
                if lengths is None or lengths[k] > trigram_text.OVERLAP + 1]
    if not spanning or not con.execute("SELECT rowid FROM grams WHERE rowid >= ? LIMIT 1",
                                       (PARTS,)).fetchall():
        return set()
    found: set[int] = set()
    for group in spanning:
        files: set[int] | None = None
        for gram in group:
            rows = con.execute("SELECT rowid FROM grams WHERE grams MATCH ? AND rowid >= ?",
                               (quote(gram), PARTS))
            held = {file_of(r[0]) for r in rows}
            files = held if files is None else files & held
            if not files:
                break
        found |= files or set()
    return found


def size_of(path: str) -> int:
    """Bytes of an index on disk (its files and their logs)."""
    total = 0
    for shard in shards.paths(path):
        for p in (shard, shard + "-wal"):
            with contextlib.suppress(OSError):
                total += hostfiles.size(p)
    return total


class Summary(NamedTuple):
    """What an index file says of itself (`--check`)."""

    bytes: int
    files: int  # rows: files indexed, with their text or without (too large)
    complete: bool  # a build walked the whole tree since the rules last changed


def summary(path: str) -> Summary | None:
    """The index file's own account, read without writing (None: no file yet). Without a
    log beside it (no server has it open) the file is opened `immutable`, which makes no
    `-wal` or `-shm`; with one, read-only, as a reader beside the server."""
    if not os.path.exists(path):
        return None
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    mode = "ro" if os.path.exists(path + "-wal") else "ro&immutable=1"
    uri = "file:" + urllib.parse.quote(path) + "?mode=" + mode
    con = apsw.Connection(uri, flags=flags)
    try:
        files = con.execute("SELECT count(*) FROM files").fetchall()[0][0]
        done = con.execute("SELECT value FROM meta WHERE key = 'complete'").fetchall()
    finally:
        con.close()
    return Summary(size_of(path), int(files or 0), bool(done) and done[0][0] == "1")


index_at = OnePerFile(TrigramIndex)  # the process's one `TrigramIndex` for an index file
