"""The full-text index's file on disk: where it goes, who may read it, its layout.

One SQLite file per root, under the state directory (never inside a root). Its
content is a copy of the root's text: the directory is 0700, the file 0600,
owned by the server's user, deleted rows are zeroed (`secure_delete`; what else
is done so that removed text leaves no trace is in `forget.py`). A file
found with another owner, group/other bits, as a link, or not readable as our
schema is removed and a new one is made. Not protected against: someone
running as the server's own user, who can read the roots anyway.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import stat as stat_mod
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from app import hostfiles

_T = TypeVar("_T")


class OnePerFile(Generic[_T]):
    """The process's one open index per index file: an index object owns its connections,
    its build and its view, and two on one file would race."""

    def __init__(self, make: Callable[[str], _T]) -> None:
        self._make = make
        self._open: dict[str, _T] = {}
        self._lock = threading.Lock()

    def __call__(self, path: str) -> _T:
        with self._lock:
            idx = self._open.get(path)
            if idx is None:
                idx = self._open[path] = self._make(path)
            return idx


SCHEMA = "loomfs-fts-3"  # 3: identifiers split at case changes beyond ASCII
TOKENIZE = "unicode61 remove_diacritics 2 tokenchars '_'"
# A file's text is stored in parts, a row of `docs` each, so SQLite tokenizes a bounded
# row at a time (`prepare.py`). Its first part's rowid is the file's id, as when a file was
# one row: doclists keep their small rowid steps. Its later parts (a file of more than
# `prepare.PART_CHARS` characters) live above LATER_PARTS, at (id << PART_BITS) + number.
PART_BITS = 16
LATER_PARTS = 1 << 48  # file ids stay far below 2**(63 - PART_BITS)
FILE_OF_ROW = (
    f"(CASE WHEN rowid < {LATER_PARTS} THEN rowid ELSE (rowid - {LATER_PARTS}) >> {PART_BITS} END)"
)


def part_row(file_id: int, n: int) -> int:
    """The rowid in `docs` of part `n` of the file `file_id`."""
    return file_id if n == 0 else LATER_PARTS + (file_id << PART_BITS) + n


def later_parts(file_id: int) -> tuple[int, int]:
    """The rowids of the file's later parts: from the first, to the end (excluded)."""
    return part_row(file_id, 1), LATER_PARTS + ((file_id + 1) << PART_BITS)


def file_of(rowid: int) -> int:
    """The file id a rowid of `docs` belongs to (SQL: FILE_OF_ROW)."""
    return rowid if rowid < LATER_PARTS else (rowid - LATER_PARTS) >> PART_BITS


def create_tables(con: sqlite3.Connection) -> None:
    """The tables a root's content goes in (inside the caller's transaction)."""
    con.execute(
        "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, "
        "size INTEGER, mtime INTEGER, ctime INTEGER, ino INTEGER)"
    )
    con.execute(f'CREATE VIRTUAL TABLE docs USING fts5(path, title, body, tokenize="{TOKENIZE}")')


class Unavailable(Exception):
    """The index cannot be used; the message is safe to show a client (no host paths)."""


def file_name(root_name: str, real: str) -> str:
    return f"{root_name}-{hashlib.sha256(real.encode()).hexdigest()[:16]}.sqlite3"


def ensure_dir(path: str) -> None:
    """Create the index directory (0700) or check that the existing one is ours and private."""
    try:
        hostfiles.make_dirs(os.path.dirname(path))
        with contextlib.suppress(FileExistsError):
            hostfiles.make_dir(path, 0o700)
        st = hostfiles.lstat(path)
        if not stat_mod.S_ISDIR(st.st_mode):
            raise Unavailable("the index directory is not a directory")
        if st.st_uid != os.getuid():
            raise Unavailable("the index directory belongs to another user")
        if st.st_mode & 0o077:
            hostfiles.chmod(path, 0o700)
    except OSError as exc:
        raise Unavailable(f"the index directory cannot be created ({exc.strerror})") from None


def open_db(path: str) -> tuple[sqlite3.Connection, tuple[int, int]]:
    """A connection to the index file at `path` (made if missing, replaced if not ours),
    and the (device, inode) of the file it has open."""
    for _ in range(2):
        private_file(path)
        try:
            con = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        except sqlite3.Error as exc:
            raise Unavailable(f"the index cannot be opened ({exc})") from None
        try:
            con.execute("PRAGMA secure_delete = ON")
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = NORMAL")
            ours = _schema(con)
        except sqlite3.DatabaseError:
            con.close()
            raise
        if ours:
            break
        con.close()  # another program's database, or an older layout: start a new file
        remove(path)
    else:
        raise Unavailable("the index file keeps being replaced")
    st = hostfiles.lstat(path)
    return con, (st.st_dev, st.st_ino)


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
    create_tables(con)
    con.execute("INSERT INTO meta VALUES ('schema', ?), ('identity', '')", (SCHEMA,))
    con.execute("COMMIT")
    return True


def private_file(path: str) -> None:
    """Create the file 0600, or remove one that is not ours, not private or not a file."""
    for _ in range(2):
        try:
            fd = hostfiles.open_fd(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link planted where the index goes
                remove(path)
                continue
            raise Unavailable(f"the index file cannot be opened ({exc.strerror})") from None
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if stat_mod.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return
        remove(path)
    raise Unavailable("the index file keeps being replaced")


def remove(path: str) -> None:
    """The index file and SQLite's companions, whatever they are."""
    for p in (path, path + "-wal", path + "-shm", path + "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            hostfiles.unlink(p)
