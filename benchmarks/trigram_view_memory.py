"""Bytes of memory the trigram index's in-memory view costs per file.

    .venv/bin/python benchmarks/trigram_view_memory.py [--files N]

Publishes N synthetic entries (paths like a source tree's: folders 3 deep, names of 8-20
characters; signatures as `stat` gives them: nanosecond times, large inodes) into a
`TrigramIndex`, in batches as a build commits them, and reports what `tracemalloc` counts
as still allocated once the entries given to it are let go, per file. No file is made:
the view is what is measured.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import tracemalloc

from app.fs.index.trigrams.trigram import TEXT, WHOLE, TrigramIndex


def entries(n: int, seed: int = 7) -> list[tuple[str, tuple[int, int, int, int], int, int]]:
    rnd = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz_"
    now = time.time_ns()
    out = []
    for i in range(n):
        folder = "/".join(f"pkg{rnd.randrange(40)}" for _ in range(3))
        name = "".join(rnd.choices(letters, k=rnd.randrange(8, 20))) + f"{i}.py"
        sig = (rnd.randrange(1, 1 << 20), now - rnd.randrange(1 << 50),
               now - rnd.randrange(1 << 50), rnd.randrange(1 << 30, 1 << 40))
        out.append((f"{folder}/{name}", sig, i + 1, WHOLE if i % 500 == 0 else TEXT))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200_000)
    n = ap.parse_args().files
    with tempfile.TemporaryDirectory() as tmp:
        idx = TrigramIndex(f"{tmp}/r.trigram.sqlite3")
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        made = entries(n)  # traced: what the view keeps of them counts
        for k in range(0, n, 5_000):  # a build's batches
            idx.publish({p: (sig, fid, state) for p, sig, fid, state in made[k:k + 5_000]})
        del made  # what the view holds of the paths is its own
        used = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
    print(f"{n} files: {used / n:.0f} B per file, {used / (1 << 20):.1f} MiB")


if __name__ == "__main__":
    main()
