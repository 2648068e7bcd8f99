"""A kill mid-patch: a process applying one patch to three files again and again is
SIGKILLed at random moments; every file is then wholly its old or its new content (never a
mix inside one file, never cut), what a changed file held is kept in the trash, and the
files may disagree with each other (some new, some old: docs/tools.md#patches says so).

As in test_crash_safety.py, a helper imports the app once and forks a fresh writer per
round; each writer flips the three files with apply_patch (each from the state it is in)
until it is killed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.crashloop import CrashLoop, kept_since, stamps
from tests.fs.conftest import make_disk, populate, roots_config

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILLS = 20
FILES = 3


def versions(i: int) -> tuple[bytes, bytes]:
    """A file's two contents, of different sizes, so that a mix or a cut shows."""
    body = "".join(f"{i} line {n}\n" for n in range(3000))
    return f"state: A\n{body}".encode(), f"state: BB\n{body}".encode()


WRITER = """
from app.registry import Registry
from app.fs.change.patch import apply_patch

cfg, files = sys.argv[1], int(sys.argv[2])
root = Registry(cfg, audit=False).current.root("ws")

def flip():  # each file flipped from the state it is in (a kill may leave them apart)
    body = ""
    for i in range(files):
        with open(os.path.join(root.real, f"p{i}.txt")) as f:
            now = f.readline().split()[1]
        body += (f"*** Update File: p{i}.txt\\n@@\\n-state: {now}\\n"
                 f"+state: {'BB' if now == 'A' else 'A'}\\n")
    return "*** Begin Patch\\n" + body + "*** End Patch\\n"

def step(n):
    apply_patch(root, flip())
"""


def test_a_kill_mid_patch_leaves_each_file_whole_old_or_new(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = str(roots_config(disk, max_read=1 << 20))
    names = [f"p{i}.txt" for i in range(FILES)]
    for i, name in enumerate(names):
        (disk.ws / name).write_bytes(versions(i)[0])
    allowed = {name: set(versions(i)) for i, name in enumerate(names)}
    rng = random.Random(20261203)
    trash = disk.ws / ".mcp-trash"
    changed = 0
    with CrashLoop(WRITER, cfg, str(FILES)) as loop:
        for n in range(KILLS):
            before = {name: (disk.ws / name).read_bytes() for name in names}
            made = stamps(trash)
            loop.kill_round(n, rng)
            now = {name: (disk.ws / name).read_bytes() for name in names}
            for name, data in now.items():
                assert data in allowed[name], f"{name} is torn ({len(data)} bytes)"
            changed += now != before
            for name, data in before.items():
                if now[name] != data:  # replaced: what it held is kept
                    assert kept_since(trash, made, name, data), name
    assert changed > KILLS // 2, "the writer barely ran: the test proves nothing"
