"""What one small call costs the server: CPU per small `read_text_file`, and start-up.

    .venv/bin/python benchmarks/small_call.py [--runs 7] [--calls 300] [--base DIR]

A root holding one 20-line file; each target is our server from a source tree
(this checkout, and with `--base` a second one, e.g. a `git worktree` of an
older commit: its `app` package is put first on `PYTHONPATH`, the interpreter
and the installed dependencies are the same). For each target, round by round
(the targets take turns, so a load spike on this shared machine hits both):

- http:  the console script over HTTP on a free loopback port, one session on
         one keep-alive connection (`RawHttpSession`, stdlib, no SDK), `--calls`
         sequential calls; the server process's CPU time (/proc) per call;
- stdio: the console script spawned by the MCP SDK's stdio client, `--calls`
         sequential calls (the client's output-schema check left out, so the
         client's share of the machine is small); the server's CPU per call;
- start-up: spawn to the first 200 on /healthz (http), spawn + `initialize`
         (stdio), wall time; and the server's CPU time until then (less moved
         by the machine's load than the wall time).

Every answer is checked (no tool error, the file's last line in the text).
Prints medians of `--runs` rounds and, with `--base`, the ratio this/base of
each. Bounded: about a minute with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import (
    REPO,
    ServerProcess,
    call,
    console_script,
    cpu_seconds,
    newest_child,
    stdio_session,
    text_of,
    write_config,
)
from benchmarks._rawhttp import RawHttpSession

FILE = "small.py"
LINES = 20
MEASURES = ("http CPU/call ms", "stdio CPU/call ms", "http start ms", "stdio start ms",
            "http start CPU ms", "stdio start CPU ms")


def checked(result: Any) -> None:
    if getattr(result, "is_error", False) or f"line {LINES}" not in text_of(result):
        raise AssertionError(f"unexpected answer: {text_of(result)[:300]}")


async def cpu_per_call(session: Any, pid: int, calls: int) -> float:
    args = {"path": FILE}
    await session.call_tool("read_text_file", args)  # warm-up: first imports, caches
    c0 = cpu_seconds(pid)
    for _ in range(calls):
        checked(await call(session, "read_text_file", args, validate=False)
                if not isinstance(session, RawHttpSession)
                else await session.call_tool("read_text_file", args))
    return (cpu_seconds(pid) - c0) / calls * 1000


Figures = tuple[float, float, float]  # start ms, start CPU ms, CPU ms per call


async def http_round(tree: Path, config: Path, log: Path, calls: int) -> Figures:
    with ServerProcess(config, log=log, extra_env={"PYTHONPATH": str(tree)}) as server:
        start = server.wait_healthy() * 1000
        start_cpu = cpu_seconds(server.pid) * 1000
        raw = RawHttpSession(server.url).open()
        try:
            return start, start_cpu, await cpu_per_call(raw, server.pid, calls)
        finally:
            raw.close()


async def stdio_round(tree: Path, config: Path, calls: int) -> Figures:
    script = console_script()
    t0 = time.perf_counter()
    async with stdio_session(script[0], [*script[1:], "--config", str(config)],
                             env={"PYTHONPATH": str(tree)}) as session:
        start = (time.perf_counter() - t0) * 1000
        pid = newest_child()
        return start, cpu_seconds(pid) * 1000, await cpu_per_call(session, pid, calls)


async def one_round(tree: Path, config: Path, log: Path, calls: int) -> dict[str, float]:
    http_start, http_start_cpu, http_cpu = await http_round(tree, config, log, calls)
    stdio_start, stdio_start_cpu, stdio_cpu = await stdio_round(tree, config, calls)
    got = (http_cpu, stdio_cpu, http_start, stdio_start, http_start_cpu, stdio_start_cpu)
    return dict(zip(MEASURES, got, strict=True))


async def main(args: argparse.Namespace) -> None:
    import mcp.client.stdio  # noqa: F401 - the client's imports are not the server's start

    trees = {"this": REPO}
    if args.base:
        trees["base"] = Path(args.base).resolve()
        if not (trees["base"] / "app" / "cli.py").is_file():
            raise SystemExit(f"--base {args.base}: no app/cli.py there")
    got: dict[str, dict[str, list[float]]] = {t: {m: [] for m in MEASURES} for t in trees}
    with tempfile.TemporaryDirectory(prefix="loomfs-small-") as tmp_name:
        tmp = Path(tmp_name)
        root = tmp / "root"
        root.mkdir()
        (root / FILE).write_text("".join(f"x_{i} = {i}  # line {i + 1}\n" for i in range(LINES)))
        config = write_config(tmp / "roots.toml", [("bench", root, "workspace")])
        for r in range(args.runs):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                figures = await one_round(trees[name], config, tmp / f"{name}.log", args.calls)
                for m, figure in figures.items():
                    got[name][m].append(figure)
    print(f"small read_text_file ({LINES} lines), {args.calls} calls a round, "
          f"median of {args.runs} rounds (min .. max):")
    for name, tree in trees.items():
        print(f"  {name}: {tree}")
        for m in MEASURES:
            v = got[name][m]
            print(f"    {m:<20} {statistics.median(v):8.3f}   ({min(v):.3f} .. {max(v):.3f})")
    if "base" in trees:
        print("  ratio this/base (median of the rounds' ratios):")
        for m in MEASURES:
            ratios = [a / b for a, b in zip(got["this"][m], got["base"][m], strict=True)]
            print(f"    {m:<20} {statistics.median(ratios):8.3f}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--base", help="a second source tree (its app/ is run) to compare against")
    args = p.parse_args(argv)
    if not 1 <= args.runs <= 50 or not 10 <= args.calls <= 10_000:
        p.error("need 1 <= --runs <= 50 and 10 <= --calls <= 10000")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
