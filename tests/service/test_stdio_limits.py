"""stdio: a line over the limit is dropped unread and answered with an error; memory stays flat.

The console script on real pipes. A 100 MB line once lifted the process to 371 MB.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.service.test_stdio_pipes import EXE, HELLO


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmHWM:"):
                return int(row.split()[1])
    raise AssertionError("no VmHWM")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_an_oversized_line_is_refused_and_the_session_goes_on(one_root_config) -> None:
    proc = subprocess.Popen([EXE, "--config", str(one_root_config("reference"))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for m in HELLO:
            proc.stdin.write(json.dumps(m).encode() + b"\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first["id"] == 1
        time.sleep(0.2)
        before = _peak_kib(proc.pid)

        def flood() -> None:
            assert proc.stdin is not None
            head = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"'
            proc.stdin.write(head)
            block = b"x" * (1 << 20)
            for _ in range(100):  # 100 MB in one line
                proc.stdin.write(block)
            proc.stdin.write(b'"}}\n')
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
                             + b"\n")
            proc.stdin.flush()

        writer = threading.Thread(target=flood)
        writer.start()
        got = [json.loads(proc.stdout.readline()) for _ in range(2)]
        writer.join(timeout=60)
        assert got[0]["id"] is None and got[0]["error"]["code"] == -32600
        assert "request too large" in got[0]["error"]["message"]
        assert got[1] == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert _peak_kib(proc.pid) - before < 48 * 1024  # KiB: not hundreds of MB
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
        proc.stdout.close()
