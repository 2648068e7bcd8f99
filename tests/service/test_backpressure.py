"""Answers nobody reads stop the intake of new requests, on stdio and on HTTP.

The console script as shipped, in a child process whose resident size is
sampled from /proc while the client sends calls and reads nothing; then the
client reads, and every call is answered. Once 20,000 reads of a 242 KB file
sent on stdin while nothing read stdout took the server from 82 MB to 1.93 GB
in 74 s (the SDK started a task per request and each held its answer), and on
HTTP calls pipelined on 16 connections without reading were all parsed and
queued: +41 MiB in 8 s for 9,600 calls, growing with what was sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.http.limits import LimitedHttpToolsProtocol, uvicorn_limits
from benchmarks.worst_cases_http import (
    BIG_FILE,
    TOKEN,
    build_root,
    call_request,
    open_session,
    server,
    status_kib,
)
from tests.live import env_without_loomfs, live_server

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
BOUND_MIB = 20.0  # resident growth while nothing is read: tens of MiB, not hundreds
PAD = "p" * 1000  # in each call's _meta: the calls outgrow the pipe's and reader's buffers


def _call(n: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "read_text_file", "arguments": {"path": BIG_FILE}, "_meta": {"pad": PAD}}}


def _peak_growth_while(pid: int, seconds: float, before: float) -> float:
    """The largest resident size seen in `seconds`, in MiB above `before` (MiB)."""
    peak = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, status_kib(pid, "VmRSS") / 1024)
        time.sleep(0.05)
    return peak - before


def test_stdio_takes_no_request_while_answers_go_unread_and_resumes(tmp_path: Path) -> None:
    cfg = build_root(Path(os.path.realpath(tmp_path)))
    proc = subprocess.Popen([EXE, "--config", str(cfg)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env_without_loomfs())
    assert proc.stdin is not None and proc.stdout is not None
    calls = 1500
    written = 0

    def write() -> None:
        nonlocal written
        assert proc.stdin is not None
        with contextlib.suppress(OSError, ValueError):  # the test ended before the writer
            for n in range(1, calls + 1):
                proc.stdin.write(json.dumps(_call(n)).encode() + b"\n")
                proc.stdin.flush()
                written = n

    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "unread", "version": "0"}}}
        proc.stdin.write(json.dumps(init).encode() + b'\n{"jsonrpc":"2.0","method":'
                         b'"notifications/initialized"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        time.sleep(0.3)
        idle = status_kib(proc.pid, "VmRSS") / 1024
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        grown = _peak_growth_while(proc.pid, 6.0, idle)
        assert written < calls, "the server took every request while nothing read its answers"
        assert grown < BOUND_MIB, f"{grown:.1f} MiB above idle while answers went unread"
        # The client reads: the rest of the calls go in, and every one is answered once.
        answered: list[int] = []
        while len(answered) < calls:
            message = json.loads(proc.stdout.readline())
            assert "result" in message and not message["result"].get("isError"), message
            answered.append(message["id"])
        writer.join(timeout=30)
        assert sorted(answered) == list(range(1, calls + 1))
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _read_answers(sock: socket.socket, count: int) -> list[int]:
    """The statuses of the next `count` answers on a keep-alive connection (Content-Length)."""
    buf = b""
    statuses: list[int] = []
    sock.settimeout(60)
    while len(statuses) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(1 << 16)
            assert chunk, f"closed after {len(statuses)} answers"
            buf += chunk
        head_end = buf.index(b"\r\n\r\n") + 4
        lines = buf[:head_end].decode("latin-1").split("\r\n")
        length = next(int(v) for k, _, v in (h.partition(": ") for h in lines[1:])
                      if k.lower() == "content-length")
        while len(buf) < head_end + length:
            chunk = sock.recv(1 << 16)
            assert chunk, f"closed after {len(statuses)} answers"
            buf += chunk
        statuses.append(int(lines[0].split()[1]))
        buf = buf[head_end + length:]
    return statuses


def test_http_parses_no_request_while_an_answer_goes_unread_and_resumes(tmp_path: Path) -> None:
    cfg = build_root(Path(os.path.realpath(tmp_path)))
    connections, calls = 16, 600
    with server(cfg) as (proc, port):
        sid = open_session(port)
        time.sleep(0.3)
        idle = status_kib(proc.pid, "VmRSS") / 1024
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
        try:
            for k, s in enumerate(socks):  # the kernel's buffers take them: the server must not
                s.settimeout(30)
                s.sendall(b"".join(call_request(sid, k * calls + n) for n in range(calls)))
            grown = _peak_growth_while(proc.pid, 6.0, idle)
            assert grown < BOUND_MIB, f"{grown:.1f} MiB above idle while answers went unread"
            for s in socks[1:]:
                s.close()
            assert _read_answers(socks[0], calls) == [200] * calls
        finally:
            for s in socks:
                s.close()


class _QuickUnread(LimitedHttpToolsProtocol):
    answer_timeout = 0.5


def test_a_connection_whose_answers_stay_unread_is_closed(tmp_path: Path) -> None:
    """Answers fill the socket's buffers; once writing has waited `answer_timeout` for the
    client to read, the connection is closed (shipped: a minute, test_shipped_limits)."""
    cfg = build_root(Path(os.path.realpath(tmp_path)))
    calls = 600  # ~30 MB of answers: far more than the kernel buffers a socket
    with live_server(cfg, token=TOKEN, uvicorn_options=uvicorn_limits(_QuickUnread)) as srv:
        sid = open_session(srv.port)
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.sendall(b"".join(call_request(sid, n) for n in range(calls)))
            time.sleep(4)  # reading nothing
            with pytest.raises((AssertionError, ConnectionResetError)):  # closed, or reset
                _read_answers(s, calls)  # (our requests were still in its buffer)
        assert httpx.get(f"{srv.base}/healthz", timeout=5).status_code == 200
