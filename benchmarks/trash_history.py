"""Does a change cost more when the trash behind it is long, and what does the trash take?

    .venv/bin/python benchmarks/trash_history.py [--runs N] [--writes W] [--sizes 0,1000,...]

For each history size (default 0, 1,000, 10,000 and 50,000 versions), in a fresh
temporary folder (on the file system of the system temp dir): a workspace root whose
trash already holds that many kept versions of a small file, built directly with the
trash's own `Slot` (a stamp folder, its record, the item; no fsync, no server), with
`trash_max_items` = history + 1 so that every measured write also trims one version.
Then:

- first: the first overwrite after start, which lists the trash once (the account of
  app.fs.change.ledger is built);
- write: `write_file(overwrite=true)` of a 1-byte file with its version kept, median over
  `--runs` rounds of `--writes` writes;
- copy: `copy_file(overwrite=true)` of that file over another, its version kept (so it
  trims one too), median over the same rounds, `--writes` copies a round;
- trim: the `settle` inside each of those writes alone (account the version, remove the
  oldest), same medians;
- CPU: the same two in this process's CPU time (`process_time`), which the disk's fsync
  waits and other processes' load do not inflate as much as the wall clock;
- listed: trash entries listed and records read during the measured writes (zero: the
  account is the list).

Ratios are against a root with no history whose rounds are interleaved with each size's
(a load spike hits both alike). Last, the trash's real disk
use after `--loop` overwrites of an empty file 60 folders deep (blocks * 512 and inodes,
`du`'s way, counting each inode once) beside the root's `trash_max_bytes` and
`trash_max_items`. fsync costs depend on the disk: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.change import inventory, versions
from app.fs.change.copy import copy_file
from app.fs.change.trash import Slot
from app.fs.change.write import write_file
from app.security import DenyRules, Root
from app.security.policy import Recovery

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def make_root(folder: str, items: int, max_bytes: int = 1 << 40) -> Root:
    return Root(
        name="bench",
        role="workspace",
        permissions=["read", "write", "delete"],
        real=os.path.realpath(folder),
        rules=DenyRules(),
        max_read_bytes=8 << 20,
        recovery=Recovery(keep_versions=True, trash_max_bytes=max_bytes,
                          trash_max_items=items),
    )


def build_history(root: Root, count: int) -> None:
    """`count` versions of `f.txt`, 1,000 to a second, the way a kept version is laid out."""
    for i in range(count):
        slot = Slot(root, ("f.txt",), "version", START + timedelta(seconds=i // 1000), size=1,
                    op="write")
        try:
            fd = os.open(slot.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600,
                         dir_fd=slot.fd)
            os.write(fd, b"x")
            os.close(fd)
        finally:
            slot.close()


class Timed:
    """`versions.settle` with its time taken per call."""

    def __init__(self) -> None:
        self.real = versions.settle
        self.seconds: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, *args: Any) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        self.real(*args)
        self.seconds.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)


class Case:
    """A root whose trash holds `size` versions, ready for measured writes."""

    def __init__(self, size: int, timed: Timed) -> None:
        self.folder = tempfile.mkdtemp(prefix="trash-history-")
        self.root = make_root(self.folder, items=size + 1)
        self.timed = timed
        Path(self.folder, "f.txt").write_text("x")
        Path(self.folder, "g.txt").write_text("x")
        build_history(self.root, size)
        t0 = time.perf_counter()
        write_file(self.root, "f.txt", "y", overwrite=True)
        self.first = time.perf_counter() - t0
        self.per_write: list[float] = []
        self.per_copy: list[float] = []
        self.per_trim: list[float] = []
        self.cpu_write: list[float] = []
        self.cpu_trim: list[float] = []

    def round(self, writes: int) -> None:
        self.timed.seconds.clear()
        self.timed.cpu.clear()
        t0, c0 = time.perf_counter(), time.process_time()
        for w in range(writes):
            write_file(self.root, "f.txt", str(w % 10), overwrite=True)
        self.per_write.append((time.perf_counter() - t0) / writes)
        self.cpu_write.append((time.process_time() - c0) / writes)
        self.per_trim.append(statistics.median(self.timed.seconds))
        self.cpu_trim.append(statistics.median(self.timed.cpu))
        t0 = time.perf_counter()
        for _ in range(writes):
            copy_file(self.root, "f.txt", self.root, "g.txt", overwrite=True)
        self.per_copy.append((time.perf_counter() - t0) / writes)

    def entries(self) -> int:
        return sum(1 for _ in os.scandir(os.path.join(self.folder, ".mcp-trash")))


def measure(size: int, runs: int, writes: int) -> dict[str, float]:
    """`size` against an empty history, round by round interleaved (a load spike hits
    both alike)."""
    timed = Timed()
    versions.settle = timed  # type: ignore[assignment]
    cases: list[Case] = []
    try:
        cases = [Case(0, timed), Case(size, timed)]
        inventory.WORK.clear()
        for r in range(runs):
            for case in cases if r % 2 else cases[::-1]:  # neither always goes first
                case.round(writes)
        base, hist = (statistics.median(c.per_write) for c in cases)
        base_trim, hist_trim = (statistics.median(c.per_trim) for c in cases)
        base_copy, hist_copy = (statistics.median(c.per_copy) for c in cases)
        cpu = [statistics.median(c.cpu_write) for c in cases]
        cpu_trim = [statistics.median(c.cpu_trim) for c in cases]
        return {"first": cases[1].first, "write": hist, "trim": hist_trim,
                "write_x": hist / base, "copy": hist_copy, "copy_x": hist_copy / base_copy,
                "trim_x": hist_trim / base_trim,
                "cpu": cpu[1], "cpu_x": cpu[1] / cpu[0], "cpu_trim": cpu_trim[1],
                "cpu_trim_x": cpu_trim[1] / cpu_trim[0],
                "listed": inventory.WORK["listed"] + inventory.WORK["records"],
                "left": cases[1].entries()}
    finally:
        versions.settle = timed.real
        for case in cases:
            shutil.rmtree(case.folder, ignore_errors=True)


def disk_use(folder: str) -> tuple[int, int]:
    """Bytes (blocks * 512) and inodes under `folder`, each inode counted once."""
    seen: set[int] = set()
    blocks = 0
    for top, dirs, files in os.walk(folder):
        for name in (top, *(os.path.join(top, n) for n in (*dirs, *files))):
            st = os.lstat(name)
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                blocks += st.st_blocks * 512
    return blocks, len(seen)


def deep_loop(loops: int, max_bytes: int, max_items: int) -> None:
    folder = tempfile.mkdtemp(prefix="trash-deep-")
    try:
        root = make_root(folder, items=max_items, max_bytes=max_bytes)
        deep = "/".join(["d"] * 60)
        os.makedirs(os.path.join(folder, deep))
        Path(folder, deep, "e.txt").write_text("")
        for _ in range(loops):
            write_file(root, f"{deep}/e.txt", "", overwrite=True)
        taken, inodes = disk_use(os.path.join(folder, ".mcp-trash"))
        print(f"\n{loops} overwrites of an empty file 60 folders deep: the trash takes "
              f"{taken} bytes on disk and {inodes} inodes; trash_max_bytes {max_bytes}, "
              f"trash_max_items {max_items}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="rounds per history size (min 3)")
    p.add_argument("--writes", type=int, default=20, help="writes per round")
    p.add_argument("--sizes", default="0,1000,10000,50000", help="versions already kept")
    p.add_argument("--loop", type=int, default=345, help="overwrites of the deep file")
    args = p.parse_args()
    runs = max(args.runs, 3)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'history':>8} {'first ms':>9} {'write ms':>9} {'trim ms':>8} {'write x':>8} "
          f"{'trim x':>7} {'copy ms':>8} {'copy x':>7} {'CPU write ms':>13} {'x':>6} "
          f"{'CPU trim ms':>12} {'x':>6} "
          f"{'listed':>7} {'trash entries':>14}")
    for size in sizes:
        got = measure(size, runs, args.writes)
        print(f"{size:>8} {got['first'] * 1e3:9.2f} {got['write'] * 1e3:9.2f} "
              f"{got['trim'] * 1e3:8.3f} {got['write_x']:7.2f}x {got['trim_x']:6.2f}x "
              f"{got['copy'] * 1e3:8.2f} {got['copy_x']:6.2f}x "
              f"{got['cpu'] * 1e3:13.3f} {got['cpu_x']:5.2f}x {got['cpu_trim'] * 1e3:12.3f} "
              f"{got['cpu_trim_x']:5.2f}x {int(got['listed']):>7} {int(got['left']):>14}",
              flush=True)
    print(f"(medians of {runs} rounds of {args.writes} writes; x: against a root with no "
          "history, its rounds interleaved with these in the same run)")
    deep_loop(args.loop, max_bytes=1 << 20, max_items=10_000)


if __name__ == "__main__":
    main()
