"""The trigram index's build from nothing, this code against a baseline commit, in one run.

    .venv/bin/python benchmarks/trigram_build.py --tree DIR [--base REF] [--runs 5]
        [--query TEXT ...]

Each run is a fresh child process with the code of this worktree or of `--base` (a
`git archive` of that commit in a temporary folder), the two interleaved: it builds the
index of DIR (a root of role `reference`, `max_read_bytes` 8 MiB) from nothing in a state
directory of its own and reports the build's wall and CPU seconds, the index's bytes on
disk, the child's peak resident growth (`VmHWM` minus the size before), and the median
time of 20 askings of the index for each `--query` (`TrigramIndex.matching`: SQLite only,
no file read). Prints the medians of `--runs` per side and the ratio this / base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._base import REPO, baseline

QUERIES = ["def __init__(self", "Invalid HTTP_HOST header", "import"]

CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
from app.fs.index.trigrams.grams import plan
from app.fs.index.trigrams.narrow import Keeper
from app.fs.index.trigrams.trigram import TrigramIndex
from app.registry import Registry


def status(key):
    with open("/proc/self/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])


cfg = {state!r} + "/cfg.toml"
with open(cfg, "w") as f:
    f.write(f'audit_log = "{state}/audit.log"\\n[[roots]]\\nname = "t"\\npath = "{tree}"\\n'
            f'role = "reference"\\nmax_read_bytes = 8388608\\n')
root = Registry(cfg, audit=False).current.root("t")
idx = TrigramIndex({state!r} + "/index/t.trigram.sqlite3")
keeper = Keeper(idx, now=lambda: time.time_ns() + 10_000_000_000)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS")
w0, c0 = time.perf_counter(), time.process_time()
keeper.kick(root, "rules")
got = keeper.wait()
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
assert got.error is None and got.complete, got
asked = {{}}
for q in {queries!r}:
    expr = plan([q], False)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        n = len(idx.matching(expr)[0])
        times.append(time.perf_counter() - t)
    times.sort()
    asked[q] = [times[10] * 1000, n]
print(json.dumps({{"wall": wall, "cpu": cpu, "bytes": idx.size(), "files": got.indexed,
                   "growth": (status("VmHWM") - before) / 1024, "asked": asked}}))
"""


def run(src: str, tree: str, queries: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="loomfs-trigram-build-") as state:
        code = CHILD.format(src=src, state=state, tree=tree, queries=queries)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=3600, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    got: dict = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", required=True, type=Path)
    ap.add_argument("--base", default="HEAD", help="the commit to compare with")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--query", action="append", help="strings the index is asked for")
    args = ap.parse_args(argv)
    tree, queries = os.path.realpath(args.tree), args.query or QUERIES
    with tempfile.TemporaryDirectory(prefix="loomfs-trigram-base-") as tmp:
        sides = {"this": REPO, "base": baseline(args.base, tmp)}
        got: dict[str, list[dict]] = {"this": [], "base": []}
        for _ in range(args.runs):
            for side, src in sides.items():
                got[side].append(run(src, tree, queries))
    med = {side: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "bytes",
                                                                      "growth")}
           for side, rs in got.items()}
    print(f"tree {tree}: {got['this'][0]['files']} files indexed; medians of {args.runs}, "
          f"interleaved; base {args.base}")
    print(f"{'':24} {'this':>12} {'base':>12} {'this/base':>10}")
    for k, label in (("wall", "build wall s"), ("cpu", "build CPU s"),
                     ("bytes", "index bytes"), ("growth", "peak growth MiB")):
        a, b = med["this"][k], med["base"][k]
        print(f"{label:24} {a:12.2f} {b:12.2f} {a / b if b else float('nan'):10.3f}")
    for q in queries:
        a = statistics.median(r["asked"][q][0] for r in got["this"])
        b = statistics.median(r["asked"][q][0] for r in got["base"])
        n = got["this"][-1]["asked"][q][1], got["base"][-1]["asked"][q][1]
        print(f"ask {q[:19]!r:24} {a:10.2f}ms {b:10.2f}ms {a / b if b else float('nan'):10.3f}"
              f"  files {n[0]} / {n[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
