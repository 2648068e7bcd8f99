"""What each HTTP serving choice costs per call: answer format, sessions, parser.

    .venv/bin/python benchmarks/http_modes.py [--runs 5] [--calls 200]

Serves the real app (`app.http.build_app`) under uvicorn in one subprocess per
variant, each on a free loopback port, and drives a small `read_text_file`
through the MCP SDK client, round by round (the order rotates, so a load spike
hits every variant alike). Variants:

- shipped:   answer per request (JSON unless the call asked for progress),
             stateful sessions, httptools parser with app.http.limits' header cap,
             read timeouts and connection cap;
- bare:      as shipped, on plain uvicorn httptools (no limits of ours);
- sse:       every answer an SSE stream (the SDK's default);
- json:      every answer JSON (progress notifications could not be sent);
- h11:       as shipped, with uvicorn's pure-Python parser;
- h11-capped: h11 with its own head cap (`h11_max_incomplete_event_size`), the
             other way to bound headers;
- no-watch:  as shipped, without the disconnect watcher (CancelOnDisconnect).

Prints the median calls/s and the CPU milliseconds per call of the client
(this process) and of the server (its /proc CPU time), then each variant's
server CPU relative to the shipped one. Bounded: well under a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import call, cpu_seconds, free_port, healthz_ok, http_session, write_config


@dataclass(frozen=True)
class Variant:
    json: bool | None  # build_app's json_response (None: JSON unless the call asked for progress)
    http: str  # uvicorn's parser, or "limited" / "h11-capped" (below)
    watch: bool = True  # build_app's watch_disconnects


VARIANTS = {
    "shipped": Variant(json=None, http="limited"),
    "bare": Variant(json=None, http="httptools"),
    "sse": Variant(json=False, http="httptools"),
    "json": Variant(json=True, http="httptools"),
    "h11": Variant(json=None, http="h11"),
    "h11-capped": Variant(json=None, http="h11-capped"),
    "no-watch": Variant(json=None, http="httptools", watch=False),
}


def serve(variant: str, port: int, config: str) -> None:
    """The subprocess side: one variant of the app under uvicorn."""
    import uvicorn

    from app.http import build_app
    from app.registry import Registry
    from app.server import LoomServer
    from app.startup import listening_socket

    v = VARIANTS[variant]
    server = LoomServer(Registry(config))
    app = build_app(server, json_response=v.json, watch_disconnects=v.watch)
    from app.http.limits import MAX_HEAD_BYTES, uvicorn_limits

    options: dict[str, Any] = {"http": v.http}  # uvicorn.Config's keywords
    if v.http == "limited":
        options = uvicorn_limits()
    elif v.http == "h11-capped":  # the alternative: h11's own cap on an incomplete head
        options = {**uvicorn_limits(), "http": "h11", "h11_max_incomplete_event_size":
                   MAX_HEAD_BYTES}
    uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                                  **options)).run(
        sockets=[listening_socket("127.0.0.1", port)])


async def drive(ports: dict[str, int], pids: dict[str, int], runs: int, n: int) -> None:
    args = {"path": "README.md"}
    rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ports}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, port in ports.items():
            sessions[name] = await stack.enter_async_context(
                http_session(f"http://127.0.0.1:{port}/mcp"))
            for _ in range(20):
                await call(sessions[name], "read_text_file", args)
        names = list(ports)
        for r in range(runs):
            for name in names[r % len(names):] + names[: r % len(names)]:
                c0, s0, t0 = time.process_time(), cpu_seconds(pids[name]), time.perf_counter()
                for _ in range(n):
                    await call(sessions[name], "read_text_file", args)
                wall = time.perf_counter() - t0
                rows[name].append((n / wall, (time.process_time() - c0) / n * 1000,
                                   (cpu_seconds(pids[name]) - s0) / n * 1000))
    base = statistics.median(x[2] for x in rows["shipped"])
    print(f"small read_text_file over HTTP, SDK client, median of {runs} rounds x {n} calls:")
    for name, v in rows.items():
        server = statistics.median(x[2] for x in v)
        print(f"  {name:<10} {statistics.median(x[0] for x in v):7.1f} calls/s   client CPU "
              f"{statistics.median(x[1] for x in v):5.2f} ms/call   server CPU {server:5.2f} "
              f"ms/call   server CPU vs shipped {server / base:4.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--serve", nargs=3, metavar=("VARIANT", "PORT", "CONFIG"),
                   help=argparse.SUPPRESS)  # the subprocess side
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.serve[2])
        return 0
    if not (3 <= args.runs <= 50 and 10 <= args.calls <= 5000):
        p.error("need 3 <= --runs <= 50 and 10 <= --calls <= 5000")
    with tempfile.TemporaryDirectory(prefix="loomfs-http-modes-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "root").mkdir()
        (tmp / "root" / "README.md").write_text("# title\nsome text\n")
        config = write_config(tmp / "roots.toml", [("bench", tmp / "root", "reference")])
        ports = {name: free_port() for name in VARIANTS}
        procs = {name: subprocess.Popen(
            [sys.executable, __file__, "--serve", name, str(port), str(config)],
            stderr=subprocess.DEVNULL) for name, port in ports.items()}
        try:
            deadline = time.monotonic() + 30
            for name, port in ports.items():
                while not healthz_ok(port):
                    if time.monotonic() > deadline or procs[name].poll() is not None:
                        raise SystemExit(f"variant {name} did not start")
                    time.sleep(0.05)
            asyncio.run(drive(ports, {k: v.pid for k, v in procs.items()}, args.runs, args.calls))
        finally:
            for proc in procs.values():
                proc.terminate()
                proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
