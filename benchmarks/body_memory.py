"""Peak memory of one large write_file over HTTP: how many times the body is held.

    .venv/bin/python benchmarks/body_memory.py [--mib 8] [--runs 3]

Starts the console script (`python -m app --transport http`) on a workspace
root, opens a session, resets the server's peak resident size (Linux
`/proc/PID/clear_refs`), POSTs one `write_file` whose content is --mib MiB, and
prints the growth of the server's peak (`VmHWM`) over its size before: the
median of --runs servers. The body itself is held once (app/http.py); what
remains is the SDK's parse of the message and the file's encoding.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = str(Path(__file__).resolve().parent.parent)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])  # kB
    raise RuntimeError(key)


def one(folder: Path, mib: int) -> float:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOMFS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(folder / "roots.toml"), "--transport",
         "http", "--port", str(port), "--no-auth"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}
        with httpx.Client(timeout=120) as c:
            sid = c.post(base + "/mcp", json=init, headers=HEADERS).headers["mcp-session-id"]
            h = {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            c.post(base + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                   headers=h)

            def write(n: int, content: str) -> httpx.Response:
                return c.post(base + "/mcp", headers=h, content=json.dumps({
                    "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                        "name": "write_file",
                        "arguments": {"path": "big.txt", "content": content, "overwrite": True}}}
                ).encode())

            write(2, "warm-up")
            with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
                f.write("5")
            before = _status(proc.pid, "VmRSS")
            r = write(3, "y" * (mib << 20))
            assert r.status_code == 200, r.text[:200]
            return (_status(proc.pid, "VmHWM") - before) / 1024
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", type=int, default=8)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="loomfs-body-") as tmp:
        folder = Path(tmp)
        (folder / "root").mkdir()
        (folder / "roots.toml").write_text(
            f'audit_log = "{folder / "audit.log"}"\n[[roots]]\nname = "w"\n'
            f'path = "{folder / "root"}"\nrole = "workspace"\n')
        growth = [one(folder, args.mib) for _ in range(args.runs)]
    print(f"write_file of {args.mib} MiB over HTTP: server peak growth "
          f"{statistics.median(growth):.1f} MiB (median of {args.runs}; "
          f"{statistics.median(growth) / args.mib:.1f}x the content)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
