"""Crash safety: a process rewriting files through the write path is SIGKILLed at
random moments, many times; no file is ever torn, what a file held is still there or
kept in the trash (never neither), and no temp file is visible.

A long-lived helper process imports the app once and forks a fresh writer for
each round (so thirty kills cost thirty forks, not thirty interpreter starts);
each writer loops over `write_file` and `edit_file` exactly as the tools call
them, and is killed with SIGKILL after a random delay.
"""

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

KILLS = 30
FILES = 3


def versions(i: int) -> tuple[bytes, bytes]:
    """Two contents per file, of different sizes, so a mix or a cut shows."""
    return (f"{i}:old:".encode() * 7000, f"{i}:NEW!:".encode() * 9000)


def edit_versions() -> tuple[bytes, bytes]:
    body = "".join(f"line {n}\n" for n in range(3000))
    return (f"state: A\n{body}".encode(), f"state: B\n{body}".encode())


WRITER = """
from app.registry import Registry
from app.fs.change.write import write_file
from app.errors import BadArgument
from app.fs.change.edit import edit_file, TextEdit

cfg, files = sys.argv[1], int(sys.argv[2])
root = Registry(cfg, audit=False).current.root("ws")

def versions(i):
    return (f"{i}:old:".encode() * 7000, f"{i}:NEW!:".encode() * 9000)

to_b, to_a = [TextEdit(old_text="state: A", new_text="state: B")], [
    TextEdit(old_text="state: B", new_text="state: A")]

def step(n):  # every file rewritten, then the state line flipped, whichever it is now
    for i in range(files):
        write_file(root, f"f{i}.txt", versions(i)[n % 2].decode(), overwrite=True)
    try:
        edit_file(root, "e.txt", to_b, max_output_chars=100)
    except BadArgument:
        edit_file(root, "e.txt", to_a, max_output_chars=100)
"""


def test_sigkill_at_random_moments_never_leaves_a_torn_file(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = str(roots_config(disk, max_read=1 << 20))
    for i in range(FILES):
        (disk.ws / f"f{i}.txt").write_bytes(versions(i)[0])
    (disk.ws / "e.txt").write_bytes(edit_versions()[0])
    allowed = {f"f{i}.txt": set(versions(i)) for i in range(FILES)}
    allowed["e.txt"] = set(edit_versions())

    rng = random.Random(20261130)
    leftovers_seen = 0
    changed_rounds = 0
    root = loaded_root(cfg, "ws")
    trash = disk.ws / ".mcp-trash"
    with CrashLoop(WRITER, cfg, str(FILES)) as loop:
        for n in range(KILLS):
            before = {name: (disk.ws / name).read_bytes() for name in allowed}
            made = stamps(trash)
            loop.kill_round(n, rng)
            # Every file is entirely one version or the other: never a mix, never cut.
            now = {name: (disk.ws / name).read_bytes() for name in allowed}
            for name, data in now.items():
                assert data in allowed[name], f"{name} is torn ({len(data)} bytes)"
            changed_rounds += now != before
            # Never neither: what a file held before the round is still there, or kept
            # in the trash as a version of it.
            for name, data in before.items():
                if now[name] != data:
                    assert kept_since(trash, made, name, data), name
            names = os.listdir(disk.ws)
            leftovers_seen += sum(n.startswith(".mcp-tmp-") for n in names)
            # Leftovers are never visible through the server's own walk.
            assert not [e for e in Walker(root, ()) if e.name.startswith(".mcp-tmp-")]
    assert changed_rounds > KILLS // 2, "the writer barely ran: the test proves nothing"
    # Kills landed mid-write often enough to leave temp files: the interesting case.
    assert leftovers_seen > 0
    remaining = [n for n in os.listdir(disk.ws) if n.startswith(".mcp-tmp-")]
    assert sweep_temp_files(root) == len(remaining)
    assert not [n for n in os.listdir(disk.ws) if n.startswith(".mcp-tmp-")]
    for name in allowed:
        assert (disk.ws / name).read_bytes() in allowed[name]
