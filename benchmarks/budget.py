"""What the byte budget costs a call, with it against without it, in the same run.

    .venv/bin/python benchmarks/budget.py [--runs N]

In one process, on a warm cache, times (median of `--runs` rounds, interleaved):

- bucket:  `Budget.reserve` then `settle` with a server bucket and a root's own (the two
           buckets a call on that root pays), 20,000 calls a round;
- off:     the same on a budget with no bucket (what every call does when none is set);
- read:    `read_text_file` of a 4 KiB file through the MCP SDK's in-process client on a
           server with a `[budget]` and a root budget large enough never to refuse,
           100 calls a round;
- read-:   the same on a server without a budget, the baseline.

Prints each median in microseconds per call and the median of the per-round ratios
read/read- (the whole call: SDK, thread hop, choke point, read, answer).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp import Client

from app.budget import Budget, Rate
from app.registry import Registry
from app.server import LoomServer

N_BUCKET = 20_000
N_READ = 100
BIG = 1 << 40  # never refuses: the cost measured is the bookkeeping, not a wait


def per_call(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def config(folder: Path, root: Path, budget: bool) -> Path:
    path = folder / ("on.toml" if budget else "off.toml")
    lines = [f'audit_log = "{folder / "audit.log"}"']
    if budget:
        lines += ["[budget]", f"bytes_per_minute = {BIG}", f"burst_bytes = {BIG}"]
    lines += ["[[roots]]", 'name = "r"', f'path = "{root}"', 'role = "reference"']
    if budget:
        lines.append(f"budget = {{ bytes_per_minute = {BIG // 2}, burst_bytes = {BIG // 2} }}")
    path.write_text("\n".join(lines) + "\n")
    return path


async def reads(client: Client, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        res = await client.call_tool("read_text_file", {"path": "f.txt"})
        assert not res.is_error
    return (time.perf_counter() - t0) / n * 1e6


async def read_rounds(on: LoomServer, off: LoomServer, runs: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {"read": [], "read-": []}
    async with Client(on) as with_budget, Client(off) as without:
        await reads(with_budget, 20)  # warm both
        await reads(without, 20)
        for _ in range(runs):
            rows["read"].append(await reads(with_budget, N_READ))
            rows["read-"].append(await reads(without, N_READ))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs

    paying = Budget()
    paying.apply(Rate(BIG, BIG), {"r": Rate(BIG // 2, BIG // 2)})
    idle = Budget()
    rows: dict[str, list[float]] = {"bucket": [], "off": []}
    for _ in range(runs):
        rows["bucket"].append(per_call(lambda: paying.reserve("r", 262144).settle(4096), N_BUCKET))
        rows["off"].append(per_call(lambda: idle.reserve("r", 262144).settle(4096), N_BUCKET))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root = folder / "root"
        root.mkdir()
        (root / "f.txt").write_text("".join(f"line {i} of a small file\n" for i in range(160)))
        on = LoomServer(Registry(str(config(folder, root, True))))
        off = LoomServer(Registry(str(config(folder, root, False))))
        assert on.registry.budget.active and not off.registry.budget.active
        rows.update(asyncio.run(read_rounds(on, off, runs)))

    for name, values in rows.items():
        print(f"{name:7} {statistics.median(values):9.2f} us/call  "
              f"(runs {min(values):.2f}-{max(values):.2f})")
    ratios = [a / b for a, b in zip(rows["read"], rows["read-"], strict=True)]
    print(f"read/read- ratio {statistics.median(ratios):.3f} "
          f"(runs {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
