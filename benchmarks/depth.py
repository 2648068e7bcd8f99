"""What a folder copy costs per level of depth: CPU time and folders opened.

    .venv/bin/python benchmarks/depth.py [--runs N] [--depths 10 32 64]

For each depth d a chain `src/d0/d1/…` of d - 2 folders with one small file in
each (so the copy's deepest entry, `dst/d0/…/f.txt`, lies d levels below the root)
is copied with `copy_file` (the same function the tool calls), within one root
through the component walk (so every folder opened is an `os.open`, counted),
`--runs` times; each run's copy is removed before the next. Prints the median
CPU time per level, the folders opened per level, and both as a ratio against the
first depth measured in the same run: a copy linear in what it visits keeps
them flat (the code before opened every folder again from the copy's top for
every level below it, d²/2 opens per side). The deepest depth defaults to
MAX_DEPTH, the deepest tree the server lets an agent build.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.change.copy import copy_file
from app.security.deny import DenyRules
from app.security.paths import MAX_DEPTH
from app.security.resolve import Root


def _root(top: Path) -> Root:
    root = Root(name="bench", role="workspace", permissions=["read", "write"],
                      real=str(top), rules=DenyRules(), max_read_bytes=1 << 20, audit=None)
    root._use_openat2 = False  # the component walk: every folder opened is an os.open
    return root


def _chain(top: Path, folders: int) -> None:
    here = top / "src"
    for i in range(folders):
        here = here / f"d{i}"
        here.mkdir(parents=True)
        (here / "f.txt").write_text(f"{i}\n")


def measure(depth: int, runs: int) -> tuple[float, float]:
    """(median CPU seconds, median folders opened) of copying a chain `depth` deep."""
    real_open = os.open
    opened = [0]

    def counting(path: Any, flags: int, *a: Any, **kw: Any) -> int:
        if flags & os.O_DIRECTORY:
            opened[0] += 1
        return real_open(path, flags, *a, **kw)

    cpu: list[float] = []
    opens: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        _chain(top, depth - 2)
        root = _root(top)
        for _ in range(runs):
            opened[0] = 0
            os.open = counting  # counted for this copy only
            try:
                start = time.process_time()
                out = copy_file(root, "src", root, "dst")
                cpu.append(time.process_time() - start)
            finally:
                os.open = real_open
            assert out.files == depth - 2 and not out.truncated
            opens.append(opened[0])
            subprocess.run(["rm", "-rf", str(top / "dst")], check=True)
    return statistics.median(cpu), statistics.median(opens)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 32, MAX_DEPTH])
    args = parser.parse_args(argv)
    print(f"copy_file of a chain d levels deep, one file per level; median of {args.runs}")
    print(f"{'depth':>5}  {'ms/level':>9}  {'ratio':>6}  {'opens/level':>11}  {'ratio':>6}")
    base: tuple[float, float] | None = None
    for depth in args.depths:
        cpu, opens = measure(depth, args.runs)
        per = (cpu / depth, opens / depth)
        base = base or per
        print(f"{depth:>5}  {per[0] * 1000:>9.3f}  {per[0] / base[0]:>6.2f}  "
              f"{per[1]:>11.2f}  {per[1] / base[1]:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
