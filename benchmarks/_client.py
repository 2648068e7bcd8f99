"""Plumbing shared by the benchmark scripts: servers as real processes, clients, stats.

Everything here talks to servers on loopback only and bounds its own waits.

- `ServerProcess` runs our console script (`loom-fs-mcp --transport http`) as a
  subprocess on a free port, so the RSS and CPU time it reports (`/proc/PID`)
  are the server's own, not the client's.
- `reference_server()` installs `@modelcontextprotocol/server-filesystem` with
  npm into a cache folder (gitignored) once, and returns its entry point.
- `stdio_session` / `http_session` give initialised MCP SDK `ClientSession`s;
  `StatusCounter` is an httpx event hook that counts HTTP statuses.
- `summary`, `percentile`: nearest-rank statistics, in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LOOMFS_BENCH_CACHE", REPO / "benchmarks" / ".cache"))
REFERENCE_PACKAGE = "@modelcontextprotocol/server-filesystem"
REFERENCE_VERSION = "2026.8.31"  # pinned: figures compare against one known release
HEALTH_DEADLINE = 20.0


# -- statistics ---------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(seconds: Sequence[float]) -> dict[str, float]:
    """Median, p90 and p99 of per-call latencies, in milliseconds."""
    return {
        "median_ms": statistics.median(seconds) * 1000,
        "p90_ms": percentile(seconds, 90) * 1000,
        "p99_ms": percentile(seconds, 99) * 1000,
    }


# -- processes ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def console_script() -> list[str]:
    """The installed `loom-fs-mcp` beside this interpreter, else `python -m app`."""
    script = Path(sys.executable).parent / "loom-fs-mcp"
    if script.exists():
        return [str(script)]
    found = shutil.which("loom-fs-mcp")
    return [found] if found else [sys.executable, "-m", "app"]


def read_rss(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, in KiB (Linux)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def newest_child(parent: int | None = None) -> int:
    """The most recently started child process of `parent` (default: this one), Linux."""
    parent = os.getpid() if parent is None else parent
    best: tuple[int, int] | None = None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            started = int(fields[19])
            if best is None or started >= best[0]:
                best = (started, int(entry))
    if best is None:
        raise RuntimeError("no child process")
    return best[1]


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux: clear_refs 5); False where refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def healthz_ok(port: int, timeout: float = 1.0) -> bool:
    """One raw GET /healthz; True on a 200. Raw socket: no client import cost in the timing."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            head = s.recv(64)
        return head.startswith(b"HTTP/1.1 200")
    except OSError:
        return False


class ServerProcess:
    """Our server over HTTP as a real subprocess (the console script) on a free port."""

    def __init__(self, config: Path, *, log: Path, extra_env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.base = f"http://127.0.0.1:{self.port}"
        argv = [*console_script(), "--transport", "http", "--port", str(self.port)]
        argv += ["--config", str(config)]
        env = {**os.environ, **(extra_env or {})}
        # HTTP is closed by default (the first start makes a token); a loopback benchmark that
        # configures none serves without, as a person would say with --no-auth.
        if not (env.get("LOOMFS_TOKEN") or env.get("LOOMFS_TOKEN_FILE")):
            argv.append("--no-auth")
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=self._log, env=env)
        self.startup_s: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_healthy(self, deadline: float = HEALTH_DEADLINE, poll: float = 0.002) -> float:
        """Seconds from spawn to the first 200 on /healthz."""
        end = self.started + deadline
        while time.perf_counter() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode} before /healthz")
            if healthz_ok(self.port):
                self.startup_s = time.perf_counter() - self.started
                return self.startup_s
            time.sleep(poll)
        raise RuntimeError("server did not answer /healthz in time")

    def rss(self) -> dict[str, int]:
        return read_rss(self.pid)

    def reset_peak(self) -> bool:
        return reset_peak(self.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the reference server -----------------------------------------------------


def reference_server(cache: Path = CACHE) -> Path:
    """The reference server's entry point, installed with npm into `cache` if missing."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise SystemExit("the reference server needs node and npm on PATH")
    prefix = cache / f"server-filesystem-{REFERENCE_VERSION}"
    entry = prefix / "node_modules" / REFERENCE_PACKAGE / "dist" / "index.js"
    if not entry.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"installing {REFERENCE_PACKAGE}@{REFERENCE_VERSION} into {prefix} ...",
              file=sys.stderr)
        subprocess.run(
            ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent",
             f"{REFERENCE_PACKAGE}@{REFERENCE_VERSION}"],
            check=True,
            timeout=600,
        )
    return entry


# -- config -------------------------------------------------------------------


def toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_value(value: int | str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return toml_str(value) if isinstance(value, str) else str(value)


def write_config(
    path: Path, roots: Iterable[tuple[str, Path, str]], **limits: int | str | bool
) -> Path:
    """A roots file: `roots` as (name, folder, role); `limits` as top-level keys."""
    lines = [f"audit_log = {toml_str(str(path.parent / 'audit.log'))}"]
    for key, value in limits.items():
        lines.append(f"{key} = {toml_value(value)}")
    for name, folder, role in roots:
        lines += ["", "[[roots]]", f"name = {toml_str(name)}",
                  f"path = {toml_str(str(folder))}", f"role = {toml_str(role)}"]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- MCP clients ----------------------------------------------------------------


class CallFailed(Exception):
    """A tool call answered `isError`, or the transport failed."""


class StatusCounter:
    """An httpx response hook: counts every HTTP status the client saw."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()

    async def __call__(self, response: Any) -> None:
        self.counts[response.status_code] += 1

    def non_2xx(self) -> int:
        return sum(n for code, n in self.counts.items() if not 200 <= code < 300)

    def server_errors(self) -> int:
        return sum(n for code, n in self.counts.items() if code >= 500)


@contextlib.asynccontextmanager
async def stdio_session(
    command: str, args: list[str], env: dict[str, str] | None = None
) -> AsyncIterator[Any]:
    """An initialised ClientSession on a server spawned over stdio (stderr discarded);
    `env`: variables set for it over the SDK's default environment."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str, counter: StatusCounter | None = None) -> AsyncIterator[Any]:
    """An initialised ClientSession over Streamable HTTP; statuses go to `counter`."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    hooks: dict[str, list[Callable[..., Any]]] = (
        {"response": [counter]} if counter is not None else {}
    )
    async with (
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(30.0, read=300.0), event_hooks=hooks, trust_env=False
        ) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: Any, name: str, args: dict[str, Any], *, validate: bool = True) -> Any:
    """Call a tool; raise CallFailed on a tool error. Returns the result.

    `validate=False` sends the same `tools/call` without the SDK client's own
    check of the result against the tool's output schema (pure-Python
    `jsonschema`, every call): what a client that does not validate pays.
    """
    if validate:
        result = await session.call_tool(name, args)
    else:
        from mcp import types

        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=name, arguments=args)
        )
        result = await session.send_request(request, types.CallToolResult)
    if getattr(result, "is_error", False):
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise CallFailed(f"{name}: {text[:300]}")
    return result


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)
