"""A persistent full-text index of one root (SQLite FTS5), kept fresh on every search.

The file (one per root, under the state directory, private to the server's
user) holds a `files` table (path and stat signature) and an FTS5 table of the
path, title and text of every regular file the walk reaches (`storage.py`).
`refresh()` runs before every search: it walks the root with `Walker` (denied
names pruned, links never followed), compares each file's (size, mtime, ctime,
inode) with what was indexed, re-reads only what changed (`access.open_listed`, from
the walk's own directory handle), and drops what is gone. So a file written,
changed or deleted by anyone is seen by the next search, and a file that a new
deny rule hides leaves the index at the next refresh. A file whose timestamps
are younger than `RACY_NS` is re-read on the next refresh too.

What the index holds is never an answer: it proposes candidate paths, and
`verify()` (`access.py`) opens each one again through the walk's rules before
it is returned.

Two servers on one state directory share the file: SQLite's locks order their
writes, and each catches up with the other's commits (`PRAGMA data_version`)
before it writes; between searches a process keeps the stat signatures in
memory while nobody else has written.

Limits: `refresh()` stops after `deadline` (it resumes on the next search; the
answer says how far it got) and checks `control` for cancellation; a batch is
committed every `COMMIT_EVERY` seconds or `refresh.COMMIT_CHARS` of text, so
stopped work is kept. A file is read and stored in bounded windows and parts
(`prepare.py`), so one file costs the same whatever it holds. What a refresh
removes leaves no trace in the index's files once it is over (`forget.py`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable

from app import hostfiles
from app.fs.index.access import RACY_NS, STALE, verify
from app.fs.index.fulltext.forget import flush, purge_if_due
from app.fs.index.fulltext.refresh import Known, Progress, Refreshed, RefreshPass
from app.fs.index.storage import (
    FILE_OF_ROW,
    SCHEMA,
    TOKENIZE,
    OnePerFile,
    Unavailable,
    create_tables,
    ensure_dir,
    file_name,
    file_of,
    open_db,
    remove,
)
from app.security.resolve import Root
from app.security.walk import Walker

__all__ = [
    "FILE_OF_ROW", "RACY_NS", "SCHEMA", "STALE", "TOKENIZE", "Refreshed", "RootIndex",
    "Unavailable", "ensure_dir", "file_name", "fts5_problem", "index_at", "quote", "verify",
]

WEIGHTS = (4.0, 3.0, 1.0)  # bm25 weights of path, title, body
COMMIT_EVERY = 1.0
now_ns = time.time_ns  # the clock racy files are judged by


_fts5: str | bool | None = False  # False: not checked yet; None: fine; str: why not


def fts5_problem() -> str | None:
    """None when this sqlite3 has FTS5, else why not (checked once)."""
    global _fts5
    if _fts5 is False:
        try:
            con = sqlite3.connect(":memory:")
            try:
                con.execute(f'CREATE VIRTUAL TABLE t USING fts5(a, tokenize="{TOKENIZE}")')
            finally:
                con.close()
            _fts5 = None
        except sqlite3.Error as exc:
            _fts5 = f"this Python's SQLite has no FTS5 ({exc})"
    return _fts5 if isinstance(_fts5, str) else None


class RootIndex:
    """The open index of one root. Use under `lock` (one refresh or query at a time)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.con: sqlite3.Connection | None = None
        self._file = (0, 0)  # (device, inode) of the file `con` has open
        self._known: dict[str, Known] | None = None
        self._version: int | None = None
        self._unflushed = False  # the last checkpoint could not empty the log

    # -- opening -----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.con is not None:
            # Removed or replaced since we opened it: let go, and check the new one.
            try:
                st = hostfiles.lstat(self.path)
                same = (st.st_dev, st.st_ino) == self._file
            except OSError:
                same = False
            if same:
                return self.con
            self.close()
        self.con, self._file = open_db(self.path)
        self._flush(self.con)  # a log left by a process that ended before it could
        return self.con

    def close(self) -> None:
        self._known = None
        if self.con is not None:
            with contextlib.suppress(sqlite3.Error):
                self.con.close()
            self.con = None

    def discard(self) -> None:
        """Forget a corrupted or foreign index: the next use starts a new file."""
        self.close()
        remove(self.path)

    # -- keeping it fresh ----------------------------------------------------------

    def refresh(
        self,
        root: Root,
        identity: str,
        per_file: int,
        *,
        deadline: float,
        check: Callable[[], None],
        progress: Progress | None = None,
    ) -> Refreshed:
        con = self._connect()
        out = Refreshed(rebuilt=self._adopt(con, identity))
        known = self._load_known(con)
        run = RefreshPass(con, known, per_file, begin=lambda: self._begin(con, known),
                          commit_every=COMMIT_EVERY, now=now_ns, check=check)
        self._begin(con, known)
        try:
            run.scan(Walker(root, ()).dirs(), out, deadline, progress)
            if out.complete:
                out.removed = run.sweep()
            out.purged = purge_if_due(con, run.replaced, out.removed, per_file)
            con.execute("COMMIT")
        except BaseException:
            # Keep what the committed batches did; a cancel or an error drops only this one.
            self._known = None
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            raise
        if run.wrote or out.rebuilt or self._unflushed:
            self._flush(con)
        return out

    def _flush(self, con: sqlite3.Connection) -> None:
        """The log emptied (`forget.flush`); if another server held it back, tried
        again after the next refresh."""
        self._unflushed = not flush(con)

    def _adopt(self, con: sqlite3.Connection, identity: str) -> bool:
        """Empty the index when it was built for another root, other deny/allow rules or
        other limits (`identity`); True when it did. The tables are dropped, not emptied
        row by row: their pages are zeroed (`secure_delete`) and nothing of the words of
        files now denied is left in the full-text table's segments."""
        row = con.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        if row is not None and row[0] == identity:
            return False
        con.execute("BEGIN IMMEDIATE")
        con.execute("DROP TABLE IF EXISTS docs")
        con.execute("DROP TABLE IF EXISTS files")
        create_tables(con)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('identity', ?)", (identity,))
        con.execute("DELETE FROM meta WHERE key = 'stale'")
        con.execute("COMMIT")
        self._known = None
        self._flush(con)
        return True

    def _begin(self, con: sqlite3.Connection, known: dict[str, Known]) -> None:
        """A write transaction, with `known` as the file is now: another server on the
        same state directory may have committed since we looked."""
        con.execute("BEGIN IMMEDIATE")
        version = con.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            known.clear()
            known.update(self._rows(con))
            self._version = version

    @staticmethod
    def _rows(con: sqlite3.Connection) -> dict[str, Known]:
        return {
            p: (i, s, m, c, n)
            for i, p, s, m, c, n in con.execute(
                "SELECT id, path, size, mtime, ctime, ino FROM files"
            )
        }

    def _load_known(self, con: sqlite3.Connection) -> dict[str, Known]:
        """path -> (rowid, size, mtime, ctime, inode), kept between searches while no other
        connection (another server on the same state directory) has written the file."""
        version = con.execute("PRAGMA data_version").fetchone()[0]
        if self._known is None or version != self._version:
            self._known = self._rows(con)
        self._version = version
        return self._known

    # -- asking ------------------------------------------------------------------

    def query(
        self, terms: Iterable[str], limit: int, stems: Iterable[str] = ()
    ) -> tuple[list[tuple[float, int, str]], int]:
        """The best `limit` (score, file id, path) by BM25 (higher is better), and how many
        files match. A file scores as its best part. A word matches whole; a stem matches
        any word it begins (`invoic` -> invoices)."""
        con = self._connect()
        expr = " OR ".join([*(quote(t) for t in terms), *(quote(t) + "*" for t in stems)])
        rows = self._best_parts(con, expr, limit)
        total = len(rows)
        if total >= limit:
            count = f"SELECT count(DISTINCT {FILE_OF_ROW}) FROM docs WHERE docs MATCH ?"
            total = con.execute(count, (expr,)).fetchone()[0]
        return rows, total

    @staticmethod
    def _best_parts(con: sqlite3.Connection, expr: str, limit: int) -> list[tuple[float, int, str]]:
        """The best `limit` files by their best part. SQLite sorts only the best `n` parts
        (a top-n sort); n grows while files of many parts fill them."""
        w_path, w_title, w_body = WEIGHTS
        n = limit
        while True:
            parts = con.execute(
                "SELECT -bm25(docs, ?, ?, ?) AS s, rowid FROM docs WHERE docs MATCH ? "
                "ORDER BY s DESC, rowid LIMIT ?",
                (w_path, w_title, w_body, expr, n),
            ).fetchall()
            best: dict[int, float] = {}
            for score, rowid in parts:
                best.setdefault(file_of(rowid), score)
            if len(best) >= limit or len(parts) < n:
                break
            n *= 4
        top = list(best.items())[:limit]
        marks = ",".join("?" * len(top))
        paths = dict(con.execute(f"SELECT id, path FROM files WHERE id IN ({marks})",
                                 [fid for fid, _ in top]))
        return [(score, fid, paths[fid]) for fid, score in top if fid in paths]

    def matching(self, expr: str) -> set[int]:
        """The ids of the files with a part matching an FTS5 expression (a phrase, a NEAR
        group, an AND)."""
        con = self._connect()
        sql = f"SELECT DISTINCT {FILE_OF_ROW} FROM docs WHERE docs MATCH ?"
        return {r[0] for r in con.execute(sql, (expr,))}

    def prefixed(self, terms: Iterable[str], limit: int) -> list[str]:
        """Paths with a word that starts with one of `terms` (the second tier: `env` finds
        `environment.md`), in index order."""
        expr = " OR ".join(quote(t) + "*" for t in terms)
        con = self._connect()
        return [
            r[0]
            for r in con.execute(
                f"SELECT files.path FROM (SELECT DISTINCT {FILE_OF_ROW} AS fid FROM docs "
                "WHERE docs MATCH ?) JOIN files ON files.id = fid LIMIT ?",
                (expr, limit),
            )
        ]

    def stats(self) -> tuple[int, int]:
        """(files indexed, index bytes on disk)."""
        con = self._connect()
        n = con.execute("SELECT count(*) FROM files").fetchone()[0]
        size = 0
        for p in (self.path, self.path + "-wal"):
            with contextlib.suppress(OSError):
                size += hostfiles.size(p)
        return n, size


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


index_at = OnePerFile(RootIndex)  # the process's one `RootIndex` for an index file
