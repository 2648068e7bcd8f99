"""Crash safety of copy_file: a process copying large files over one destination is
SIGKILLed at random moments; the destination is always the old file or a whole new one,
never a part, what it held before is still there or kept in the trash (never neither),
and no temp file is visible (the pattern of test_crash_safety.py)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.fs.change.sweep import sweep_temp_files
from app.security.walk import Walker
from tests.fs.conftest import make_disk, populate, roots_config
from tests.kit import loaded_root

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILLS = 20
SIZE = 8 << 20  # large enough that a kill lands inside a copy most of the time
REPO = Path(__file__).resolve().parents[3]

COPIER = textwrap.dedent(
    """
    import os, sys
    from app.registry import Registry
    from app.fs.change.copy import copy_file

    snap = Registry(sys.argv[1], audit=False).current
    src, ws = snap.root("src"), snap.root("ws")
    print("ready", flush=True)
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                n = first = int(line)  # each round starts with the other file
                while True:
                    copy_file(src, ("a.bin", "b.bin")[n % 2], ws, "big.bin", overwrite=True)
                    if n == first:
                        print("started", flush=True)
                    n += 1
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def test_sigkill_during_a_large_copy_never_leaves_a_part(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = str(roots_config(disk))
    rng = random.Random(20261201)
    old = b"old" * (SIZE // 3)
    versions = {old, rng.randbytes(SIZE), rng.randbytes(SIZE + 4096)}
    (disk.ws / "big.bin").write_bytes(old)
    a, b = sorted(versions - {old}, key=len)
    (disk.src / "a.bin").write_bytes(a)
    (disk.src / "b.bin").write_bytes(b)

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    helper = subprocess.Popen(
        [sys.executable, "-c", COPIER, cfg],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    assert helper.stdin is not None and helper.stdout is not None
    root = loaded_root(cfg, "ws")
    trash = disk.ws / ".mcp-trash"
    leftovers_seen = changed = 0
    try:
        assert helper.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120
        for round_ in range(KILLS):
            assert time.monotonic() < deadline, "crash loop took too long"
            before = (disk.ws / "big.bin").read_bytes()
            stamps = set(os.listdir(trash)) if trash.exists() else set()
            helper.stdin.write(f"{round_}\n")
            helper.stdin.flush()
            lines = {helper.stdout.readline().strip() for _ in range(2)}
            lines.discard("started")
            (pid,) = (int(x) for x in lines)
            time.sleep(rng.uniform(0.0, 0.05))
            os.kill(pid, signal.SIGKILL)
            assert helper.stdout.readline().strip() == "reaped"
            now = (disk.ws / "big.bin").read_bytes()
            assert now in versions, f"big.bin is a part ({len(now)} bytes)"
            changed += now != before
            # Never neither: what big.bin held is still there or kept in the trash.
            if now != before:
                kept = [trash / n / "big.bin" for n in set(os.listdir(trash)) - stamps]
                assert any(p.exists() and p.read_bytes() == before for p in kept)
            leftovers_seen += sum(n.startswith(".mcp-tmp-") for n in os.listdir(disk.ws))
            assert not [e for e in Walker(root, ()) if e.name.startswith(".mcp-tmp-")]
    finally:
        helper.kill()
        helper.communicate(timeout=10)
    assert changed > KILLS // 3, "the copier barely ran: the test proves nothing"
    assert leftovers_seen > 0, "no kill landed inside a copy: the test proves nothing"
    sweep_temp_files(root)
    assert (disk.ws / "big.bin").read_bytes() in versions
