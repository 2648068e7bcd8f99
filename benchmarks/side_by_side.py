"""Read, search (a scan and through the index) and write: this code against a baseline
commit, in one run, for a change that must make none of them slower.

    .venv/bin/python benchmarks/side_by_side.py [--base REF] [--runs 5] [--files 2000]

Builds one tree (`--files` text files of about 4 KB in folders of 50, a rare literal in
1 of 100), then runs, `--runs` times and interleaved, a fresh child process with the code
of this worktree and one with the code of `--base` (a `git archive` of that commit in a
temporary folder). Each child builds a `Root` with the built-in deny rules on the
tree and times, in process: 300 `read_text_file` of one file; 5 `search_text` of the
literal with no index (a scan of every file); the index's build, then 20 `search_text`
through it (`narrow_of`, as the server narrows a call; its clock is set 60 s ahead, so
no file is too young to trust); 100 `write_file` replacing one file. Prints each
side's median of the per-call medians, and the median of the per-round ratios
this / base (a ratio within a round: the load then fell on both alike).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._base import REPO, baseline

LITERAL = "zqxjvorpal"
WORDS = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on",
         "be", "by", "this", "are", "from", "or", "have"]

CHILD = """
import json, sys, time, statistics
sys.path.insert(0, {src!r})
from app.corpus.trigram import narrow_of
from app.fs.control import NoControl
from app.fs.change.write import write_file
from app.fs.reading.read import read_text_file
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security import DenyRules
try:  # the names of this tree; a base from before the index packages and Root has its own
    from app.fs.index.trigrams.narrow import Keeper
    from app.fs.index.trigrams.trigram import TrigramIndex
except ImportError:
    from app.fs.index.narrow import Keeper
    from app.fs.index.trigram import TrigramIndex
try:
    from app.security import Root
except ImportError:
    from app.security import SecureRoot as Root

root = Root(name="b", role="workspace", permissions=["read", "write"],
            real={tree!r}, rules=DenyRules(), max_read_bytes=1 << 20)


def med(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def opts():
    return TextOptions(query={literal!r}, path="", file_glob="*", offset=0, limit=10_000,
                       cap=1 << 30, file_limit=1 << 20, budget=1 << 32)


def search(narrow=None):
    r = search_text(root, opts(), NoControl(), narrow)
    assert len(r.matches) == {hits}, (len(r.matches), r.note)


out = {{}}
out["read"] = med(lambda: read_text_file(root, "d0/f0.txt", start=1, end=200, tail=None,
                                         cap=100_000), 300)
out["search, scan"] = med(search, 5)
idx = TrigramIndex({state!r} + "/t.trigram.sqlite3")
keeper = Keeper(idx, now=lambda: time.time_ns() + 60_000_000_000)
narrow = narrow_of(keeper, root, "rules")
keeper.kick(root, "rules")
built = keeper.wait()
assert built.complete, built
out["search, index"] = med(lambda: search(narrow), 20)
body = "x" * 4000 + "\\n"
out["write"] = med(lambda: write_file(root, "w/one.txt", body, overwrite=True), 100)
print(json.dumps(out))
"""


def build(top: Path, files: int) -> int:
    """The tree; how many files hold the literal."""
    rng = random.Random(7)
    hits = 0
    for i in range(files):
        folder = top / f"d{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choices(WORDS, k=12)) for _ in range(60)]
        if i % 100 == 7:
            lines[30] += " " + LITERAL
            hits += 1
        (folder / f"f{i % 50}.txt").write_text("\n".join(lines) + "\n")
    (top / "w").mkdir()
    (top / "w" / "one.txt").write_text("first\n")
    return hits


def run(src: str, tree: str, hits: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="loomfs-side-state-") as state:
        code = CHILD.format(src=src, tree=tree, state=state, literal=LITERAL, hits=hits)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=1800, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="HEAD", help="the commit to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=2000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loomfs-side-") as tmp:
        tree = os.path.join(tmp, "tree")
        hits = build(Path(tree), args.files)
        sides = {"this": REPO, "base": baseline(args.base, os.path.join(tmp, "base"))}
        got: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
        for _ in range(args.runs):
            for side, src in sides.items():
                got[side].append(run(src, tree, hits))
    print(f"{args.files} files, {hits} with the literal; medians of {args.runs} rounds, "
          f"interleaved; base {args.base}")
    print(f"{'per call':16} {'this ms':>10} {'base ms':>10} {'this/base':>10}")
    for what in got["this"][0]:
        a = statistics.median(r[what] for r in got["this"])
        b = statistics.median(r[what] for r in got["base"])
        pairs = zip(got["this"], got["base"], strict=True)
        ratio = statistics.median(t[what] / s[what] for t, s in pairs)
        print(f"{what:16} {a:10.3f} {b:10.3f} {ratio:10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
