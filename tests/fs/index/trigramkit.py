"""A root with a trigram index, searched as `search_text` searches it with the index on."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from app.corpus.trigram import narrow_of
from app.fs.control import NoControl
from app.fs.index.trigrams import direct, shards, trigram
from app.fs.index.trigrams.narrow import Keeper
from app.fs.index.trigrams.trigram_build import BuildState
from app.fs.index.trigrams.trigram_text import file_of
from app.fs.index.trigrams.watch import RACY_WINDOW_NS
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root


def later() -> int:
    """A clock past the dirty window ahead: files just written count as settled (not
    racy: `watch.RACY_WINDOW_NS`)."""
    return time.time_ns() + RACY_WINDOW_NS + 10_000_000_000


class Indexed:
    """One root and its trigram index (in `state`), the clock moved on so that files just
    written are trusted once indexed."""

    def __init__(self, root: Root, state: Path, identity: str = "rules-1",
                 now: Callable[[], int] = later) -> None:
        self.root, self.identity = root, identity
        self.idx = trigram.TrigramIndex(str(state / "index" / "r.trigram.sqlite3"))
        self.keeper = Keeper(self.idx, now=now)
        self.notes: list[str | None] = []
        self.narrow = narrow_of(self.keeper, root, identity)  # as the server narrows a call

    def build(self) -> BuildState:
        self.keeper.wait()
        self.keeper.kick(self.root, self.identity)
        return self.keeper.wait()

    def search(self, query: str, **kw: Any) -> list[Any]:
        """Every page of a search_text call with the index on, as one list of its items."""
        args: dict[str, Any] = dict(path="", file_glob="*", case_sensitive=True, offset=0,
                                    limit=37, cap=1 << 20, file_limit=self.root.max_read_bytes,
                                    budget=1 << 30, regex=True)
        args.update(kw)
        items: list[Any] = []
        while True:
            r = search_text(self.root, TextOptions(query=query, **args), NoControl(),
                            self.narrow)
            assert not r.truncated
            self.notes.append(r.note)
            data = r.model_dump(mode="json")
            items += data.get("matches") or data.get("files") or data.get("counts") or []
            if not r.has_more:
                return items
            args["offset"], args["cursor"] = 0, r.next_cursor  # pages resumed by cursor

    def rows(self) -> dict[str, int]:
        """path -> id, as the index's `files` table holds them."""
        con = apsw.Connection(self.idx.path)
        try:
            return {p: i for p, i in con.execute("SELECT path, id FROM files")}
        finally:
            con.close()

    def holding(self, gram: str) -> set[int]:
        """The ids of the files whose trigrams include `gram` (a row's, or a part's), in
        every shard, and whether any shard's vocabulary lists it at all (a term with no row
        left is dropped)."""
        got: set[int] = set()
        for path in shards.paths(self.idx.path):
            con = apsw.Connection(path)
            try:
                rows = [r[0] for r in con.execute(
                    "SELECT rowid FROM grams WHERE grams MATCH ?", ('"' + gram + '"',))]
                ids = {file_of(r) for r in rows}
                con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, grams, 'row')")
                listed = con.execute("SELECT doc FROM temp.v WHERE term = ?",
                                     (gram,)).fetchall()
                assert not listed or listed[0][0] == len(rows)
                got |= ids | ({-1} if listed else set())
            finally:
                con.close()
        return got


def spied_direct(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The paths of every walk-less answer, in order (each candidate may be read: SHARE
    lifted to every file)."""
    calls: list[list[str]] = []
    real = direct.folders

    def spy(root: Root, paths: list[str], unopened: list[str]
            ) -> Iterator[tuple[int, str, list[str]]]:
        calls.append(paths)
        return real(root, paths, unopened)

    monkeypatch.setattr(direct, "folders", spy)
    monkeypatch.setattr(direct, "SHARE", 1.0)
    return calls


# Another process holding a file open: through a shared memory map ("mmap", its descriptor
# kept; "mapped": closed once mapped, the mapping outliving it) or a descriptor it writes
# with `pwrite` ("fd"). It writes what it is told, line by line ("offset hex"), answering
# "ok" once written, and lets go of the file when its input ends.
_HOLDER = r"""
import mmap, os, sys
path, how = sys.argv[1], sys.argv[2]
if how == "fd":
    fd = os.open(path, os.O_WRONLY)
else:
    f = open(path, "r+b")
    m = mmap.mmap(f.fileno(), 0)
    if how == "mapped":
        f.close()
print("ready", flush=True)
for line in sys.stdin:
    at, data = line.split()
    b, o = bytes.fromhex(data), int(at)
    if how == "fd":
        os.pwrite(fd, b, o)
    else:
        m[o:o + len(b)] = b
    print("ok", flush=True)
"""


class Holder:
    """A process holding `path` open (`how`: "mmap", "mapped" or "fd") until `close`."""

    def __init__(self, path: Path, how: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), how],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._line() == "ready"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def write(self, at: int, data: bytes) -> None:
        """`data` written at offset `at`, in the other process, before this returns."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{at} {data.hex()}\n")
        self.proc.stdin.flush()
        assert self._line() == "ok"

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
