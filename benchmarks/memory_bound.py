"""Memory bound: the server's peak RSS stays flat while it scans more than it holds.

    .venv/bin/python benchmarks/memory_bound.py [--tree-mib 160] [--budget-mib 64]

Runs the console script over HTTP as a subprocess (so /proc/PID/status is the
server's) with two roots in a temporary folder:

- `tree` (reference): `--tree-mib` MiB of text in 256 KiB files, more than
  the search byte budget (`max_search_bytes = --budget-mib`). A `search_text`
  for a string that is nowhere scans until the budget stops it (the answer
  must say `truncated: true`); then a search narrowed by `file_glob` that
  finds one line per file.
- `big` (workspace, 8 MiB `max_read_bytes`): a 2 GiB sparse file, text in its
  first and last MiB and a hole (NUL bytes) between. Windows read: the head,
  lines 10,000-10,300, a `tail`, and a window past the text (which must be
  refused with the read limit named in the error: the file is never loaded).

For each phase prints the server's RSS before, the peak (VmHWM) after, the
bytes the calls scanned or were asked to cover, and the ratio of the two.
The peak is reset at the start of each phase (`/proc/PID/clear_refs`), so each
phase's peak is its own; where the kernel refuses that, growth is measured
against the phase's starting VmHWM (a lower bound). Bounded: well under a
minute; the sparse file takes no disk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import (
    CallFailed,
    ServerProcess,
    call,
    http_session,
    write_config,
)

MIB = 1 << 20
BIG = 2 << 30  # 2 GiB
FILE_BYTES = 256 << 10


def build_text_tree(folder: Path, total_mib: int) -> int:
    """`total_mib` MiB of ~64-byte text lines in 256 KiB files; returns bytes written."""
    line = b"the quick brown fox jumps over the lazy dog, line of filler text\n"
    block = line * (FILE_BYTES // len(line))
    files = total_mib * MIB // len(block)
    for i in range(files):
        d = folder / f"d{i // 64:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.txt").write_bytes(block + f"MARKER {i}\n".encode())
    return files * (len(block) + 12)


def build_sparse(path: Path) -> None:
    """2 GiB: one MiB of numbered lines at each end, a hole between."""
    head = b"".join(f"head line {n:08d} of the sparse file\n".encode() for n in range(25_000))
    tail = b"".join(f"tail line {n:08d} of the sparse file\n".encode() for n in range(25_000))
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(BIG)
        f.seek(BIG - len(tail))
        f.write(tail)


PEAKS: list[int] = []  # each phase's VmHWM, KiB


def rss_line(label: str, before: dict[str, int], after: dict[str, int], work: int) -> str:
    PEAKS.append(after["VmHWM"])
    grew = max(0, after["VmHWM"] - before["VmHWM"]) * 1024
    return (
        f"  {label:<44} RSS before {before['VmRSS'] / 1024:7.1f} MiB, peak after "
        f"{after['VmHWM'] / 1024:7.1f} MiB (+{grew / MIB:6.1f} MiB) for {work / MIB:8.1f} MiB "
        f"of data: peak growth / data = {grew / work:.3f}"
    )


def mark(server: ServerProcess) -> dict[str, int]:
    server.reset_peak()
    return server.rss()


async def phases(server: ServerProcess, tree_bytes: int, budget: int) -> list[str]:
    out = []
    async with http_session(server.url) as s:
        await call(s, "list_roots", {})  # warm: tools imported, worker threads up
        await call(s, "search_text", {"root": "tree", "query": "MARKER 0", "limit": 1})
        await call(s, "read_text_file", {"root": "big", "path": "sparse.bin", "end_line": 3})

        before = mark(server)
        r = await call(s, "search_text", {"root": "tree", "query": "nowhere-to-be-found"})
        data = r.structured_content
        assert data["truncated"] and data["returned"] == 0, data
        out.append(rss_line(f"search_text over {tree_bytes / MIB:.0f} MiB (budget)",
                            before, server.rss(), data["scanned_bytes"]))
        out.append(f"    scanned {data['scanned_bytes'] / MIB:.1f} MiB of "
                   f"{tree_bytes / MIB:.1f} MiB; note: {data['note']}")

        before = mark(server)
        r = await call(s, "search_text", {"root": "tree", "query": "MARKER", "limit": 200,
                                          "file_glob": "f000*.txt"})
        data = r.structured_content
        out.append(rss_line("search_text narrowed by file_glob", before, server.rss(),
                            data["scanned_bytes"]))

        before = mark(server)
        windows: list[dict[str, Any]] = [
            {"start_line": 1, "end_line": 300},
            {"start_line": 10_000, "end_line": 10_300},
            {"tail": 300},
        ]
        covered = 0
        for w in windows:
            r = await call(s, "read_text_file", {"root": "big", "path": "sparse.bin", **w})
            assert r.structured_content["content"], w
            covered += len(r.structured_content["content"])
        out.append(rss_line("read_text_file windows of a 2 GiB file", before, server.rss(),
                            BIG))
        before = mark(server)
        try:
            await call(s, "read_text_file", {"root": "big", "path": "sparse.bin",
                                             "start_line": 30_000, "end_line": 30_010})
            refusal = "served (no refusal)"
        except CallFailed as exc:
            refusal = str(exc)
        out.append(rss_line("read_text_file past the text (refused)", before, server.rss(),
                            BIG))
        out.append(f"    answer: {refusal[:200]}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree-mib", type=int, default=160)
    p.add_argument("--budget-mib", type=int, default=64)
    args = p.parse_args(argv)
    if not 1 <= args.budget_mib < args.tree_mib <= 2048:
        p.error("need 1 <= --budget-mib < --tree-mib <= 2048")
    with tempfile.TemporaryDirectory(prefix="loomfs-membound-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "tree").mkdir()
        (tmp / "big").mkdir()
        tree_bytes = build_text_tree(tmp / "tree", args.tree_mib)
        build_sparse(tmp / "big" / "sparse.bin")
        assert os.stat(tmp / "big" / "sparse.bin").st_size == BIG
        config = write_config(
            tmp / "roots.toml",
            [("tree", tmp / "tree", "reference"), ("big", tmp / "big", "workspace")],
            max_search_bytes=args.budget_mib * MIB,
        )
        with ServerProcess(config, log=tmp / "server.log") as server:
            server.wait_healthy()
            ready = server.rss()
            lines = asyncio.run(phases(server, tree_bytes, args.budget_mib * MIB))
            end = server.rss()
    print(f"server RSS when ready {ready['VmRSS'] / 1024:.1f} MiB (peak so far "
          f"{ready['VmHWM'] / 1024:.1f}); at the end {end['VmRSS'] / 1024:.1f} MiB; highest "
          f"peak of any phase {max(PEAKS) / 1024:.1f} MiB")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
