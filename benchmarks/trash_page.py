"""What one load of the owner's trash view costs, by how many items the trash holds.

    .venv/bin/python benchmarks/trash_page.py [--runs N] [--sizes 100,1000,5000,10000]

For each size, in a fresh temporary folder: a workspace root whose trash holds that many
items (half deletes, half kept versions of a small file), built directly with the trash's
own `Slot` (a stamp folder, its record, the item; no fsync, no server). Then the view's
work for that root (`app.ui.trash.usage`) and the page rendered from it, median over
`--runs` loads, twice: with this process's account of the trash current (as after the
serving process's own change: the size comes from the account, nothing is walked) and
stale (as after another process's change: the trash is walked to measure it). With the
entries listed and the records read during one load (the records stay at 100 whatever
the size), and the ratio of the two medians.
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

if __package__ in (None, ""):  # run as a script: make `app` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.change import inventory, ledger
from app.fs.change.inventory import stamps
from app.fs.change.layout import TRASH, bump_generation
from app.fs.change.trash import Slot
from app.security import DenyRules, Root
from app.security.policy import Recovery
from app.ui import trash
from app.ui.render import ENV
from app.ui.sessions import OwnerSession

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def make_root(folder: str) -> Root:
    return Root(name="bench", role="workspace", permissions=["read", "write", "delete"],
                real=os.path.realpath(folder), rules=DenyRules(), max_read_bytes=8 << 20,
                recovery=Recovery(keep_versions=True))


def fill(root: Root, count: int) -> None:
    """`count` items, 100 to a second: even ones deletes, odd ones versions."""
    for i in range(count):
        kind = "delete" if i % 2 == 0 else "version"
        name = f"f{i}.txt"
        slot = Slot(root, (name,), kind, START + timedelta(seconds=i // 100),
                    size=None if kind == "delete" else 12,
                    op="delete" if kind == "delete" else "write")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=slot.fd)
            os.write(fd, b"old content\n")
            os.close(fd)
        finally:
            slot.close()


def one_load(root: Root) -> tuple[float, int]:
    started = time.perf_counter()
    found = trash.usage(root)
    html = ENV.get_template("trash.html").render(
        session=OwnerSession(csrf="x", last=0.0), view="trash", usages=[found],
        shown=trash.SHOWN, max_days=trash.MAX_DAYS, max_walked=trash.MAX_WALKED,
        human=trash.human)
    return time.perf_counter() - started, len(html)


def loads(root: Root, runs: int) -> tuple[list[float], int, int, int]:
    """`runs` loads after a warm one: their times, the page's size, and the entries listed
    and records read by one load."""
    one_load(root)  # warm the caches the first load fills
    inventory.WORK.clear()
    times, page = [], 0
    for _ in range(runs):
        took, page = one_load(root)
        times.append(took)
    listed, records = (inventory.WORK[k] // runs for k in ("listed", "records"))
    return times, page, listed, records


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    args = parser.parse_args()
    print(f"{'items':>7} {'account':>8} {'load (median)':>14} {'min':>8} {'listed':>7} "
          f"{'records':>8} {'page':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        folder = tempfile.mkdtemp(prefix="loomfs-trash-page-")
        try:
            root = make_root(folder)
            fill(root, size)
            medians = {}
            for account in ("current", "stale"):
                trash_fd = root.open_subdir((TRASH,))
                try:
                    if account == "current":  # as after the serving process's own change
                        ledger.settle(root, stamps(trash_fd)[-1], "version")
                    else:  # as after another process's change
                        bump_generation(trash_fd)
                finally:
                    os.close(trash_fd)
                times, page, listed, records = loads(root, args.runs)
                medians[account] = statistics.median(times)
                print(f"{size:>7} {account:>8} {medians[account] * 1000:>11.1f} ms "
                      f"{min(times) * 1000:>5.1f} ms {listed:>7} {records:>8} {page:>7} B")
            print(f"{size:>7} stale/current: {medians['stale'] / medians['current']:.1f}x")
        finally:
            shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
