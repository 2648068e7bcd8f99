"""One refresh of a root's index: the walk, each file's signature compared with the
stored one, what changed read again, what is gone dropped, in committed batches.

Bounds: a file is read and stored a window and a part at a time (`prepare`);
the clock, the cancel flag and the batch are looked at every CHECK_EVERY
entries or CHECK_CHARS characters of text stored, whichever comes first, and a
batch is committed every `commit_every` seconds or COMMIT_CHARS characters.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.fs.index.access import Signature, open_listed, stale, storable
from app.fs.index.fulltext import prepare, tokens
from app.fs.index.storage import later_parts, part_row
from app.security.walk import WalkDir

CHECK_EVERY = 256  # entries between looks at the clock and the cancel flag
CHECK_CHARS = 1 << 20  # or characters of text stored
COMMIT_CHARS = 32 << 20  # a batch holds about this much text at most

Progress = Callable[[int, int], None]  # (files read, entries examined)
Known = tuple[int, int, int, int, int]  # rowid, size, mtime, ctime, inode


@dataclass
class Refreshed:
    read: int = 0  # files (re)indexed by this refresh
    removed: int = 0
    complete: bool = True  # False: stopped at the deadline; the rest comes next time
    rebuilt: bool = False
    purged: bool = False  # the words of removed and replaced text were merged away


class RefreshPass:
    """One refresh, inside a write transaction `begin()` opens (and opens again after
    each batch it commits). `known` is path -> stored row, as the file is now."""

    def __init__(
        self,
        con: sqlite3.Connection,
        known: dict[str, Known],
        per_file: int,
        *,
        begin: Callable[[], None],
        commit_every: float,
        now: Callable[[], int],
        check: Callable[[], None],
    ) -> None:
        self.con = con
        self.known = known
        self.per_file = per_file
        self.begin = begin
        self.commit_every = commit_every
        self.now = now  # the clock racy files are judged by
        self.check = check
        self.seen: set[str] = set()
        self.text = 0  # characters of text stored since the last look at the clock
        self.batch = 0  # and since the last commit
        self.replaced = 0  # bytes of files read again over an older version
        self.wrote = False

    def scan(
        self,
        dirs: Iterable[WalkDir],
        out: Refreshed,
        deadline: float,
        progress: Progress | None,
    ) -> None:
        """(Re)index every listed file whose signature changed, committing a batch every
        `commit_every` seconds or COMMIT_CHARS characters; at `deadline`, stop with
        `out.complete` False."""
        examined = 0
        next_commit = time.monotonic() + self.commit_every
        for d in dirs:
            for entry in d.entries:
                examined += 1
                if examined % CHECK_EVERY == 0 or self.text >= CHECK_CHARS:
                    self.text = 0
                    self.check()
                    now = time.monotonic()
                    if now >= next_commit or self.batch >= COMMIT_CHARS:
                        self.con.execute("COMMIT")
                        self.begin()
                        self.batch = 0
                        next_commit = now + self.commit_every
                        if progress is not None:
                            progress(out.read, examined)
                    if now >= deadline:
                        out.complete = False
                        return
                if self._visit(d.prefix, entry, d.fd):
                    out.read += 1

    def _visit(self, prefix: str, entry: os.DirEntry[str], dir_fd: int) -> bool:
        """One listed entry: a regular file is marked seen, and read again when its
        signature changed (True)."""
        try:
            if not entry.is_file(follow_symlinks=False):
                return False
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return False
        rel = prefix + entry.name
        self.seen.add(rel)
        old = self.known.get(rel)
        if old is not None and old[1:] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
            return False
        if old is None and not storable(rel):
            return False  # not UTF-8 (surrogate-escaped bytes): no id can name it
        row = self._index(rel, entry.name, dir_fd, old)
        if row is not None:
            self.known[rel] = row
        return True

    def sweep(self) -> int:
        """Drop the files a complete walk did not see; how many."""
        gone = self.known.keys() - self.seen
        for p in gone:
            rowid = self.known.pop(p)[0]
            self._drop_parts(rowid)
            self.con.execute("DELETE FROM files WHERE id = ?", (rowid,))
        self.wrote = self.wrote or bool(gone)
        return len(gone)

    def _drop_parts(self, rowid: int) -> None:
        self.con.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))
        self.con.execute("DELETE FROM docs WHERE rowid >= ? AND rowid < ?", later_parts(rowid))

    def _index(self, rel: str, name: str, dir_fd: int, old: Known | None) -> Known | None:
        """Write one file's rows, its text read again: the stored row (`old` when the file
        is no longer there to read)."""
        opened = open_listed(name, dir_fd, self.now)
        if opened is None:  # gone or no longer a regular file since the listing
            return old
        fd, sig = opened
        try:
            rowid = self._file_row(rel, sig, old)
            if not self._parts(fd, rowid, rel, sig[0]):
                sig = stale(sig)  # a read failed: what was read is kept, read again next time
                self.con.execute("UPDATE files SET mtime = ? WHERE id = ?", (sig[1], rowid))
        finally:
            os.close(fd)
        self.wrote = True
        return (rowid, *sig)

    def _file_row(self, rel: str, sig: Signature, old: Known | None) -> int:
        """The file's row in `files`, written; an older version's parts dropped."""
        if old is None:
            cur = self.con.execute(
                "INSERT INTO files (path, size, mtime, ctime, ino) VALUES (?, ?, ?, ?, ?)",
                (rel, *sig),
            )
            return int(cur.lastrowid or 0)
        self._drop_parts(old[0])
        self.replaced += old[1] if old[1] <= self.per_file else 0  # larger: no text stored
        self.con.execute(
            "UPDATE files SET size = ?, mtime = ?, ctime = ?, ino = ? WHERE id = ?",
            (*sig, old[0]),
        )
        return old[0]

    def _parts(self, fd: int, rowid: int, rel: str, size: int) -> bool:
        """Store the file's text, a part per row (its path only when it is larger than
        `per_file`); False when a read failed midway."""
        path = tokens.expand(rel)
        if size > self.per_file:
            texts: Iterable[tuple[str, str]] = [(tokens.title_of(rel, ""), "")]
        else:
            texts = prepare.parts(fd, self.per_file, rel, self.check)
        try:
            for n, (title, body) in enumerate(texts):
                self.con.execute(
                    "INSERT INTO docs (rowid, path, title, body) VALUES (?, ?, ?, ?)",
                    (part_row(rowid, n), path, title, body),
                )
                self.text += len(body)
                self.batch += len(body)
        except OSError:
            return False
        return True
