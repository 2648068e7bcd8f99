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
           answer); one call a pair, `--runs` x 40 pairs;
- runaway: a loop nobody watches, paging `search_text` for `.*` through a tree by cursor
           (from the start again at the end) as fast as it can for `--seconds`, on a server
           whose bucket holds 64 KiB and refills at 64 KiB a minute: the bytes of file
           content its answers held against what the bucket allows over that time (burst +
           rate x elapsed), on the real clock; `--runs` loops, each on a full bucket. The
           ratio returned/allowed must stay at most 1.

    .venv/bin/python benchmarks/budget.py --part runaway [--runs N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


RUNAWAY_RATE = RUNAWAY_BURST = 65536
RUNAWAY_FILES = 64


def runaway_config(folder: Path, root: Path) -> Path:
    path = folder / "runaway.toml"
    path.write_text("\n".join([
        f'audit_log = "{folder / "audit.log"}"', "max_output_chars = 4096",
        "[budget]", f"bytes_per_minute = {RUNAWAY_RATE}", f"burst_bytes = {RUNAWAY_BURST}",
        "[[roots]]", 'name = "r"', f'path = "{root}"', 'role = "reference"',
        "max_read_bytes = 16384",
    ]) + "\n")
    return path


def shown(page: dict[str, Any]) -> int:
    """The bytes of file content a search page holds: its lines and context lines."""
    return sum(len(m["preview"].encode()) + sum(len(x.encode()) for x in m.get("before") or [])
               + sum(len(x.encode()) for x in m.get("after") or [])
               for m in page.get("matches") or [])


async def runaway_loop(cfg: Path, seconds: float) -> tuple[int, float, int, int]:
    """Bytes returned, seconds elapsed, calls answered and calls refused."""
    server = LoomServer(Registry(str(cfg)))
    returned = answered = refused = 0
    cursor = ""
    async with Client(server) as client:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            res = await client.call_tool("search_text", {
                "query": ".*", "regex": True, "limit": 1000, "cursor": cursor})
            if res.is_error:
                assert "byte budget spent" in str(res.content[0]), res.content
                refused += 1
                continue
            page = res.structured_content or {}
            returned += shown(page)
            answered += 1
            cursor = page.get("next_cursor") or ""
        elapsed = time.monotonic() - t0
    return returned, elapsed, answered, refused


def runaway(runs: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        root = folder / "root"
        root.mkdir()
        for i in range(RUNAWAY_FILES):
            (root / f"f{i:02}.txt").write_text(
                "".join(f"line {j} of file {i}: {'é' * (j % 5)} words\n" for j in range(200)))
        cfg = runaway_config(folder, root)
        ratios, got, allowed_all = [], [], []
        for _ in range(runs):
            returned, elapsed, answered, refused = asyncio.run(runaway_loop(cfg, seconds))
            allowed = RUNAWAY_BURST + RUNAWAY_RATE * elapsed / 60
            ratios.append(returned / allowed)
            got.append(returned)
            allowed_all.append(allowed)
            print(f"  run: {returned} bytes returned in {elapsed:.2f} s ({answered} pages, "
                  f"{refused} refused); the bucket allows {allowed:.0f}")
        ratio = statistics.median(ratios)
        print(f"runaway {statistics.median(got):.0f} bytes returned, "
              f"{statistics.median(allowed_all):.0f} allowed; ratio returned/allowed "
              f"{ratio:.3f} (median of {runs} loops of {seconds} s; at most {max(ratios):.3f})")
        assert max(ratios) <= 1, ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=5.0, help="each runaway loop's length")
    ap.add_argument("--part", choices=["all", "cost", "runaway"], default="all")
    args = ap.parse_args()
    runs = args.runs
    if args.part != "cost":
        runaway(runs, args.seconds)
    if args.part == "runaway":
        return

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
