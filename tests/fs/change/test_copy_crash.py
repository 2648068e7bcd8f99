"""Crash safety of copy_file: a process copying large files over one destination is
SIGKILLed at random moments; the destination is always the old file or a whole new one,
never a part, what it held before is still there or kept in the trash (never neither),
and no temp file is visible (the pattern of test_crash_safety.py)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from app.fs.change.sweep import sweep_temp_files
from app.security.walk import Walker
from tests.crashloop import CrashLoop, kept_since, stamps
from tests.fs.conftest import make_disk, populate, roots_config
from tests.kit import loaded_root

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILLS = 20
SIZE = 8 << 20  # large enough that a kill lands inside a copy most of the time

COPIER = """
from app.registry import Registry
from app.fs.change.copy import copy_file

snap = Registry(sys.argv[1], audit=False).current
src, ws = snap.root("src"), snap.root("ws")

def step(n):  # each round starts with the other file
    copy_file(src, ("a.bin", "b.bin")[n % 2], ws, "big.bin", overwrite=True)
"""


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

    root = loaded_root(cfg, "ws")
    trash = disk.ws / ".mcp-trash"
    leftovers_seen = changed = 0
    with CrashLoop(COPIER, cfg, deadline_s=120) as loop:
        for n in range(KILLS):
            before = (disk.ws / "big.bin").read_bytes()
            made = stamps(trash)
            loop.kill_round(n, rng, most_s=0.05)
            now = (disk.ws / "big.bin").read_bytes()
            assert now in versions, f"big.bin is a part ({len(now)} bytes)"
            changed += now != before
            # Never neither: what big.bin held is still there or kept in the trash.
            if now != before:
                assert kept_since(trash, made, "big.bin", before)
            leftovers_seen += sum(n.startswith(".mcp-tmp-") for n in os.listdir(disk.ws))
            assert not [e for e in Walker(root, ()) if e.name.startswith(".mcp-tmp-")]
    assert changed > KILLS // 3, "the copier barely ran: the test proves nothing"
    assert leftovers_seen > 0, "no kill landed inside a copy: the test proves nothing"
    sweep_temp_files(root)
    assert (disk.ws / "big.bin").read_bytes() in versions
