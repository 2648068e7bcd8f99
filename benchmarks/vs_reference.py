"""Side by side with the reference server, through the same MCP Python SDK client.

    .venv/bin/python benchmarks/vs_reference.py [--runs 5] [--calls 200] [--slow-calls 1]

Builds the seed's tree shape (24,300 files: 300 useful `.py` under `src/`, the
rest under `.venv/` and `node_modules/`) in a temporary folder, installs
`@modelcontextprotocol/server-filesystem` (pinned, npm, cached under
`benchmarks/.cache/`), then opens four sessions at once:

- ours over stdio (the console script, spawned by the SDK's stdio client),
- ours over Streamable HTTP (the console script as a subprocess on a free
  loopback port, stateful sessions, as shipped), with the SDK client;
- ours over HTTP again through `RawHttpSession`: one keep-alive connection,
  stdlib `http.client`, no SDK: what the server itself costs per call;
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

The SDK client checks every result against the tool's output schema with
pure-Python `jsonschema`; for theirs that is one string, for ours every field
of every entry. So ours over stdio is also measured sending the same call
without that client-side check ("unvalidated"): what a client that does not
validate sees, and what the server and transport cost.

Prints per target the median and p90 latency over all calls, the median of
the rounds' calls/s, and the CPU time per call of the client (this process)
and of the server process (/proc), then ratios measured in this run against
the targets.
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
    cpu_seconds,
    http_session,
    newest_child,
    reference_server,
    stdio_session,
    summary,
    text_of,
    write_config,
)
from benchmarks._rawhttp import RawHttpSession
from benchmarks._trees import USEFUL_FILES, build_seed_tree

SMALL_FILE = "src/loom/core/mod_00.py"
LISTED_DIR = "src/loom/core"
EXCLUDES = [".venv", "node_modules"]


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    client_cpu: list[float] = field(default_factory=list)  # ms per call, per round
    server_cpu: list[float] = field(default_factory=list)

    def line(self, label: str) -> str:
        s = summary(self.latencies)
        return (
            f"  {label:<28} median {s['median_ms']:8.2f} ms  p90 {s['p90_ms']:8.2f} ms"
            f"  {statistics.median(self.rates):7.1f} calls/s  CPU/call: client "
            f"{statistics.median(self.client_cpu):6.2f} ms, server "
            f"{statistics.median(self.server_cpu):6.2f} ms  ({len(self.latencies)} calls)"
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


@dataclass
class Case:
    label: str
    session: Any
    tool: str
    args: dict[str, Any]
    calls: int
    check: Check | None = None
    validate: bool = True  # False: skip the SDK client's output-schema check


async def timed(case: Case, into: Result) -> None:
    """One round: `case.calls` sequential calls; latencies, rate, CPU of both sides."""
    pid = case.session.bench_pid
    lat = []
    client0, server0 = time.process_time(), cpu_seconds(pid)
    start = time.perf_counter()
    for _ in range(case.calls):
        t0 = time.perf_counter()
        result = await call(case.session, case.tool, case.args, validate=case.validate)
        lat.append(time.perf_counter() - t0)
        if case.check is not None:
            case.check(result)
    into.rates.append(case.calls / (time.perf_counter() - start))
    into.latencies += lat
    # The checks above are ours, not the client's: their CPU is tiny next to a call's.
    into.client_cpu.append((time.process_time() - client0) / case.calls * 1000)
    into.server_cpu.append((cpu_seconds(pid) - server0) / case.calls * 1000)


async def run_op(title: str, cases: list[Case], runs: int) -> dict[str, Result]:
    results = {c.label: Result() for c in cases}
    for c in cases:  # warm-up: caches, first imports, the client's schema cache
        await call(c.session, c.tool, c.args)
    for r in range(runs):
        for c in cases[r % len(cases):] + cases[: r % len(cases)]:
            await timed(c, results[c.label])
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
            ours_stdio.bench_pid = newest_child()  # whose CPU time a round charges
            ours_http = await stack.enter_async_context(http_session(server.url))
            raw = RawHttpSession(server.url).open()
            stack.callback(raw.close)
            ours_http.bench_pid = raw.bench_pid = server.pid
            theirs = await stack.enter_async_context(stdio_session("node", [str(entry), str(tree)]))
            theirs.bench_pid = newest_child()
            await report(args, tree, (ours_stdio, ours_http, raw), theirs)


def ours_and_theirs(
    ours: tuple[Any, Any, Any], theirs: Any, tool: str, args: dict[str, Any],
    their_args: dict[str, Any], n: int, check: Check | None = None,
) -> list[Case]:
    stdio, http, raw = ours
    return [
        Case("ours stdio", stdio, tool, args, n, check),
        Case("ours stdio, unvalidated", stdio, tool, args, n, check, validate=False),
        Case("ours http", http, tool, args, n, check),
        Case("ours http, raw client", raw, tool, args, n, check),
        Case("theirs stdio", theirs, tool, their_args, n, check),
    ]


async def report(args: argparse.Namespace, tree: Path, ours: tuple[Any, Any, Any], theirs: Any
                 ) -> None:
    n, runs = args.calls, args.runs
    read = await run_op(
        f"small read_text_file ({runs} rounds x {n} calls)",
        ours_and_theirs(ours, theirs, "read_text_file", {"path": SMALL_FILE},
                        {"path": str(tree / SMALL_FILE)}, n),
        runs,
    )
    listing = await run_op(
        f"list_directory of {LISTED_DIR} ({runs} rounds x {n} calls)",
        ours_and_theirs(ours, theirs, "list_directory", {"path": LISTED_DIR},
                        {"path": str(tree / LISTED_DIR)}, n),
        runs,
    )
    fast = max(3, n // 10)
    useful = expect_matches(USEFUL_FILES)
    search_cases = ours_and_theirs(
        ours, theirs, "search_files", {"pattern": "*.py", "limit": USEFUL_FILES},
        {"path": str(tree), "pattern": "**/*.py", "excludePatterns": EXCLUDES}, fast, useful)
    for c in search_cases[:4]:
        c.label += " *.py"
    search_cases[4].label = "theirs **/*.py excluded"
    search_cases.append(Case("theirs **/*.py", theirs, "search_files",
                             {"path": str(tree), "pattern": "**/*.py"}, args.slow_calls,
                             expect_matches(USEFUL_FILES, at_least=True)))
    search = await run_op(
        f"name search ({runs} rounds; {fast} calls, theirs **/*.py {args.slow_calls})",
        search_cases, runs,
    )
    print("\nratios (same run; latency ratios use medians, throughput ratios median calls/s)")
    for label, target in (("ours stdio", 1.0), ("ours stdio, unvalidated", None),
                          ("ours http", 0.5), ("ours http, raw client", None)):
        ratio_line(f"read: {label} calls/s / theirs stdio",
                   read[label].rate / read["theirs stdio"].rate, target)
    for label in ("ours stdio", "ours stdio, unvalidated", "ours http", "ours http, raw client"):
        ratio_line(f"list: {label} calls/s / theirs stdio",
                   listing[label].rate / listing["theirs stdio"].rate, None)
    for label in ("ours stdio *.py", "ours stdio, unvalidated *.py", "ours http *.py",
                  "ours http, raw client *.py"):
        ratio_line(f"search: theirs **/*.py / {label}",
                   search["theirs **/*.py"].median / search[label].median, 200.0)
        ratio_line(f"search: theirs excluded / {label}",
                   search["theirs **/*.py excluded"].median / search[label].median, 10.0)


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
