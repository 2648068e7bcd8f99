"""Memory of reading a window near the start, and the tail, of a 2 GB file.

    .venv/bin/python benchmarks/read_memory.py [--size-gb N] [--runs N]

Creates a sparse file (text at its start and its end, a hole of zeros in
between, so it takes no disk) and reads, through `app.fs.reading.read.read_text_file`
on a root with the largest default budget (`max_read_bytes` = 8 MiB):

- a window: lines 1000-1299 (the tool's default window size);
- a tail: the last 300 lines.

Each read runs in a fresh child process, which resets its peak resident set
size (Linux: `/proc/self/clear_refs`), reads, and reports its peak (`VmHWM`)
minus its resident size before the read: the growth is what the read cost.
It also reports the read's peak Python allocations (tracemalloc). Prints
the median growth of `--runs` children per case (target: under 64 MB) and
its ratio to the file size and to the budget, and times each read (median)
in process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))



class Window(TypedDict):
    """read_text_file's window arguments."""

    start: int
    end: int
    tail: int | None


class Sample(TypedDict):
    """What a child reports (the JSON line CHILD prints)."""

    growth_kb: int
    traced: int
    lines: int
    first: str


BUDGET = 8 << 20
CASES: dict[str, Window] = {"window": {"start": 1000, "end": 1299, "tail": None},
                            "tail": {"start": 1, "end": 1, "tail": 300}}

CHILD = """
import json, sys, tracemalloc
sys.path.insert(0, {repo!r})
from app.fs.reading.read import read_text_file
from app.security import DenyRules, Root


def status(key):
    with open("/proc/self/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])  # kB


root = Root(name="bench", role="workspace", permissions=["read"], real={folder!r},
                  rules=DenyRules(), max_read_bytes={budget})
# Warm up on a small file, so that imports and first-call allocations are in the baseline.
read_text_file(root, "small.txt", start=1, end=10, tail=None, cap=65536)
# Reset the peak (VmHWM) to the current RSS, so the peak after the read is the read's own.
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = status("VmRSS")
tracemalloc.start()
r = read_text_file(root, "huge.log", cap=65536, **{kwargs!r})
traced = tracemalloc.get_traced_memory()[1]
peak = status("VmHWM")
print(json.dumps({{"growth_kb": peak - before, "traced": traced,
                  "lines": r.content.count("\\n") + 1, "first": r.content.split("\\n")[0]}}))
"""


def make_file(folder: Path, size: int) -> None:
    head = "".join(f"head line {i:07d}\n" for i in range(1, 20_001)).encode()
    tail = "".join(f"tail line {i:07d}\n" for i in range(1, 20_001)).encode()
    with open(folder / "huge.log", "wb") as f:
        f.write(head)
        f.truncate(size - len(tail))
        f.seek(0, os.SEEK_END)
        f.write(tail)
    (folder / "small.txt").write_text("a\nb\n")


def measure(folder: Path, kwargs: Window) -> Sample:
    repo = str(Path(__file__).resolve().parent.parent)
    code = CHILD.format(repo=repo, folder=str(folder), budget=BUDGET, kwargs=kwargs)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    runs = max(7, args.runs)
    size = int(args.size_gb * (1 << 30))
    with tempfile.TemporaryDirectory(prefix="loomfs-mem-") as tmp:
        folder = Path(tmp)
        make_file(folder, size)
        print(f"file: {size / (1 << 30):.2f} GiB sparse, budget (max_read_bytes) "
              f"{BUDGET >> 20} MiB")
        from app.fs.reading.read import read_text_file
        from app.security import DenyRules, Root

        root = Root(name="bench", role="workspace", permissions=["read"], real=str(folder),
                          rules=DenyRules(), max_read_bytes=BUDGET)
        for name, kwargs in CASES.items():
            samples = [measure(folder, kwargs) for _ in range(runs)]
            growth = statistics.median(s["growth_kb"] * 1024 for s in samples)
            traced = statistics.median(s["traced"] for s in samples)
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                read_text_file(root, "huge.log", cap=65536, **kwargs)
                times.append(time.perf_counter() - t0)
            first = samples[0]
            print(f"{name}: {first['lines']} lines from {first['first']!r}")
            print(f"  peak RSS growth median {growth / 1e6:6.2f} MB (target < 64 MB); "
                  f"growth / file size = {growth / size:.6f}; growth / budget = "
                  f"{growth / BUDGET:.3f}")
            print(f"  peak Python allocations (tracemalloc) median {traced / 1e6:6.2f} MB; "
                  f"time median {statistics.median(times) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
