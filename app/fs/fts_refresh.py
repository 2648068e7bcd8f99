"""One refresh of a root's index: the walk, each file's signature compared with the
stored one, what changed read again, what is gone dropped, in committed batches.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.fs import tokens
from app.fs.fts_root import read, storable
from app.security.walk import WalkDir

CHECK_EVERY = 256  # entries between looks at the clock and the cancel flag

Progress = Callable[[int, int], None]  # (files read, entries examined)
Known = tuple[int, int, int, int, int]  # rowid, size, mtime, ctime, inode


@dataclass
class Refreshed:
    read: int = 0  # files (re)indexed by this refresh
    removed: int = 0
    complete: bool = True  # False: stopped at the deadline; the rest comes next time
    rebuilt: bool = False


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
    ) -> None:
        self.con = con
        self.known = known
        self.per_file = per_file
        self.begin = begin
        self.commit_every = commit_every
        self.now = now  # the clock racy files are judged by
        self.seen: set[str] = set()

    def scan(
        self,
        dirs: Iterable[WalkDir],
        out: Refreshed,
        deadline: float,
        check: Callable[[], None],
        progress: Progress | None,
    ) -> None:
        """(Re)index every listed file whose signature changed, committing a batch every
        `commit_every` seconds; at `deadline`, stop with `out.complete` False."""
        examined = 0
        next_commit = time.monotonic() + self.commit_every
        for d in dirs:
            for entry in d.entries:
                examined += 1
                if examined % CHECK_EVERY == 0:
                    check()
                    now = time.monotonic()
                    if now >= next_commit:
                        self.con.execute("COMMIT")
                        self.begin()
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
        rows = [(self.known.pop(p)[0],) for p in gone]
        self.con.executemany("DELETE FROM docs WHERE rowid = ?", rows)
        self.con.executemany("DELETE FROM files WHERE id = ?", rows)
        return len(rows)

    def _index(self, rel: str, name: str, dir_fd: int, old: Known | None) -> Known | None:
        """Write one file's rows, its text read again: the stored row (`old` when the file
        is no longer there to read)."""
        con = self.con
        text, sig = read(name, dir_fd, self.per_file, self.now)
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
