"""What does an atomic, crash-safe `write_file` cost against plain writes?

    .venv/bin/python benchmarks/write_atomic.py [--runs N] [--writes W]

In a temporary folder (on the file system of the system temp dir), times
overwriting one existing file, for a small (4 KiB) and a large (1 MiB) content:

- ours:          `app.fs.change.write.write_file(..., overwrite=True)`: the choke point
                 (permission, deny, `open_parent`), lstat, temp file created
                 `O_EXCL|O_NOFOLLOW`, write, fchmod, fsync, the replaced file
                 linked into the trash (a stamp folder, its record, fsyncs; the
                 versions kept within `trash_max_bytes`), rename, directory
                 fsync, and the sha256 of the content for the result;
- no-versions:   the same with `keep_versions = false`: the price of keeping
                 every replaced version is ours/no-versions;
- fsync-inplace: `O_TRUNC` + write + fsync on the file itself: as durable, but a
                 crash or a reader mid-write sees a torn file;
- plain:         `Path.write_bytes`, no fsync: what a naive server does.

The three run interleaved, round by round (so a load spike hits them alike);
each round does `--writes` writes per variant. Prints the median (over
`--runs` rounds, at least 5) of the time per write, and the ratios
ours/fsync-inplace (the price of atomicity itself) and ours/plain. fsync
costs depend on the disk: compare ratios, not absolute times, across machines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `app` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.change.write import write_file
from app.security import DenyRules, Root
from app.security.policy import Recovery

SIZES = {"4 KiB": 4 << 10, "1 MiB": 1 << 20}


def make_root(folder: str, keep_versions: bool = True) -> Root:
    return Root(
        name="bench",
        role="workspace",
        permissions=["read", "write", "delete"],
        real=os.path.realpath(folder),
        rules=DenyRules(),
        max_read_bytes=8 << 20,
        # Bounded so a long run does not fill the disk: the trim is part of the price.
        recovery=Recovery(keep_versions=keep_versions, trash_max_bytes=64 << 20),
    )


def variants(folder: Path, root: Root, bare: Root,
             text: str) -> dict[str, Callable[[], None]]:
    data = text.encode()

    def ours() -> None:
        write_file(root, "ours.txt", text, overwrite=True)

    def no_versions() -> None:
        write_file(bare, "bare.txt", text, overwrite=True)

    def fsync_inplace() -> None:
        fd = os.open(folder / "inplace.txt", os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def plain() -> None:
        (folder / "plain.txt").write_bytes(data)

    return {"ours": ours, "no-versions": no_versions, "fsync-inplace": fsync_inplace,
            "plain": plain}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--writes", type=int, default=30)
    args = parser.parse_args()
    runs = max(5, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root, bare = make_root(tmp), make_root(tmp, keep_versions=False)
        for label, size in SIZES.items():
            text = "x" * size
            fns = variants(folder, root, bare, text)
            for fn in fns.values():  # warm-up: create the files, first-call imports
                fn()
            times: dict[str, list[float]] = {name: [] for name in fns}
            for _ in range(runs):
                for name, fn in fns.items():
                    start = time.perf_counter()
                    for _ in range(args.writes):
                        fn()
                    times[name].append((time.perf_counter() - start) / args.writes)
            med = {name: statistics.median(t) for name, t in times.items()}
            assert (folder / "ours.txt").read_text() == text
            assert not [n for n in os.listdir(folder) if n.startswith(".mcp-tmp-")]
            print(f"{label}: median per write over {runs} rounds x {args.writes} writes")
            for name, value in med.items():
                print(f"  {name:14s} {value * 1e3:8.3f} ms")
            print(f"  ratio ours/no-versions {med['ours'] / med['no-versions']:.2f}x, "
                  f"ours/fsync-inplace {med['ours'] / med['fsync-inplace']:.2f}x, "
                  f"ours/plain {med['ours'] / med['plain']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
