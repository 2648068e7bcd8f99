"""The trigram index's shards: its trigrams split over `SHARDS` files, written at once.

SQLite's full-text table takes one writer per file, and cutting text into trigrams is the
whole cost of a build (about 7 MB of text a second on one core here). So a file's trigrams
(its row, or every part of it: `trigram_text`) go to shard `id % SHARDS`: shard 0 is the
index file itself (beside the `files` table), each other shard a file beside it
(`shard_path`) with the same layout, written by its own thread and connection (`Writer`)
while the build reads the next files; SQLite works without Python's lock, so two shards
take two cores.

A row of a file whose trigrams live in another shard is never trusted before they are
there: the build first commits the row as `PENDING` (held without its text, with a
signature no file has: every search reads the file), then the shard commits the
trigrams, and only then does the row get its signature and state. Stopped anywhere, the
files hold either a trusted row over its trigrams or a pending row that the next build
reads again (its signature differs from the file's), which first deletes whatever the
shard holds for that id. A removed file's row goes pending first, then its trigrams,
then the row.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading

import apsw

from app.fs.index.trigrams.entry import UNMATCHED
from app.fs.index.trigrams.trigram_text import part_rows

SHARDS = 2
QUEUED_BYTES = 8 << 20  # text handed to a writer and not yet written (one row always)
PENDING = UNMATCHED  # the signature of a row whose trigrams are not committed yet


def shard_path(path: str, k: int) -> str:
    """Shard `k`'s file: the index file itself for 0."""
    if k == 0:
        return path
    stem = path[: -len(".sqlite3")] if path.endswith(".sqlite3") else path
    return f"{stem}.{k}.sqlite3"


def paths(path: str) -> list[str]:
    return [shard_path(path, k) for k in range(SHARDS)]


def add_grams(con: apsw.Connection, rowid: int, text: str) -> None:
    """The trigrams of `text` as row `rowid` (a file's, or one part of it: `trigram_text`)."""
    if text:
        con.execute("INSERT INTO grams (rowid, body) VALUES (?, ?)", (rowid, text))


def drop_grams(con: apsw.Connection, fid: int) -> None:
    """Every row of file `fid`: its one row, or its parts."""
    con.execute("DELETE FROM grams WHERE rowid = ?", (fid,))
    con.execute("DELETE FROM grams WHERE rowid BETWEEN ? AND ?", part_rows(fid))


class Writer(threading.Thread):
    """One shard's writer: a transaction open from start to end, committed on request."""

    def __init__(self, con: apsw.Connection) -> None:
        super().__init__(name="loomfs-trigram-shard", daemon=True)
        self.con = con
        self.jobs: queue.SimpleQueue[tuple] = queue.SimpleQueue()
        self.room = threading.Condition()
        self.queued = 0  # bytes of text handed over and not yet written
        self.error: BaseException | None = None

    def put(self, rowid: int, text: str) -> None:
        """The trigrams of `text` as row `rowid`, once the texts waiting are under
        `QUEUED_BYTES` (one is always let through)."""
        size = sys.getsizeof(text)
        with self.room:
            self.room.wait_for(lambda: self.queued == 0 or self.queued + size <= QUEUED_BYTES)
            self.queued += size
        self.jobs.put(("put", rowid, text, size))

    def drop(self, fid: int) -> None:
        """Every row of file `fid` dropped (before its new ones, or for good)."""
        self.jobs.put(("drop", fid, "", 0))

    def commit(self) -> threading.Event:
        """Everything handed over so far to be committed: the event is set once it is (or
        the writer failed: `check`)."""
        done = threading.Event()
        self.jobs.put(("commit", done))
        return done

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def finish(self, keep: bool) -> None:
        """Committed (`keep`) or rolled back, the connection closed, the thread ended."""
        self.jobs.put(("end", keep))
        self.join()

    def run(self) -> None:
        con = self.con
        try:
            con.execute("BEGIN IMMEDIATE")
            while True:
                job = self.jobs.get()
                if job[0] == "end":
                    self._end(job[1])
                    return
                if job[0] == "commit":
                    self._commit(job[1])
                    continue
                if self.error is None:
                    self._write(job[0], job[1], job[2])
                self._written(job[3])
        except BaseException as exc:  # the build raises it at its next commit
            self.error = exc
            self._drain()

    def _write(self, kind: str, key: int, text: str) -> None:
        try:
            if kind == "drop":
                drop_grams(self.con, key)
            else:
                add_grams(self.con, key, text)
        except apsw.Error as exc:
            self.error = exc

    def _written(self, size: int) -> None:
        with self.room:
            self.queued -= size
            self.room.notify_all()

    def _commit(self, done: threading.Event) -> None:
        try:
            if self.error is None:
                self.con.execute("COMMIT")
                self.con.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            self.error = exc
        finally:
            done.set()

    def _end(self, keep: bool) -> None:
        con = self.con
        try:
            if keep and self.error is None:
                con.execute("COMMIT")
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except apsw.Error as exc:
            self.error = exc
        finally:
            with contextlib.suppress(apsw.Error):
                if not con.getautocommit():
                    con.execute("ROLLBACK")
            con.close()

    def _drain(self) -> None:
        """After a failure: jobs taken and answered until the end, so the build never
        waits on a writer that stopped."""
        while True:
            job = self.jobs.get()
            if job[0] == "commit":
                job[1].set()
            elif job[0] in ("put", "drop"):
                self._written(job[3])
            elif job[0] == "end":
                with contextlib.suppress(apsw.Error):
                    self.con.close()
                return
