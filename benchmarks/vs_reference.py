"""Side by side with the reference server, through the same MCP Python SDK client.

    .venv/bin/python benchmarks/vs_reference.py [--runs 5] [--calls 200] [--slow-calls 1]

Builds the seed's tree shape (24,300 files: 300 useful `.py` under `src/`, the
rest under `.venv/` and `node_modules/`) in a temporary folder, installs
`@modelcontextprotocol/server-filesystem` (pinned, npm, cached under
`benchmarks/.cache/`), then opens three sessions at once:

- ours over stdio (the console script, spawned by the SDK's stdio client),
- ours over Streamable HTTP (the console script as a subprocess on a free
  loopback port, stateful sessions, as shipped),
- theirs over stdio (the only transport it has).

For each operation, round by round (the order rotates each round, so a load
spike on this shared machine hits every target alike), each target answers
`--calls` sequential calls: a small `read_text_file`, a `list_directory` of a
31-entry folder, and a name search. Ours searches `*.py` (base name at any
depth, `.venv`/`node_modules` pruned by the built-in deny list, every one of
the 300 files in one answer); theirs searches `**/*.py` (what it needs to find
nested files: it walks and matches all 24,300 entries) and `**/*.py` with
`excludePatterns` `.venv` and `node_modules`. Their `**/*.py` takes seconds a
call, so it gets `--slow-calls` calls a round.

Prints per target the median and p90 latency over all calls and the median of
the rounds' calls/s, then ratios measured in this run against the targets.
Every answer is checked (no tool error; the searches find the 300 useful files)
or the script fails. Bounded: about a minute with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import (
    ServerProcess,
    call,
    console_script,
    http_session,
    reference_server,
    stdio_session,
    summary,
    text_of,
    write_config,
)
from benchmarks._trees import USEFUL_FILES, build_seed_tree

SMALL_FILE = "src/loom/core/mod_00.py"
LISTED_DIR = "src/loom/core"
EXCLUDES = [".venv", "node_modules"]


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)

    def line(self, label: str) -> str:
        s = summary(self.latencies)
        return (
            f"  {label:<26} median {s['median_ms']:9.2f} ms   p90 {s['p90_ms']:9.2f} ms"
            f"   {statistics.median(self.rates):8.1f} calls/s   ({len(self.latencies)} calls)"
        )

    @property
    def median(self) -> float:
        return statistics.median(self.latencies)

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)


Check = Callable[[Any], None]


def expect_matches(n: int, *, at_least: bool = False) -> Check:
    """A check on a search answer: it names exactly (or at least) `n` `.py` paths."""

    def check(result: Any) -> None:
        data = result.structured_content
        if data is not None and "matches" in data:
            found = len(data["matches"])
        else:
            found = sum(1 for line in text_of(result).splitlines() if line.endswith(".py"))
        ok = found >= n if at_least else found == n
        if not ok:
            raise AssertionError(f"search found {found} files, expected {n}")

    return check


async def timed(
    session: Any, name: str, args: dict[str, Any], n: int, check: Check | None
) -> tuple[list[float], float]:
    lat = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        result = await call(session, name, args)
        lat.append(time.perf_counter() - t0)
        if check is not None:
            check(result)
    return lat, n / (time.perf_counter() - start)


Case = tuple[str, Any, str, dict[str, Any], int, "Check | None"]


async def run_op(title: str, cases: list[Case], runs: int) -> dict[str, Result]:
    results = {label: Result() for label, *_ in cases}
    for _label, session, name, args, _n, _check in cases:  # warm-up: caches, first imports
        await call(session, name, args)
    for r in range(runs):
        order = cases[r % len(cases):] + cases[: r % len(cases)]
        for label, session, name, args, n, check in order:
            lat, rate = await timed(session, name, args, n, check)
            results[label].latencies += lat
            results[label].rates.append(rate)
    print(f"\n{title}")
    for label, res in results.items():
        print(res.line(label))
    return results


def ratio_line(text: str, value: float, target: float | None, *, higher_is_better: bool = True):
    if target is None:
        print(f"  {text:<58} {value:10.2f}x")
        return
    ok = value >= target if higher_is_better else value <= target
    verdict = "meets" if ok else f"MISSES by {target / value:.2f}x"
    print(f"  {text:<58} {value:10.2f}x  (target >= {target:g}x: {verdict})")


async def main(args: argparse.Namespace) -> None:
    entry = reference_server()
    with tempfile.TemporaryDirectory(prefix="loomfs-vs-ref-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        counts = build_seed_tree(tree)
        print(f"tree: {counts.files} files ({counts.useful} useful), {counts.dirs} dirs")
        # A limit above 300 so one answer holds every useful file, as theirs does.
        config = write_config(
            Path(tmp) / "roots.toml", [("bench", tree, "reference")], max_search_results=1000
        )
        script = console_script()
        async with contextlib.AsyncExitStack() as stack:
            server = stack.enter_context(ServerProcess(config, log=Path(tmp) / "http.log"))
            server.wait_healthy()
            ours_stdio = await stack.enter_async_context(
                stdio_session(script[0], [*script[1:], "--config", str(config)])
            )
            ours_http = await stack.enter_async_context(http_session(server.url))
            theirs = await stack.enter_async_context(stdio_session("node", [str(entry), str(tree)]))
            await report(args, tree, ours_stdio, ours_http, theirs)


async def report(args: argparse.Namespace, tree: Path, ours_stdio, ours_http, theirs) -> None:  # type: ignore[no-untyped-def]
    n, runs = args.calls, args.runs
    read_ours = {"path": SMALL_FILE}
    read_theirs = {"path": str(tree / SMALL_FILE)}
    read = await run_op(
        f"small read_text_file ({runs} rounds x {n} calls)",
        [
            ("ours stdio", ours_stdio, "read_text_file", read_ours, n, None),
            ("ours http", ours_http, "read_text_file", read_ours, n, None),
            ("theirs stdio", theirs, "read_text_file", read_theirs, n, None),
        ],
        runs,
    )
    listing = await run_op(
        f"list_directory of {LISTED_DIR} ({runs} rounds x {n} calls)",
        [
            ("ours stdio", ours_stdio, "list_directory", {"path": LISTED_DIR}, n, None),
            ("ours http", ours_http, "list_directory", {"path": LISTED_DIR}, n, None),
            ("theirs stdio", theirs, "list_directory", {"path": str(tree / LISTED_DIR)}, n, None),
        ],
        runs,
    )
    fast = max(1, n // 10)
    ours_search = {"pattern": "*.py", "limit": USEFUL_FILES}
    useful = expect_matches(USEFUL_FILES)
    search = await run_op(
        f"name search ({runs} rounds; {fast} calls, theirs **/*.py {args.slow_calls})",
        [
            ("ours stdio *.py", ours_stdio, "search_files", ours_search, fast, useful),
            ("ours http *.py", ours_http, "search_files", ours_search, fast, useful),
            ("theirs **/*.py excluded", theirs, "search_files",
             {"path": str(tree), "pattern": "**/*.py", "excludePatterns": EXCLUDES}, fast, useful),
            ("theirs **/*.py", theirs, "search_files",
             {"path": str(tree), "pattern": "**/*.py"}, args.slow_calls,
             expect_matches(USEFUL_FILES, at_least=True)),
        ],
        runs,
    )
    print("\nratios (same run; latency ratios use medians, throughput ratios median calls/s)")
    ratio_line("read: ours stdio calls/s / theirs stdio",
               read["ours stdio"].rate / read["theirs stdio"].rate, 1.0)
    ratio_line("read: ours http calls/s / theirs stdio",
               read["ours http"].rate / read["theirs stdio"].rate, 0.5)
    ratio_line("list: ours stdio calls/s / theirs stdio",
               listing["ours stdio"].rate / listing["theirs stdio"].rate, None)
    ratio_line("list: ours http calls/s / theirs stdio",
               listing["ours http"].rate / listing["theirs stdio"].rate, None)
    for ours in ("ours stdio *.py", "ours http *.py"):
        ratio_line(f"search: theirs **/*.py / {ours}",
                   search["theirs **/*.py"].median / search[ours].median, 200.0)
        ratio_line(f"search: theirs excluded / {ours}",
                   search["theirs **/*.py excluded"].median / search[ours].median, 10.0)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="rounds per operation (median of)")
    p.add_argument("--calls", type=int, default=200, help="sequential calls per round")
    p.add_argument("--slow-calls", type=int, default=1, help="their **/*.py calls per round")
    args = p.parse_args(argv)
    if args.runs < 3 or args.calls < 10 or args.slow_calls < 1:
        p.error("need --runs >= 3, --calls >= 10, --slow-calls >= 1")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
