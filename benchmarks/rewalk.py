"""What hard links and the periodic walk cost the trigram index, on a large real tree.

    .venv/bin/python benchmarks/rewalk.py --tree DIR [--runs 5] [--query TEXT]

DIR: any large real tree (`benchmarks/corpus.py --out DIR` builds the one docs/measured.md
names). The kernel reports a write only to the folder of the name it went through, so a
walk-less search looks at every file that had other links at the last walk (one `stat`
each), and a search walks, and starts a build that walks again, once the last walk is a
minute old (`narrow.REWALK`). Printed, medians of `--runs`, warm page cache:

- the build from nothing, and a build that finds nothing changed (the walk a search starts
  each minute): wall time and this process's CPU time, and the second over the first (the
  search that starts it walks too: the last figure below);
- a selective query without a walk, first with no linked file, then with every file of the
  tree given a second name outside it (hard links in a sibling folder, removed afterwards):
  the ratio, the cost per linked file, and the same search walking the tree (one `stat`
  per file, as without a watch), the cost every linked file approaches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.corpus.trigram import narrow_of
from app.fs.control import NoControl
from app.fs.index.trigrams import narrow as narrow_mod
from app.fs.index.trigrams.narrow import Keeper
from app.fs.index.trigrams.trigram import TrigramIndex
from app.fs.search import searcher
from app.fs.search.needs import Narrow
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root
from tests.kit import secure_root

FILE_LIMIT = 8 << 20


def timed_build(keeper: Keeper, root: Root) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    keeper.kick(root, "bench")
    state = keeper.wait()
    assert state.error is None, state.error
    return time.perf_counter() - wall, time.process_time() - cpu


def search(root: Root, narrow: Narrow, query: str) -> float:
    opts = TextOptions(query=query, regex=False, case_sensitive=True, path="", file_glob="*",
                       offset=0, limit=10_000, cap=1 << 30, file_limit=FILE_LIMIT,
                       budget=4 << 30)
    t = time.perf_counter()
    search_text(root, opts, NoControl(), narrow)
    return time.perf_counter() - t


def link_all(tree: Path, into: Path) -> int:
    n = 0
    for dirpath, _, files in os.walk(tree):
        rel = Path(dirpath).relative_to(tree)
        (into / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            src = Path(dirpath) / f
            if src.is_file() and not src.is_symlink():
                os.link(src, into / rel / f)
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--query", default="Invalid HTTP_HOST header")
    a = ap.parse_args()
    searcher.MAX_CPU_S = 600.0
    narrow_mod.REWALK = float("inf")  # each search timed as it is, none walking for its age
    tree = a.tree.resolve()
    root = secure_root(tree, max_read_bytes=FILE_LIMIT)
    state = Path(tempfile.mkdtemp(prefix="rewalk-bench-"))
    idx = TrigramIndex(str(state / "index" / "bench.trigram.sqlite3"))
    keeper = Keeper(idx)
    narrow = narrow_of(keeper, root, "bench")  # as the server narrows a call

    first = timed_build(keeper, root)
    timed_build(keeper, root)  # files too young to trust the first time
    again = [timed_build(keeper, root) for _ in range(a.runs)]
    wall, cpu = statistics.median(w for w, _ in again), statistics.median(c for _, c in again)
    print(f"build from nothing: {first[0]:.1f} s wall, {first[1]:.1f} s CPU")
    print(f"build that finds nothing changed (the build a search starts each minute): "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU (median of {a.runs}) = "
          f"{wall / first[0]:.3f} of the build from nothing")
    assert idx.watched and not idx.linked, "the tree already has hard links"
    plain = statistics.median(search(root, narrow, a.query) for _ in range(a.runs))
    links = Path(tempfile.mkdtemp(prefix="rewalk-links-", dir=tree.parent))
    try:
        n = link_all(tree, links)
        timed_build(keeper, root)  # the walk that finds them linked
        assert len(idx.linked) == keeper.last.files, (len(idx.linked), keeper.last.files)
        linked = statistics.median(search(root, narrow, a.query) for _ in range(a.runs))
        # The same search with a walk (a stat per file), as unwatched, and no build beside it.
        idx.watched, kick = False, keeper.kick
        # A stub over the method, put back after: mypy has no type for that but an ignore.
        keeper.kick = lambda *_: None  # type: ignore[method-assign]
        walked = statistics.median(search(root, narrow, a.query) for _ in range(a.runs))
        idx.watched, keeper.kick = True, kick  # type: ignore[method-assign]
    finally:
        shutil.rmtree(links)
    held = len(idx.linked)  # the files a search reads (the others denied or ignored)
    print(f"walk-less search {a.query!r}: no linked file {plain * 1000:.1f} ms; every one "
          f"of {held} files linked ({n} links made) {linked * 1000:.1f} ms (median of "
          f"{a.runs}) = {linked / plain:.1f}x; {(linked - plain) / held * 1e6:.1f} us per "
          f"linked file; the same search walking {walked * 1000:.1f} ms "
          f"(linked ÷ walked {linked / walked:.2f})")
    keeper.close()


if __name__ == "__main__":
    main()
