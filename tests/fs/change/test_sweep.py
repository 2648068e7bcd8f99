"""The start-up sweep removes temp files a crash left, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from app.fs.change.sweep import sweep_temp_files
from app.registry import Registry
from tests.fs.conftest import make_disk, populate, roots_config

REPO = Path(__file__).resolve().parents[3]


def plant(disk) -> tuple[list[Path], list[Path]]:
    """Leftovers the sweep must remove, and look-alikes it must keep."""
    ws = disk.ws
    (ws / "deep" / "er").mkdir(parents=True)
    removed = [ws / ".mcp-tmp-0a1b", ws / "dir" / ".mcp-tmp-ffff", ws / "deep/er/.mcp-tmp-x"]
    kept = [
        ws / "keep.mcp-tmp-1",  # the pattern is a prefix
        ws / ".git" / ".mcp-tmp-in-denied",  # denied trees are not ours to touch
        ws / ".mcp-trash" / ".mcp-tmp-in-trash",
        disk.outside / ".mcp-tmp-bait",  # reachable only through link_out: never followed
        disk.ref / ".mcp-tmp-ref",  # a root without write never had temp files of ours
        disk.src / "pkg" / "keep.txt",
    ]
    (ws / ".mcp-trash").mkdir()
    for p in removed + kept:
        p.write_text("x")
    (ws / ".mcp-tmp-dir").mkdir()  # a directory is never one of our temp files
    kept.append(ws / ".mcp-tmp-dir")
    (ws / ".mcp-tmp-link").symlink_to(disk.outside / ".mcp-tmp-bait")
    kept.append(ws / ".mcp-tmp-link")
    return removed, kept


def test_sweep_removes_leftovers_and_nothing_else(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    removed, kept = plant(disk)
    (disk.src / ".mcp-tmp-src").write_text("x")
    removed.append(disk.src / ".mcp-tmp-src")
    snap = Registry(str(roots_config(disk)), audit=False).current
    counts = {name: sweep_temp_files(root) for name, root in snap.roots.items()}
    assert counts == {"ws": 3, "src": 1, "ref": 0}
    assert not [p for p in removed if os.path.lexists(p)]
    assert all(os.path.lexists(p) for p in kept)


def test_server_start_sweeps_writable_roots(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    populate(disk)
    removed, kept = plant(disk)
    cfg = roots_config(disk)
    # The real console entry point; the sweep runs before the roots are announced.
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--config", str(cfg), "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stderr is not None  # stderr=PIPE
    watchdog = threading.Timer(60, proc.kill)  # a hung start fails the test, not the run
    watchdog.start()
    said: list[str] = []
    try:
        for line in proc.stderr:
            said.append(line)
            if line.startswith("transport:"):
                break
        assert not [p for p in removed if os.path.lexists(p)]
        assert all(os.path.lexists(p) for p in kept)
    finally:
        watchdog.cancel()
        proc.terminate()
        proc.communicate(timeout=30)
    text = "".join(said)
    assert "transport: http" in text
    assert "removed 3 leftover temp file(s)" in text
    assert str(disk.base) not in text
