"""How much does a `*.py` search cost on the seed's tree, against two baselines?

    .venv/bin/python benchmarks/walk.py [--runs N]

Builds the seed's tree shape (24,300 files: 300 useful `.py` files under
`src/`, the rest under `.venv/` and `node_modules/`) in a temporary folder,
then times, in the same process and on the same warm cache:

- ours:  a `*.py` base-name search through `Walker.dirs()` (the walk the
         search tools use) on a `Root` with every built-in deny rule
         applied; also the same search over the per-entry API (`for e in
         Walker(...)`, one `WalkEntry` per entry) for comparison;
- glob:  the seed's "before": unpruned `Path.glob('**/*')`, then drop every
         path with a denied component, then match `*.py`;
- floor: a bare `os.scandir` breadth-first walk that prunes `.venv` and
         `node_modules` by name and does no other work (no sort, no deny
         rules, no handles, no name match) — nothing correct can be cheaper.

The fast variants run interleaved, round by round, so a load spike on a
shared machine hits them all alike. Prints each median (of `--runs` rounds, at
least 7) of wall time and of CPU time (steadier under load), and the ratios
ours/floor (target: within 2x) and glob/ours. Every variant must find the
same 300 files, or the script fails. The temporary tree is removed on exit;
the whole run takes well under a minute.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.security import DenyRules, Root, Walker
from benchmarks._trees import build_seed_tree, scandir_floor

PATTERN = "*.py"


def make_root(folder: str) -> Root:
    return Root(
        name="bench",
        role="reference",
        permissions=["read"],
        real=os.path.realpath(folder),
        rules=DenyRules(),
        max_read_bytes=1 << 20,
    )


def search_ours(root: Root) -> list[str]:
    match = re.compile(fnmatch.translate(PATTERN)).match
    found = []
    for d in Walker(root, ()).dirs():
        prefix = d.prefix
        for e in d.entries:
            if e.is_file(follow_symlinks=False) and match(e.name):
                found.append(prefix + e.name)
    return found


def search_ours_entries(root: Root) -> list[str]:
    match = re.compile(fnmatch.translate(PATTERN)).match
    return [e.path for e in Walker(root, ()) if e.kind == "file" and match(e.name)]


def search_glob(folder: Path, rules: DenyRules) -> list[str]:
    match = re.compile(fnmatch.translate(PATTERN)).match
    found = []
    for p in folder.glob("**/*"):
        rel = p.relative_to(folder).parts
        if rules.path(rel) is None and match(p.name) and p.is_file():
            found.append("/".join(rel))
    return found


def medians_ms(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, tuple[float, float]]:
    """name -> (median wall ms, median CPU ms), the variants interleaved round by round."""
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append((time.process_time() - c0) * 1000)
            wall[name].append((time.perf_counter() - w0) * 1000)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in fns}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=101, help="rounds of the fast variants (min 7)")
    parser.add_argument("--glob-runs", type=int, default=7, help="runs of the slow baseline")
    args = parser.parse_args(argv)
    runs = max(7, args.runs)
    glob_runs = max(7, args.glob_runs)

    tmp = tempfile.mkdtemp(prefix="loomfs-bench-")
    try:
        t0 = time.perf_counter()
        counts = build_seed_tree(tmp)
        built = time.perf_counter() - t0
        root = make_root(tmp)
        print(
            f"tree: {counts.files} files ({counts.useful} useful, {counts.noise} under "
            f".venv/node_modules), {counts.dirs} dirs, built in {built:.1f} s"
        )

        ours, glob = sorted(search_ours(root)), sorted(search_glob(Path(tmp), root.rules))
        per_entry = sorted(search_ours_entries(root))
        if len(ours) != counts.useful or ours != glob or ours != per_entry:
            print(f"FAIL: ours found {len(ours)}, glob found {len(glob)}", file=sys.stderr)
            return 1

        fast = medians_ms(
            {
                "floor": lambda: scandir_floor(tmp),
                "ours": lambda: search_ours(root),
                "entries": lambda: search_ours_entries(root),
            },
            runs,
        )
        slow = medians_ms({"glob": lambda: search_glob(Path(tmp), root.rules)}, glob_runs)
        m = {**fast, **slow}
        rows = [
            ("floor", "bare scandir BFS, prunes by name"),
            ("ours", "Walker.dirs(), every deny rule"),
            ("entries", "same, per-entry WalkEntry API"),
            ("glob", "Path.glob('**/*') then filter"),
        ]
        print(f"`{PATTERN}` search, median of {runs} rounds ({glob_runs} for glob):")
        print(f"  {'':8s} {'':34s} {'wall ms':>9s} {'cpu ms':>9s}")
        for key, label in rows:
            print(f"  {key:8s} {label:34s} {m[key][0]:9.2f} {m[key][1]:9.2f}")
        for i, kind in enumerate(("wall", "cpu")):
            print(
                f"{kind}: ours/floor = {m['ours'][i] / m['floor'][i]:.2f}x (target <= 2x), "
                f"entries/floor = {m['entries'][i] / m['floor'][i]:.2f}x, "
                f"glob/ours = {m['glob'][i] / m['ours'][i]:.0f}x"
            )
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
