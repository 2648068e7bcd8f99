"""Load: concurrent MCP sessions of mixed calls against the real server process.

    .venv/bin/python benchmarks/load.py [--sessions 16] [--seconds 30] [--reload-every 2]

Starts the console script (`loom-fs-mcp --transport http`) as a subprocess on
a free loopback port, with two roots in a temporary folder: `docs`
(reference: a few hundred small files) and `work` (workspace). Then
`--sessions` MCP client sessions (Streamable HTTP, stateful, as shipped) each
loop for `--seconds` over a fixed mix: list_directory, read_text_file,
search_files, search_text in `docs`, and write_file, edit_file, read back,
delete (to the trash) of the session's own file in `work`; one more session
calls reload_config every `--reload-every` seconds.

Reports calls/s, p50/p99 latency, failed calls (tool errors and transport
failures), HTTP statuses seen by the clients (an httpx event hook), and the
server's RSS from /proc: when ready, after a warm-up round (every tool's code
imported, worker threads started), and at the end, with the peak (VmHWM).
Targets: zero failed calls, zero 5xx, RSS growth over the run under 20%.
Exit status 1 when a target is missed. Bounded by `--seconds` plus start-up.

`tests/test_load_smoke.py` runs a CI-sized version of `measure()`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import (
    CallFailed,
    ServerProcess,
    StatusCounter,
    call,
    http_session,
    percentile,
    write_config,
)

MAX_FAILURE_SAMPLES = 5


def build_roots(tmp: Path) -> Path:
    """`docs`: 8 packages x 3 dirs x 10 files; `work`: empty. Returns the config."""
    docs, work = tmp / "docs", tmp / "work"
    for p in range(8):
        for sub in ("", "impl", "tests"):
            d = docs / f"pkg{p}" / sub if sub else docs / f"pkg{p}"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(10):
                body = "".join(f"line {n} of module {p}.{sub}.{i}: value = {n * i}\n"
                               for n in range(40))
                (d / f"mod_{i}.py").write_text(f'"""pkg{p} {sub} {i}"""\nNEEDLE = {i}\n{body}')
    (docs / "README.md").write_text("# docs\n" + "text\n" * 50)
    work.mkdir()
    return write_config(tmp / "roots.toml", [("docs", docs, "reference"),
                                             ("work", work, "workspace")])


def cycle(session_no: int, k: int) -> list[tuple[str, dict[str, Any]]]:
    """One round of the mix for one session: 9 calls, 4 of them writes."""
    own = f"s{session_no}/note-{k}.txt"
    pkg = f"pkg{(session_no + k) % 8}"
    return [
        ("list_directory", {"root": "docs", "path": pkg}),
        ("read_text_file", {"root": "docs", "path": f"{pkg}/mod_{k % 10}.py"}),
        ("search_files", {"root": "docs", "pattern": "*.py", "path": pkg, "limit": 50}),
        ("search_text", {"root": "docs", "query": f"NEEDLE = {k % 10}", "limit": 20}),
        ("write_file", {"root": "work", "path": own, "content": f"v {k}\nbody\n",
                        "overwrite": True}),
        ("edit_file", {"root": "work", "path": own,
                       "edits": [{"old_text": f"v {k}", "new_text": f"w {k}"}]}),
        ("read_text_file", {"root": "work", "path": own}),
        ("list_directory", {"root": "work", "path": f"s{session_no}"}),
        ("delete", {"root": "work", "path": own}),
    ]


@dataclass
class LoadStats:
    latencies: list[float] = field(default_factory=list)
    calls_by_tool: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    reloads: int = 0
    reconnects: int = 0

    def fail(self, what: str) -> None:
        self.failed += 1
        if len(self.failures) < MAX_FAILURE_SAMPLES:
            self.failures.append(what)


async def _timed(session: Any, stats: LoadStats, name: str, args: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    try:
        await call(session, name, args)
    except CallFailed as exc:
        stats.fail(str(exc))
    finally:
        stats.latencies.append(time.perf_counter() - t0)
        stats.calls_by_tool[name] += 1


async def worker(url: str, no: int, until: float, stats: LoadStats, counter: StatusCounter,
                 warmed: asyncio.Event | None = None) -> None:
    k = 0
    while time.monotonic() < until:
        try:
            async with http_session(url, counter) as session:
                while time.monotonic() < until:
                    for name, args in cycle(no, k):
                        await _timed(session, stats, name, args)
                    k += 1
                    if warmed is not None:
                        warmed.set()
                        warmed = None
        except Exception as exc:  # a transport failure: count it, open a new session
            stats.fail(f"session {no}: {type(exc).__name__}: {exc}"[:300])
            stats.reconnects += 1
            await asyncio.sleep(0.1)


async def reloader(url: str, until: float, every: float, stats: LoadStats,
                   counter: StatusCounter) -> None:
    async with http_session(url, counter) as session:
        while True:
            await _timed(session, stats, "reload_config", {})
            stats.reloads += 1
            if time.monotonic() + every >= until:
                break
            await asyncio.sleep(every)


async def run_load(url: str, sessions: int, seconds: float, reload_every: float,
                   on_warm: Any = None) -> tuple[LoadStats, StatusCounter, float]:
    """Drive the mix; `on_warm()` runs once every session has done one full cycle."""
    stats, counter = LoadStats(), StatusCounter()
    start = time.monotonic()
    until = start + seconds
    events = [asyncio.Event() for _ in range(sessions)]
    tasks = [asyncio.create_task(worker(url, i, until, stats, counter, events[i]))
             for i in range(sessions)]
    tasks.append(asyncio.create_task(reloader(url, until, reload_every, stats, counter)))
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout=seconds)
    if on_warm is not None:
        on_warm()
    await asyncio.gather(*tasks)
    return stats, counter, time.monotonic() - start


def measure(sessions: int, seconds: float, reload_every: float) -> dict[str, Any]:
    """Run the whole load against a fresh server process; return the figures."""
    with tempfile.TemporaryDirectory(prefix="loomfs-load-") as tmp_name:
        tmp = Path(tmp_name)
        config = build_roots(tmp)
        with ServerProcess(config, log=tmp / "server.log") as server:
            server.wait_healthy()
            rss: dict[str, Any] = {"ready": server.rss()}
            cpu0, client0 = server.cpu(), time.process_time()
            stats, counter, elapsed = asyncio.run(run_load(
                server.url, sessions, seconds, reload_every,
                on_warm=lambda: rss.__setitem__("warm", server.rss())))
            rss["end"] = server.rss()
            server_cpu, client_cpu = server.cpu() - cpu0, time.process_time() - client0
            alive = server.proc.poll() is None
        log_tail = (tmp / "server.log").read_text(errors="replace")[-2000:]
    total = len(stats.latencies)
    warm = rss.get("warm", rss["ready"])["VmRSS"]
    return {
        "sessions": sessions,
        "seconds": round(elapsed, 2),
        "calls": total,
        "calls_per_s": round(total / elapsed, 1),
        "p50_ms": round(percentile(stats.latencies, 50) * 1000, 2) if total else None,
        "p99_ms": round(percentile(stats.latencies, 99) * 1000, 2) if total else None,
        "failed": stats.failed,
        "failure_samples": stats.failures,
        "reconnects": stats.reconnects,
        "reloads": stats.reloads,
        "calls_by_tool": dict(stats.calls_by_tool),
        "http_statuses": dict(sorted(counter.counts.items())),
        "non_2xx": counter.non_2xx(),
        "http_5xx": counter.server_errors(),
        # CPU seconds per wall second: how busy each side was (2 cores on this machine).
        "server_cpu_load": round(server_cpu / elapsed, 2),
        "client_cpu_load": round(client_cpu / elapsed, 2),
        "server_cpu_ms_per_call": round(server_cpu / total * 1000, 2) if total else None,
        "rss_kib": {k: v["VmRSS"] for k, v in rss.items()},
        "peak_rss_kib": rss["end"]["VmHWM"],
        "rss_growth_pct": round((rss["end"]["VmRSS"] / warm - 1) * 100, 1),
        "server_alive": alive,
        "server_log_tail": log_tail if stats.failed else "",
    }


def verdict(fig: dict[str, Any]) -> list[str]:
    missed = []
    if fig["failed"]:
        missed.append(f"{fig['failed']} failed calls (target 0)")
    if fig["http_5xx"]:
        missed.append(f"{fig['http_5xx']} 5xx responses (target 0)")
    if fig["rss_growth_pct"] >= 20:
        missed.append(f"RSS grew {fig['rss_growth_pct']}% (target < 20%)")
    if not fig["server_alive"]:
        missed.append("the server died")
    return missed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=16)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--reload-every", type=float, default=2.0)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args(argv)
    if not (1 <= args.sessions <= 256 and 1 <= args.seconds <= 600 and args.reload_every > 0):
        p.error("need 1 <= --sessions <= 256, 1 <= --seconds <= 600, --reload-every > 0")
    fig = measure(args.sessions, args.seconds, args.reload_every)
    if args.json:
        print(json.dumps(fig, indent=2))
    else:
        mib = {k: round(v / 1024, 1) for k, v in fig["rss_kib"].items()}
        print(f"{fig['sessions']} sessions for {fig['seconds']} s: {fig['calls']} calls, "
              f"{fig['calls_per_s']} calls/s, p50 {fig['p50_ms']} ms, p99 {fig['p99_ms']} ms")
        print(f"failed calls {fig['failed']}, reconnects {fig['reconnects']}, reloads "
              f"{fig['reloads']}, HTTP statuses {fig['http_statuses']}, non-2xx "
              f"{fig['non_2xx']}, 5xx {fig['http_5xx']}")
        print(f"server RSS MiB: {mib}, peak {round(fig['peak_rss_kib'] / 1024, 1)}; growth "
              f"warm->end {fig['rss_growth_pct']}%")
        print(f"CPU: server {fig['server_cpu_load']} cores ({fig['server_cpu_ms_per_call']} ms "
              f"a call), load client {fig['client_cpu_load']} cores")
        for sample in fig["failure_samples"]:
            print("  failure:", sample)
    missed = verdict(fig)
    for m in missed:
        print("MISSED:", m)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
