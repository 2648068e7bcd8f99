"""What ripgrep's reading of `\\w` and paging by cursor cost the searches, on a ~50 MB tree.

    .venv/bin/python benchmarks/search_parity.py [--runs N] [--files N] [--pages-only]

The tree is `search_text.py`'s (5,000 text files, ~50 MB, 200 binaries). Medians of N
runs, interleaved, CPU seconds of this process:

- `\\w` as ripgrep reads it (Unicode, `app.fs.search.unicode`) against RE2's ASCII `\\w`
  (the rewrite switched off), for `def \\w+\\(`-like patterns, and `rg -j1` on the same
  pattern; each answer checked against rg's first (same `(path, line)` set).
- Every page of an unselective `count` answer (limit 100 files a page): walked by
  `cursor` (each page resumes where the last stopped) and by `offset` (each page
  searches again from the start), with the number of calls; both lists must be equal.
- The same for every page of `search_files('*')` (limit 100 entries a page): by cursor
  each page matches only the entries from its cursor on (the walk still lists every
  folder), by offset each page matches every entry again from the start.

`--pages-only` measures the pages alone (no rg needed).
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.control import NoControl
from app.fs.search import regex as regex_mod
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.security import Root
from benchmarks.search_text import FILE_LIMIT, _cpu, build, make_root

PATTERNS = [r"the \w+ of", r"\w+_\w+", r"\b(value|error)\b \w+ root\b", r"^\w+ \d"]


def _opts(query: str, **kw: Any) -> TextOptions:
    args: dict[str, Any] = dict(limit=10_000_000, cap=1 << 30, file_limit=FILE_LIMIT,
                                budget=1 << 30, regex=True)
    args.update(kw)
    return TextOptions(query=query, **args)


def hits(root: Root, query: str) -> set[tuple[str, int]]:
    r = search_text(root, _opts(query), NoControl())
    assert not r.truncated, r.note
    return {(m.path, m.line) for m in r.matches or []}


def rg_hits(rg: str, folder: Path, query: str) -> set[tuple[str, int]]:
    out = subprocess.run([rg, "--no-config", "-j1", "--no-ignore", "--max-filesize", "1M",
                          "-n", "--no-heading", "-H", "-e", query, "."], cwd=folder,
                         capture_output=True, check=False).stdout.decode()
    return {(p.removeprefix("./"), int(n)) for p, n, _ in
            (row.split(":", 2) for row in out.splitlines())}


def pages(root: Root, query: str, by_cursor: bool) -> tuple[list[Any], int]:
    items: list[Any] = []
    kw: dict[str, Any] = {}
    calls = 0
    while True:
        r = search_text(root, _opts(query, regex=False, output_mode="count", limit=100, **kw),
                        NoControl())
        calls += 1
        items += r.counts or []
        if not r.has_more:
            return items, calls
        kw = {"cursor": r.next_cursor} if by_cursor else {"offset": r.next_offset}


def file_pages(root: Root, by_cursor: bool) -> tuple[list[str], int]:
    paths: list[str] = []
    kw: dict[str, Any] = {}
    calls = 0
    while True:
        r = search_files(root, FilesOptions(pattern="*", limit=100, cap=1 << 22, **kw),
                         NoControl())
        calls += 1
        paths += [m.path for m in r.matches]
        if not r.has_more:
            return paths, calls
        kw = {"cursor": r.next_cursor} if by_cursor else {"offset": r.next_offset}


def median_cpu(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for key, fn in fns.items():
            c0 = _cpu()
            fn()
            cpu[key].append(_cpu() - c0)
    return {k: statistics.median(v) for k, v in cpu.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--pages-only", action="store_true")
    a = ap.parse_args()
    rg = shutil.which("rg")
    assert rg is not None or a.pages_only, "ripgrep is needed"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder, a.files)
        root = make_root(folder)
        unicode = regex_mod.unicode_pattern
        for query in [] if a.pages_only else PATTERNS:
            assert rg is not None
            if hits(root, query) != rg_hits(rg, folder, query):
                print(f"{query}: not rg's answer")
                return 1

            def ascii_w(q: str = query) -> object:
                regex_mod.unicode_pattern = lambda p: p
                try:
                    return hits(root, q)
                finally:
                    regex_mod.unicode_pattern = unicode

            t = median_cpu({"unicode": functools.partial(hits, root, query), "ascii": ascii_w,
                            "rg": functools.partial(rg_hits, rg, folder, query)}, a.runs)
            print(f"{query:24} unicode {t['unicode']:.3f} s  ascii {t['ascii']:.3f} s  "
                  f"rg -j1 {t['rg']:.3f} s  unicode/ascii {t['unicode'] / t['ascii']:.2f}  "
                  f"unicode/rg {t['unicode'] / t['rg']:.2f}")
        by_cursor, n_cursor = pages(root, "the", True)
        by_offset, _ = pages(root, "the", False)
        assert by_cursor == by_offset, "the two pagings differ"
        t = median_cpu({"cursor": lambda: pages(root, "the", True),
                        "offset": lambda: pages(root, "the", False)}, a.runs)
        print(f"count of 'the', {len(by_cursor)} files in {n_cursor} pages: by cursor "
              f"{t['cursor']:.3f} s, by offset {t['offset']:.3f} s "
              f"(offset/cursor {t['offset'] / t['cursor']:.1f})")
        by_cursor_f, n_files = file_pages(root, True)
        assert by_cursor_f == file_pages(root, False)[0], "the two pagings differ"
        t = median_cpu({"cursor": lambda: file_pages(root, True),
                        "offset": lambda: file_pages(root, False)}, a.runs)
        print(f"search_files('*'), {len(by_cursor_f)} entries in {n_files} pages: by cursor "
              f"{t['cursor']:.3f} s, by offset {t['offset']:.3f} s "
              f"(offset/cursor {t['offset'] / t['cursor']:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
