"""What one load of the owner's trash view costs, by how many items the trash holds.

    .venv/bin/python benchmarks/trash_page.py [--runs N] [--sizes 100,1000,5000,10000]

For each size, in a fresh temporary folder: a workspace root whose trash holds that many
items (half deletes, half kept versions of a small file), built directly with the trash's
own `Slot` (a stamp folder, its record, the item; no fsync, no server). Then the view's
work for that root (`app.ui.trash.usage`: the walk that measures the trash, the listing,
the newest 100 items, the split, `dropped.json`) and the page rendered from it, median
over `--runs` loads, with the entries listed and the records read during one load (the
records stay at 100 whatever the size: only the walk grows with the trash).
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

from app.fs.change import inventory
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sizes", default="100,1000,5000,10000")
    args = parser.parse_args()
    print(f"{'items':>7} {'load (median)':>14} {'min':>8} {'listed':>7} {'records':>8} "
          f"{'page':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        folder = tempfile.mkdtemp(prefix="loomfs-trash-page-")
        try:
            root = make_root(folder)
            fill(root, size)
            one_load(root)  # warm the caches the first load fills
            inventory.WORK.clear()
            times, page = [], 0
            for _ in range(args.runs):
                took, page = one_load(root)
                times.append(took)
            listed, records = (inventory.WORK[k] // args.runs for k in ("listed", "records"))
            print(f"{size:>7} {statistics.median(times) * 1000:>11.1f} ms "
                  f"{min(times) * 1000:>5.1f} ms {listed:>7} {records:>8} {page:>7} B")
        finally:
            shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
