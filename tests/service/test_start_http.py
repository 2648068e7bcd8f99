"""start_http.sh from a fresh copy of the repository, as a new user runs it."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.live import env_without_loomfs, free_port

REPO = Path(__file__).resolve().parents[2]


def fresh_copy(dest: Path) -> Path:
    """The files git tracks (or would track), without venv, caches or local config."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in listed:
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def run_until_healthy(copy: Path, env: dict[str, str], deadline: float) -> tuple[int, str]:
    port = free_port()
    env = env_without_loomfs(**env)
    env["LOOMFS_PORT"] = str(port)
    # Outside the copy: the example config serves the repository, and the token the first
    # start makes is never inside a root.
    env["XDG_STATE_HOME"] = str(copy.parent / "state")
    proc = subprocess.Popen(
        ["./start_http.sh"],
        cwd=copy,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    status = 0
    try:
        end = time.monotonic() + deadline
        while time.monotonic() < end and proc.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code
                if status == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    return status, err


def test_start_http_reusing_a_venv_creates_config_and_serves(tmp_path: Path) -> None:
    copy = fresh_copy(tmp_path / "repo")
    status, err = run_until_healthy(
        copy, {"LOOMFS_VENV": str(Path(sys.executable).parents[1])}, deadline=60
    )
    assert status == 200, err
    assert (copy / "config" / "roots.toml").read_text() == (
        copy / "config" / "roots.example.toml"
    ).read_text()
    assert "created config/roots.toml" in err
    assert "transport: http" in err
    # Closed by default: a token was made, outside the copy, and the start said where.
    token = tmp_path / "state" / "loom-fs-mcp" / "token"
    assert f"token: {token} (made now" in err and token.stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_start_http_on_a_fresh_copy_builds_its_own_venv(tmp_path: Path) -> None:
    copy = fresh_copy(tmp_path / "repo")
    status, err = run_until_healthy(copy, {}, deadline=600)
    assert status == 200, err
    assert (copy / ".venv" / "bin" / "loom-fs-mcp").exists()
