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
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.fs.conftest import make_disk, populate, roots_config

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

KILLS = 20
FILES = 3
REPO = Path(__file__).resolve().parents[3]


def versions(i: int) -> tuple[bytes, bytes]:
    """A file's two contents, of different sizes, so that a mix or a cut shows."""
    body = "".join(f"{i} line {n}\n" for n in range(3000))
    return f"state: A\n{body}".encode(), f"state: BB\n{body}".encode()


WRITER = textwrap.dedent(
    """
    import os, sys
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

    print("ready", flush=True)
    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                n = 0
                while True:
                    apply_patch(root, flip())
                    if n == 0:  # one whole patch done: the kill may come from now on
                        print("started", flush=True)
                    n += 1
            finally:
                os._exit(1)
        print(pid, flush=True)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def test_a_kill_mid_patch_leaves_each_file_whole_old_or_new(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = str(roots_config(disk, max_read=1 << 20))
    names = [f"p{i}.txt" for i in range(FILES)]
    for i, name in enumerate(names):
        (disk.ws / name).write_bytes(versions(i)[0])
    allowed = {name: set(versions(i)) for i, name in enumerate(names)}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    helper = subprocess.Popen(
        [sys.executable, "-c", WRITER, cfg, str(FILES)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    assert helper.stdin is not None and helper.stdout is not None
    rng = random.Random(20261203)
    trash = disk.ws / ".mcp-trash"
    changed = 0
    try:
        assert helper.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 90
        for _ in range(KILLS):
            assert time.monotonic() < deadline, "crash loop took too long"
            before = {name: (disk.ws / name).read_bytes() for name in names}
            stamps = set(os.listdir(trash)) if trash.exists() else set()
            helper.stdin.write("go\n")
            helper.stdin.flush()
            lines = {helper.stdout.readline().strip() for _ in range(2)}
            lines.discard("started")
            (pid,) = (int(x) for x in lines)
            time.sleep(rng.uniform(0.0, 0.08))
            os.kill(pid, signal.SIGKILL)
            assert helper.stdout.readline().strip() == "reaped"
            now = {name: (disk.ws / name).read_bytes() for name in names}
            for name, data in now.items():
                assert data in allowed[name], f"{name} is torn ({len(data)} bytes)"
            changed += now != before
            made = set(os.listdir(trash)) - stamps if trash.exists() else set()
            for name, data in before.items():
                if now[name] != data:  # replaced: what it held is kept
                    kept = [trash / m / name for m in made]
                    assert any(p.exists() and p.read_bytes() == data for p in kept), name
    finally:
        helper.kill()
        helper.communicate(timeout=10)
    assert changed > KILLS // 2, "the writer barely ran: the test proves nothing"
