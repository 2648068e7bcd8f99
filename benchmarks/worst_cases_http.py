"""The worst framing an HTTP client can send, and answers nobody reads: the server's peak memory.

    .venv/bin/python benchmarks/worst_cases_http.py [--runs N] [--shape NAME ...]

The server is the console script (`--transport http`, the shipped limits, a
token in `LOOMFS_TOKEN`) in a child process, on a workspace root holding a
242 KB text file. For each shape the script resets the server's peak resident
size (`/proc/PID/clear_refs`), sends the shape over raw sockets, and reports
the server's peak (`VmHWM`) minus its resident size before the shape, the
answer's status line and whether the server closed the connection before the
client had sent everything. Prints the median of `--runs` per shape. The bound
every shape must keep: under 64 MiB above the server's idle size
(`tests/service/test_http_framing.py` sends each shape once and asserts a
tighter bound).

The framing shapes: every byte of HTTP framing the server accepts (request
line, headers, chunk-size lines, chunk extensions, trailers, the bytes between
requests) counts against a cap; once 160 MiB of trailers after the last chunk
of an unauthenticated request raised the server's peak by 164 MiB. The last
shape is a client that sends many calls on many connections and never reads
an answer; the stdio one the same over stdin and stdout (once 20,000 reads of the
242 KB file sent while nothing read stdout took the server from 82 MB to 1.93 GB
in 74 s).

    .venv/bin/python benchmarks/worst_cases_http.py --flood NAME [--flood-seconds S]

The connection floods: connections without the token held open from this
process (`benchmarks/_floods.py`: silent ones reopened as soon as the server
closes them, slowloris ones trickling an unfinished head, reopened too), while
an authenticated client pings in its session every 0.5 s, each call on a new
connection (so it too arrives without credentials first). Prints, median of
`--runs`: the share of its calls answered 200, the median call's time and its
ratio to the same client on the idle server (measured in the same run), and
how many connections the flood opened per second. Once 300 silent connections
reopened had 76 of 86 calls answered 503.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIB = 1 << 20
TOKEN = "worst-cases-http-token"
EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
BIG_FILE = "big.txt"  # 242 KB of text lines


def head(token: str, *, chunked: bool = True, extra: bytes = b"") -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode()
        + b"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        + (b"Transfer-Encoding: chunked\r\n" if chunked else b"") + extra + b"\r\n"
    )


def _repeat(unit: bytes, total: int) -> Iterator[bytes]:
    block = unit * max(1, MIB // len(unit))
    sent = 0
    while sent < total:
        yield block
        sent += len(block)


def trailers(token: str, total: int) -> Iterator[bytes]:
    """A chunked body that ends at once, then trailer lines of 1 MiB each."""
    yield head(token) + b"2\r\n{}\r\n0\r\n"
    yield from _repeat(b"X-Trailer: " + b"t" * (MIB - 13) + b"\r\n", total)
    yield b"\r\n"


def chunk_extensions(token: str, total: int) -> Iterator[bytes]:
    """One-byte chunks, each with a chunk extension of 1 MiB."""
    yield head(token)
    yield from _repeat(b"1;ext=" + b"e" * (MIB - 12) + b"\r\nx\r\n", total)


def tiny_chunks(token: str, total: int) -> Iterator[bytes]:
    """Chunks of one byte: five bytes of framing for each byte of body."""
    yield head(token)
    yield from _repeat(b"1\r\nx\r\n", total)


def long_chunk_size(token: str, total: int) -> Iterator[bytes]:
    """A chunk-size line of leading zeros that never ends."""
    yield head(token)
    yield from _repeat(b"0" * 4096, total)


def request_line(token: str, total: int) -> Iterator[bytes]:
    yield b"GET /healthz?"
    yield from _repeat(b"q" * 4096, total)


def header_flood(token: str, total: int) -> Iterator[bytes]:
    yield b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    yield from _repeat(b"X-Pad: " + b"a" * 8000 + b"\r\n", total)


def many_small_headers(token: str, total: int) -> Iterator[bytes]:
    yield b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    yield from _repeat(b"X-A: 1\r\n", total)


def blank_lines_before_a_request(token: str, total: int) -> Iterator[bytes]:
    """Empty lines where a request line should start (the parser skips them)."""
    yield from _repeat(b"\r\n", total)
    yield b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@dataclass(frozen=True)
class Shape:
    send: Callable[[str, int], Iterator[bytes]]
    authorized: bool
    answers: tuple[int, ...]  # statuses the server may answer before it closes


# Unauthenticated first: none of these needs the token.
SHAPES: dict[str, Shape] = {
    "trailers_unauthenticated": Shape(trailers, False, (401, 400)),
    "chunk_extensions_unauthenticated": Shape(chunk_extensions, False, (401, 400)),
    "tiny_chunks_unauthenticated": Shape(tiny_chunks, False, (401, 400)),
    "long_chunk_size_unauthenticated": Shape(long_chunk_size, False, (401, 400)),
    "request_line": Shape(request_line, False, (431,)),
    "header_flood": Shape(header_flood, False, (431,)),
    "many_small_headers": Shape(many_small_headers, False, (431,)),
    "blank_lines_before_a_request": Shape(blank_lines_before_a_request, False, (431,)),
    "trailers_authorized": Shape(trailers, True, (400,)),
    "chunk_extensions_authorized": Shape(chunk_extensions, True, (400,)),
    "tiny_chunks_authorized": Shape(tiny_chunks, True, (400,)),
}


def status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])
    raise RuntimeError(f"no {key} for {pid}")


def reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_root(folder: Path) -> Path:
    """A workspace root with the 242 KB file; returns the config's path."""
    root = folder / "ws"
    root.mkdir()
    line = "".join(chr(97 + i % 26) for i in range(79)) + "\n"
    (root / BIG_FILE).write_text(line * (242_000 // len(line)))
    cfg = folder / "roots.toml"
    cfg.write_text(f'[[roots]]\nname = "ws"\npath = "{root}"\nrole = "workspace"\n')
    return cfg


@contextlib.contextmanager
def server(cfg: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The console script serving HTTP with the shipped limits; (process, port)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOMFS_")}
    env["LOOMFS_TOKEN"] = TOKEN
    proc = subprocess.Popen(
        [EXE, "--config", str(cfg), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    try:
        wait_healthy(proc, port)
        yield proc, port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_healthy(proc: subprocess.Popen[bytes], port: int, deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200 "):
                    return
        time.sleep(0.05)
    raise RuntimeError("the server did not answer /healthz in time")


def send_shape(port: int, chunks: Iterator[bytes], timeout: float = 30.0) -> tuple[bytes, bool]:
    """Send every chunk (as far as the server lets us) while reading what it answers.
    Returns (what it answered, whether it closed before the client had sent everything)."""
    answer = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        def read() -> None:
            with contextlib.suppress(OSError):
                while chunk := s.recv(65536):
                    answer.extend(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        closed_early = False
        try:
            for chunk in chunks:
                s.sendall(chunk)
        except OSError:
            closed_early = True
        if not closed_early:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_WR)
        reader.join(timeout)
    return bytes(answer), closed_early


def first_status(answer: bytes) -> int | None:
    if not answer.startswith(b"HTTP/1.1 "):
        return None
    return int(answer[9:12])


def run_shape(proc: subprocess.Popen[bytes], port: int, name: str,
              total: int = 160 * MIB) -> dict[str, object]:
    shape = SHAPES[name]
    token = TOKEN if shape.authorized else "wrong-" + TOKEN
    time.sleep(0.2)
    reset_peak(proc.pid)
    before = status_kib(proc.pid, "VmRSS")
    t0 = time.perf_counter()
    answer, closed_early = send_shape(port, shape.send(token, total))
    wall = time.perf_counter() - t0
    grown = (status_kib(proc.pid, "VmHWM") - before) / 1024
    return {"rss_growth_mib": grown, "status": first_status(answer), "closed_early": closed_early,
            "wall_s": wall}


# --- answers nobody reads


def unread_answers(port: int, connections: int = 32, calls: int = 400,
                   seconds: float = 20.0) -> int:
    """`connections` keep-alive connections, each sending `calls` reads of the 242 KB file
    in one session and never reading an answer, for `seconds` (the sockets stay open that
    long). Returns the calls the server let them send."""
    sid = open_session(port)
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
    pending = {s: b"".join(call_request(sid, k * calls + n) for n in range(calls))
               for k, s in enumerate(socks)}
    per_call = len(pending[socks[0]]) // calls
    sent = 0
    end = time.monotonic() + seconds
    try:
        for s in socks:
            s.setblocking(False)
        while time.monotonic() < end:
            for s in list(pending):
                try:
                    n = s.send(pending[s])
                except BlockingIOError:
                    continue
                except OSError:
                    del pending[s]
                    continue
                pending[s] = pending[s][n:]
                sent += n
                if not pending[s]:
                    del pending[s]
            time.sleep(0.05)
    finally:
        for s in socks:
            s.close()
    return sent // per_call


def call_request(sid: str, request_id: int) -> bytes:
    """One HTTP request: a read of the 242 KB file in session `sid` (ids must differ: the
    SDK routes a session's answers by JSON-RPC id)."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "read_text_file",
                                  "arguments": {"path": BIG_FILE, "root": "ws"}}}).encode()
    return head(TOKEN, chunked=False, extra=(
        b"Content-Length: %d\r\nmcp-session-id: %s\r\nmcp-protocol-version: 2025-11-25\r\n"
        % (len(body), sid.encode()))) + body


def open_session(port: int) -> str:
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "worst-cases-http", "version": "0"}}}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head(TOKEN, chunked=False, extra=b"Content-Length: %d\r\nConnection: close\r\n"
                       % len(init)) + init)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    for line in answer.split(b"\r\n"):
        if line.lower().startswith(b"mcp-session-id:"):
            return line.split(b":", 1)[1].strip().decode()
    raise RuntimeError(f"no session: {answer[:300]!r}")


def run_unread(proc: subprocess.Popen[bytes], port: int) -> dict[str, object]:
    time.sleep(0.2)
    reset_peak(proc.pid)
    before = status_kib(proc.pid, "VmRSS")
    t0 = time.perf_counter()
    sent = unread_answers(port)
    wall = time.perf_counter() - t0
    grown = (status_kib(proc.pid, "VmHWM") - before) / 1024
    return {"rss_growth_mib": grown, "status": f"{sent} calls sent", "closed_early": False,
            "wall_s": wall}


def stdio_unread(cfg: Path, calls: int, seconds: float = 10.0) -> dict[str, object]:
    """The console script over stdio: `calls` reads of the 242 KB file written on its stdin
    while nothing reads its stdout, for `seconds`; then every answer read."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOMFS_")}
    proc = subprocess.Popen([EXE, "--config", str(cfg)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    written = 0

    def write() -> None:
        nonlocal written
        with contextlib.suppress(OSError, ValueError):
            for n in range(1, calls + 1):
                stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                        "params": {"name": "read_text_file",
                                                   "arguments": {"path": BIG_FILE}}}).encode()
                            + b"\n")
                stdin.flush()
                written = n

    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "worst-cases-http", "version": "0"}}}
        stdin.write(json.dumps(init).encode() + b"\n")
        stdin.flush()
        stdout.readline()
        time.sleep(0.3)
        before = status_kib(proc.pid, "VmRSS")
        reset_peak(proc.pid)
        t0 = time.perf_counter()
        threading.Thread(target=write, daemon=True).start()
        time.sleep(seconds)
        grown = (status_kib(proc.pid, "VmHWM") - before) / 1024
        taken = written
        answered = sum(1 for _ in range(calls) if b'"result"' in stdout.readline())
        return {"rss_growth_mib": grown, "status": f"{taken} of {calls} written while unread, "
                f"{answered} answered after", "closed_early": False,
                "wall_s": time.perf_counter() - t0}
    finally:
        with contextlib.suppress(OSError):
            stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- connection floods, and an authenticated client beside them

FLOODS: dict[str, tuple[str, int]] = {  # name: (shape of benchmarks/_floods.py, connections)
    "silent_300_reopened": ("silent_reopened", 300),
    "slowloris_400_reopened": ("slowloris_reopened", 400),
    "silent_1000_reopened": ("silent_reopened", 1000),
}


def probe_for(port: int, sid: str, seconds: float, every: float = 0.5
              ) -> tuple[list[int], list[float]]:
    """A ping every `every` s for `seconds`, each on a new connection: (statuses, times)."""
    from benchmarks._floods import probe

    statuses: list[int] = []
    times: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        statuses.append(probe(port, TOKEN, sid, len(statuses) + 2))
        times.append(time.perf_counter() - t0)
        time.sleep(max(0.0, every - times[-1]))
    return statuses, times


def run_flood(port: int, name: str, seconds: float) -> dict[str, float]:
    from benchmarks._floods import SHAPES, Flood, open_session

    shape, count = FLOODS[name]
    sid = open_session(port, TOKEN)
    _, idle = probe_for(port, sid, min(seconds, 5.0))
    with Flood(port, count, SHAPES[shape]) as flood:
        time.sleep(1.0)  # the flood in place
        opened, t0 = flood.opened, time.monotonic()
        statuses, times = probe_for(port, sid, seconds)
        rate = (flood.opened - opened) / (time.monotonic() - t0)
    time.sleep(1.0)  # the server drains before the next run
    return {"ok": 100 * statuses.count(200) / len(statuses), "calls": len(statuses),
            "ms": 1000 * _median(times), "idle_ms": 1000 * _median(idle),
            "opened_per_s": rate}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_floods(port: int, names: list[str], runs: int, seconds: float) -> None:
    print(f"{'flood':26} {'auth calls ok':>13} {'median ms':>10} {'vs idle':>8} "
          f"{'opened/s':>9}")
    for name in names:
        done = [run_flood(port, name, seconds) for _ in range(runs)]
        ok, ms, idle, rate = (statistics.median(r[k] for r in done)
                              for k in ("ok", "ms", "idle_ms", "opened_per_s"))
        calls = int(statistics.median(r["calls"] for r in done))
        print(f"{name:26} {ok:12.1f}% {ms:10.1f} {ms / idle:7.2f}x {rate:9.0f}  "
              f"({calls} calls a run)", flush=True)
    print(f"(median of {runs} runs of {seconds:.0f} s; a ping every 0.5 s, each on a new "
          "connection; 'vs idle': against the same client before the flood)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shape", action="append",
                        choices=[*SHAPES, "unread_answers", "stdio_unread_answers"])
    parser.add_argument("--mib", type=int, default=160, help="bytes of each framing shape")
    parser.add_argument("--stdio-calls", type=int, default=2000)
    parser.add_argument("--stdio-seconds", type=float, default=10.0,
                        help="how long the stdio client writes without reading")
    parser.add_argument("--flood", action="append", choices=list(FLOODS))
    parser.add_argument("--flood-seconds", type=float, default=20.0,
                        help="how long the authenticated client calls during each flood")
    args = parser.parse_args(argv)
    everything = not args.shape and not args.flood
    names = args.shape or ([*SHAPES, "unread_answers", "stdio_unread_answers"]
                           if everything else [])
    floods = args.flood or (list(FLOODS) if everything else [])
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-http-") as tmp:
        cfg = build_root(Path(os.path.realpath(tmp)))
        with server(cfg) as (proc, port):
            if floods:
                print_floods(port, floods, args.runs, args.flood_seconds)
            if not names:
                return 0
            print(f"server idle: {status_kib(proc.pid, 'VmRSS') / 1024:.1f} MiB")
            print(f"{'shape':34} {'RSS growth MiB':>15} {'wall s':>8}  answer, closed early")
            for name in names:
                runs = [run_unread(proc, port) if name == "unread_answers"
                        else stdio_unread(cfg, args.stdio_calls, args.stdio_seconds)
                        if name == "stdio_unread_answers"
                        else run_shape(proc, port, name, args.mib * MIB)
                        for _ in range(args.runs)]
                rss = statistics.median(float(str(r["rss_growth_mib"])) for r in runs)
                wall = statistics.median(float(str(r["wall_s"])) for r in runs)
                last = runs[-1]
                print(f"{name:34} {rss:15.1f} {wall:8.2f}  {last['status']}, "
                      f"{last['closed_early']}", flush=True)
    print(f"(median of {args.runs} per shape; {args.mib} MiB of framing offered each; "
          "bound: under 64 MiB above idle)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
