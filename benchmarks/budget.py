"""What the byte budget costs a call, with it against without it, in the same run.

    .venv/bin/python benchmarks/budget.py [--runs N]

In one process, on a warm cache. The machine is shared and its load moves by the second, so
what is compared runs in pairs, one right after the other, and each figure is the median of
the pairs' ratios (and of the times):

- bucket:  `Budget.reserve` then `settle` with a server bucket and a root's own (the two
           buckets a call on that root pays), against a budget with no bucket (what every
           call does when none is set); 100 calls a pair (short, so that few pairs are cut
           by the scheduler on a loaded machine), `--runs` x 300 pairs;
- work:    `read_text_file`'s work as the tool runs it, paid (`metered`: reserve, read,
           measure the answer in UTF-8, settle) against the same read unpaid; one call a
           pair, `--runs` x 300 pairs;
- tool:    `read_text_file` of a 4 KiB file through the MCP SDK's in-process client on a
           server with a `[budget]` and a root budget large enough never to refuse, against
           a server without one (the whole call: SDK, thread hop, choke point, read,
           answer); one call a pair, `--runs` x 40 pairs.
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
from app.calls import Call
from app.fs.reading import read as read_mod
from app.registry import Registry
from app.server import LoomServer
from app.tools.metered import metered, text_cap, text_used

N_BUCKET = 100
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


def pairs(
    on: Callable[[], object], off: Callable[[], object], n: int, each: int = 1
) -> list[tuple[float, float]]:
    """`n` pairs of timings (microseconds per call), `on` first in every other pair."""
    out = []
    for i in range(n):
        if i % 2:
            b, a = per_call(off, each), per_call(on, each)
        else:
            a, b = per_call(on, each), per_call(off, each)
        out.append((a, b))
    return out


async def tool_pairs(on: LoomServer, off: LoomServer, n: int) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    async with Client(on) as with_budget, Client(off) as without:
        for _ in range(n + 10):
            timed = {}
            for client in (with_budget, without) if len(out) % 2 else (without, with_budget):
                t0 = time.perf_counter()
                res = await client.call_tool("read_text_file", {"path": "f.txt"})
                timed[client is with_budget] = (time.perf_counter() - t0) * 1e6
                assert not res.is_error
            out.append((timed[True], timed[False]))
    return out[10:]  # the first calls warm both


def report(name: str, timed: list[tuple[float, float]]) -> None:
    on = statistics.median(a for a, _ in timed)
    off = statistics.median(b for _, b in timed)
    ratio = statistics.median(a / b for a, b in timed)
    print(f"{name:6} {on:10.2f} us/call with the budget, {off:10.2f} without; "
          f"ratio {ratio:.3f} (median of {len(timed)} pairs)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    runs = ap.parse_args().runs

    paying = Budget()
    paying.apply(Rate(BIG, BIG), {"r": Rate(BIG // 2, BIG // 2)})
    idle = Budget()
    report("bucket", pairs(lambda: paying.reserve("r", 262144).settle(4096),
                           lambda: idle.reserve("r", 262144).settle(4096), runs * 300, N_BUCKET))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root = folder / "root"
        root.mkdir()
        (root / "f.txt").write_text("".join(f"line {i} of a small file\n" for i in range(160)))
        on = LoomServer(Registry(str(config(folder, root, True))))
        off = LoomServer(Registry(str(config(folder, root, False))))
        assert on.registry.budget.active and not off.registry.budget.active

        call = Call(on.registry.current)
        r = call.root("r")
        cap = call.snapshot.limits.max_output_chars

        def read() -> read_mod.ReadTextResult:
            return read_mod.read_text_file(r, "f.txt", start=1, end=300, tail=None, cap=cap)

        def paid() -> read_mod.ReadTextResult:
            return metered(call, r, text_cap(call), op="read_text_file", rel="f.txt",
                           work=read, used=lambda got: text_used([got.content]))

        report("work", pairs(paid, read, runs * 300))
        report("tool", asyncio.run(tool_pairs(on, off, runs * 40)))


if __name__ == "__main__":
    main()
