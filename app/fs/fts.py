"""A persistent full-text index of one root (SQLite FTS5), kept fresh on every search.

One SQLite file per root, under the state directory (never inside a root): a
`files` table (path and stat signature) and an FTS5 table of the path, title
and text of every regular file the walk reaches. `refresh()` runs before every
search: it walks the root with `Walker` (denied names pruned, links never
followed), compares each file's (size, mtime, ctime, inode) with what was
indexed, re-reads only what changed (opened by name from the walk's own
directory handle, `O_NOFOLLOW`), and drops what is gone. So a file written,
changed or deleted by anyone is seen by the next search, and a file that a new
deny rule hides leaves the index at the next refresh. A file whose timestamps
are younger than `RACY_NS` is re-read on the next refresh too, since a second
change within the same clock tick leaves its signature as it was.

What the index holds is never an answer: it proposes candidate paths, and
`verify()` opens each one again through the walk's rules (deny on every
component, no link at any step, a regular file) before it is returned. A
stale, tampered or planted index can cost a miss, never a denied path. Its
content is a copy of the roots' text: the directory is 0700, the file 0600,
owned by the server's user, deleted rows are zeroed (`secure_delete`). A file
found with another owner, group/other bits, as a link, or not readable as our
schema is removed and rebuilt. Not protected against: someone running as the
server's own user, who can read the roots anyway.

Two servers on one state directory share the file: SQLite's locks order their
writes, and each catches up with the other's commits (`PRAGMA data_version`)
before it writes; between searches a process keeps the stat signatures in
memory while nobody else has written.

Limits: `refresh()` stops after `deadline` (it resumes on the next search; the
answer says how far it got) and checks `control` for cancellation; a batch is
committed every `COMMIT_EVERY` seconds, so stopped work is kept.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import stat as stat_mod
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.errors import LoomError
from app.fs import textio, tokens
from app.security.paths import split_request
from app.security.resolve import FILE_FLAGS, SecureRoot
from app.security.walk import Walker

SCHEMA = "loomfs-fts-1"
TOKENIZE = "unicode61 remove_diacritics 2 tokenchars '_'"
WEIGHTS = (4.0, 3.0, 1.0)  # bm25 weights of path, title, body
RACY_NS = 2_000_000_000
COMMIT_EVERY = 1.0
CHECK_EVERY = 256
STALE = -1  # a stored mtime that never matches: re-read at the next refresh
now_ns = time.time_ns  # the clock racy files are judged by

Progress = Callable[[int, int], None]  # (files read, entries examined)
Known = tuple[int, int, int, int, int]  # rowid, size, mtime, ctime, inode


class Unavailable(Exception):
    """The index cannot be used; the message is safe to show a client (no host paths)."""


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


def file_name(root_name: str, real: str) -> str:
    return f"{root_name}-{hashlib.sha256(real.encode()).hexdigest()[:16]}.sqlite3"


def ensure_dir(path: str) -> None:
    """Create the index directory (0700) or check that the existing one is ours and private."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        st = os.lstat(path)
        if not stat_mod.S_ISDIR(st.st_mode):
            raise Unavailable("the index directory is not a directory")
        if st.st_uid != os.getuid():
            raise Unavailable("the index directory belongs to another user")
        if st.st_mode & 0o077:
            os.chmod(path, 0o700)
    except OSError as exc:
        raise Unavailable(f"the index directory cannot be created ({exc.strerror})") from None


def _private_file(path: str) -> None:
    """Create the file 0600, or remove one that is not ours, not private or not a file."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link planted where the index goes
                _remove(path)
                continue
            raise Unavailable(f"the index file cannot be opened ({exc.strerror})") from None
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if stat_mod.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return
        _remove(path)
    raise Unavailable("the index file keeps being replaced")


def _remove(path: str) -> None:
    for p in (path, path + "-wal", path + "-shm", path + "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(p)


@dataclass
class Refreshed:
    read: int = 0  # files (re)indexed by this refresh
    removed: int = 0
    complete: bool = True  # False: stopped at the deadline; the rest comes next time
    rebuilt: bool = False


class RootIndex:
    """The open index of one root. Use under `lock` (one refresh or query at a time)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.con: sqlite3.Connection | None = None
        self._file = (0, 0)  # (device, inode) of the file `con` has open
        self._known: dict[str, Known] | None = None
        self._version: int | None = None

    # -- opening -----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self.con is not None:
            # Removed or replaced since we opened it: let go, and check the new one.
            try:
                st = os.lstat(self.path)
                same = (st.st_dev, st.st_ino) == self._file
            except OSError:
                same = False
            if same:
                return self.con
            self.close()
        for _ in range(2):
            _private_file(self.path)
            try:
                con = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=10
                )
            except sqlite3.Error as exc:
                raise Unavailable(f"the index cannot be opened ({exc})") from None
            try:
                con.execute("PRAGMA secure_delete = ON")
                con.execute("PRAGMA journal_mode = WAL")
                con.execute("PRAGMA synchronous = NORMAL")
                ours = self._schema(con)
            except sqlite3.DatabaseError:
                con.close()
                raise
            if ours:
                break
            con.close()  # another program's database, or an older layout: start a new file
            _remove(self.path)
        else:
            raise Unavailable("the index file keeps being replaced")
        st = os.lstat(self.path)
        self._file = (st.st_dev, st.st_ino)
        self.con = con
        return con

    @staticmethod
    def _schema(con: sqlite3.Connection) -> bool:
        """True when the file holds our layout (created here if the file is empty); False
        for anything else, which is then removed rather than altered."""
        # In a write transaction: two servers creating the same file see each other.
        con.execute("BEGIN IMMEDIATE")
        if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            con.execute("ROLLBACK")
            try:
                row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            except sqlite3.OperationalError:  # no such table or column: not ours
                return False
            return row is not None and row[0] == SCHEMA
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.execute(
            "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, "
            "size INTEGER, mtime INTEGER, ctime INTEGER, ino INTEGER)"
        )
        con.execute(
            f'CREATE VIRTUAL TABLE docs USING fts5(path, title, body, tokenize="{TOKENIZE}")'
        )
        con.execute("INSERT INTO meta VALUES ('schema', ?), ('identity', '')", (SCHEMA,))
        con.execute("COMMIT")
        return True

    def close(self) -> None:
        self._known = None
        if self.con is not None:
            with contextlib.suppress(sqlite3.Error):
                self.con.close()
            self.con = None

    def discard(self) -> None:
        """Forget a corrupted or foreign index: the next use starts a new file."""
        self.close()
        _remove(self.path)

    # -- keeping it fresh ----------------------------------------------------------

    def refresh(
        self,
        root: SecureRoot,
        identity: str,
        per_file: int,
        *,
        deadline: float,
        check: Callable[[], None],
        progress: Progress | None = None,
    ) -> Refreshed:
        con = self._connect()
        out = Refreshed()
        row = con.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()
        if row is None or row[0] != identity:
            # Another root at this path, other deny/allow rules, other limits: start over.
            con.execute("BEGIN IMMEDIATE")
            con.execute("DELETE FROM files")
            con.execute("DELETE FROM docs")
            con.execute("INSERT OR REPLACE INTO meta VALUES ('identity', ?)", (identity,))
            con.execute("COMMIT")
            out.rebuilt = True
            self._known = None
        known = self._load_known(con)
        seen: set[str] = set()
        examined = 0
        next_commit = time.monotonic() + COMMIT_EVERY
        self._begin(con, known)
        try:
            for d in Walker(root, ()).dirs():
                prefix, dir_fd = d.prefix, d.fd
                for entry in d.entries:
                    examined += 1
                    if examined % CHECK_EVERY == 0:
                        check()
                        now = time.monotonic()
                        if now >= next_commit:
                            con.execute("COMMIT")
                            self._begin(con, known)
                            next_commit = now + COMMIT_EVERY
                            if progress is not None:
                                progress(out.read, examined)
                        if now >= deadline:
                            out.complete = False
                            break
                    try:
                        if not entry.is_file(follow_symlinks=False):
                            continue
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    rel = prefix + entry.name
                    seen.add(rel)
                    old = known.get(rel)
                    if old is not None and old[1:] == (
                        st.st_size,
                        st.st_mtime_ns,
                        st.st_ctime_ns,
                        st.st_ino,
                    ):
                        continue
                    if old is None and not _storable(rel):
                        continue  # not UTF-8 (surrogate-escaped bytes): no id can name it
                    row = self._index(con, rel, entry.name, dir_fd, per_file, old)
                    if row is not None:
                        known[rel] = row
                    out.read += 1
                if not out.complete:
                    break
            if out.complete:
                gone = known.keys() - seen
                rows = [(known.pop(p)[0],) for p in gone]
                con.executemany("DELETE FROM docs WHERE rowid = ?", rows)
                con.executemany("DELETE FROM files WHERE id = ?", rows)
                out.removed = len(rows)
            con.execute("COMMIT")
        except BaseException:
            # Keep what the committed batches did; a cancel or an error drops only this one.
            self._known = None
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
            raise
        return out

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

    @staticmethod
    def _index(
        con: sqlite3.Connection,
        rel: str,
        name: str,
        dir_fd: int,
        per_file: int,
        old: Known | None,
    ) -> Known | None:
        text, sig = _read(name, dir_fd, per_file)
        if sig is None:  # gone or no longer a regular file since the listing
            return old
        if old is not None:
            con.execute("DELETE FROM docs WHERE rowid = ?", (old[0],))
            con.execute(
                "UPDATE files SET size = ?, mtime = ?, ctime = ?, ino = ? WHERE id = ?",
                (*sig, old[0]),
            )
            rowid = old[0]
        else:
            cur = con.execute(
                "INSERT INTO files (path, size, mtime, ctime, ino) VALUES (?, ?, ?, ?, ?)",
                (rel, *sig),
            )
            rowid = int(cur.lastrowid or 0)
        con.execute(
            "INSERT INTO docs (rowid, path, title, body) VALUES (?, ?, ?, ?)",
            (rowid, tokens.expand(rel), tokens.title_of(rel, text), tokens.expand(text)),
        )
        return (rowid, *sig)

    # -- asking ------------------------------------------------------------------

    def query(
        self, terms: Iterable[str], limit: int, stems: Iterable[str] = ()
    ) -> tuple[list[tuple[float, int, str]], int]:
        """The best `limit` (score, rowid, path) by BM25 (higher is better), and how many match.
        A word matches whole; a stem matches any word it begins (`invoic` -> invoices)."""
        con = self._connect()
        expr = " OR ".join([*(quote(t) for t in terms), *(quote(t) + "*" for t in stems)])
        w_path, w_title, w_body = WEIGHTS
        rows = con.execute(
            "SELECT -bm25(docs, ?, ?, ?) AS s, docs.rowid, files.path FROM docs "
            "JOIN files ON files.id = docs.rowid WHERE docs MATCH ? ORDER BY s DESC LIMIT ?",
            (w_path, w_title, w_body, expr, limit),
        ).fetchall()
        total = len(rows)
        if total >= limit:
            count = "SELECT count(*) FROM docs WHERE docs MATCH ?"
            total = con.execute(count, (expr,)).fetchone()[0]
        return rows, total

    def matching(self, expr: str) -> set[int]:
        """The rowids matching an FTS5 expression (a phrase, a NEAR group, an AND)."""
        con = self._connect()
        return {r[0] for r in con.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (expr,))}

    def prefixed(self, terms: Iterable[str], limit: int) -> list[str]:
        """Paths with a word that starts with one of `terms` (the second tier: `env` finds
        `environment.md`), in index order."""
        expr = " OR ".join(quote(t) + "*" for t in terms)
        con = self._connect()
        return [
            r[0]
            for r in con.execute(
                "SELECT files.path FROM docs JOIN files ON files.id = docs.rowid "
                "WHERE docs MATCH ? LIMIT ?",
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
                size += os.stat(p).st_size
        return n, size


def _storable(rel: str) -> bool:
    if rel.isascii():
        return True
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _read(name: str, dir_fd: int, per_file: int) -> tuple[str, tuple[int, int, int, int] | None]:
    """A listed file's text ('' when binary, too large or unreadable) and the signature to
    store; None when it is no longer a regular file. A signature too young to trust is
    stored as STALE, so the next refresh reads the file again."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return "", None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return "", None
        sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if now_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
            sig = (st.st_size, STALE, st.st_ctime_ns, st.st_ino)
        if st.st_size > per_file:
            return "", sig
        try:
            data = textio.pread_all(fd, per_file)
        except OSError:
            return "", (st.st_size, STALE, st.st_ctime_ns, st.st_ino)
    finally:
        os.close(fd)
    decoded = tokens.as_text(data, True)  # the decision fetch makes too
    return "" if decoded is None else decoded[0], sig


def verify(root: SecureRoot, rel: str) -> bool:
    """Is `rel` (from the index) still a regular file the walk would reach under today's
    rules? Deny on every component, no link at any step, confined. Nothing is audited:
    this is a filter on search results, not an access."""
    try:
        parts = split_request(rel)
    except LoomError:  # a path no index of ours holds: planted
        return False
    if not parts or root.rules.path(parts) is not None:
        return False
    try:
        dir_fd = root.open_subdir(parts[:-1])
    except OSError:
        return False
    try:
        fd = os.open(parts[-1], FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        ids = root.rules.identities  # the server's own files under another name
        return stat_mod.S_ISREG(st.st_mode) and not (ids is not None and ids.hit(st))
    finally:
        os.close(fd)


_open: dict[str, RootIndex] = {}
_open_lock = threading.Lock()


def index_at(path: str) -> RootIndex:
    """The process's one `RootIndex` for an index file."""
    with _open_lock:
        idx = _open.get(path)
        if idx is None:
            idx = _open[path] = RootIndex(path)
        return idx
