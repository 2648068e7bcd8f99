"""The state folder ($XDG_STATE_HOME/loom-fs-mcp) is settled once at start, never followed.

The console script, started as a person would with XDG_STATE_HOME of the test's own: on
stdio (ended by closing stdin) and on HTTP (where the made token lives there too). A
state folder that is a symbolic link is refused and its target left as it was; links
above it are resolved once and said; a mode open to others is set to 0700 and said.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.kit import config_file, roots_toml
from tests.live import env_without_loomfs, free_port
from tests.service.test_cli_http import wait_healthy
from tests.service.test_stdio_pipes import EXE, HELLO


@pytest.fixture
def default_audit(tmp_path: Path, tree: Path) -> Path:
    """A config without `audit_log`: its audit log (and index) go to the state folder."""
    return config_file(tmp_path, roots_toml(("main", tree, "reference"), audit_log=None),
                       audit=False)


def start_stdio(config: Path, state_home: Path) -> subprocess.CompletedProcess[str]:
    """A stdio start that takes the handshake, then sees stdin closed."""
    lines = "".join(json.dumps(m) + "\n" for m in HELLO)
    return subprocess.run([EXE, "--config", str(config)], input=lines, capture_output=True,
                          text=True, timeout=60,
                          env=env_without_loomfs(XDG_STATE_HOME=str(state_home)))


def a_link_to_a_folder(home: Path) -> Path:
    target = home / "elsewhere"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (home / "loom-fs-mcp").symlink_to(target)
    return target


def mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_a_state_folder_that_is_a_link_is_refused_and_its_target_untouched(
    default_audit: Path, tmp_path: Path
) -> None:
    home = tmp_path / "state"
    home.mkdir()
    target = a_link_to_a_folder(home)
    proc = start_stdio(default_audit, home)
    assert proc.returncode == 1, proc.stderr
    assert "state folder" in proc.stderr and "is a symbolic link" in proc.stderr
    assert "refusing to follow it" in proc.stderr
    assert mode(target) == 0o755 and list(target.iterdir()) == []  # no audit log made in it
    assert proc.stdout == ""
    assert str(target) not in proc.stderr and str(home) not in proc.stderr  # stdio: no paths


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (0o777, "had mode 0777; set to 0700"),
        (0o750, "had mode 0750; set to 0700"),
        (0o700, None),
        (None, None),  # made now, 0700
    ],
)
def test_a_state_folder_open_to_others_is_closed_and_said(
    default_audit: Path, tmp_path: Path, before: int | None, said: str | None
) -> None:
    home = tmp_path / "state"
    home.mkdir()
    folder = home / "loom-fs-mcp"
    if before is not None:
        folder.mkdir()
        folder.chmod(before)
    proc = start_stdio(default_audit, home)
    assert proc.returncode == 0, proc.stderr
    assert mode(folder) == 0o700
    assert (folder / "audit.log").exists()
    if said is None:
        assert "state folder" not in proc.stderr, proc.stderr
    else:
        assert said in proc.stderr
        assert str(home) not in proc.stderr  # stdio: the folder named, not its host path


def test_a_link_above_the_state_folder_is_resolved_once_and_said(
    default_audit: Path, tmp_path: Path
) -> None:
    real = tmp_path / "real-state"
    real.mkdir()
    (tmp_path / "state").symlink_to(real)
    proc = start_stdio(default_audit, tmp_path / "state")
    assert proc.returncode == 0, proc.stderr
    assert "a symbolic link above it" in proc.stderr and "resolved once" in proc.stderr
    assert (real / "loom-fs-mcp" / "audit.log").exists()
    assert mode(real / "loom-fs-mcp") == 0o700


def test_a_state_folder_the_server_does_not_use_is_not_looked_at(
    one_root_config: Callable[..., Path], tmp_path: Path
) -> None:
    # stdio with an audit_log of its own: no token, no default log, no index there.
    home = tmp_path / "state"
    home.mkdir()
    target = a_link_to_a_folder(home)
    proc = start_stdio(one_root_config("reference"), home)
    assert proc.returncode == 0, proc.stderr
    assert "state folder" not in proc.stderr
    assert list(target.iterdir()) == [] and mode(target) == 0o755


def http_start(config: Path, home: Path) -> tuple[int, str]:
    port = free_port()
    proc = subprocess.Popen(
        [EXE, "--config", str(config), "--transport", "http", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        env=env_without_loomfs(XDG_STATE_HOME=str(home)),
    )
    try:
        wait_healthy(port, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    return proc.returncode, err


def test_on_http_the_resolved_place_is_printed_and_the_token_made_there(
    one_root_config: Callable[..., Path], tmp_path: Path
) -> None:
    real = tmp_path / "real-state"
    real.mkdir()
    (tmp_path / "state").symlink_to(real)
    code, err = http_start(one_root_config("reference"), tmp_path / "state")
    assert code == 0, err
    assert f"{tmp_path / 'state' / 'loom-fs-mcp'}: a symbolic link above it" in err
    assert f"resolved once, to {real / 'loom-fs-mcp'}" in err
    assert f"token: {real / 'loom-fs-mcp' / 'token'}" in err
    assert (real / "loom-fs-mcp" / "token").is_file()


def test_on_http_a_linked_state_folder_gets_no_token(
    one_root_config: Callable[..., Path], tmp_path: Path
) -> None:
    home = tmp_path / "state"
    home.mkdir()
    target = a_link_to_a_folder(home)
    port = free_port()
    proc = subprocess.run(
        [EXE, "--config", str(one_root_config("reference")), "--transport", "http",
         "--port", str(port)], capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL, env=env_without_loomfs(XDG_STATE_HOME=str(home)))
    assert proc.returncode == 1, proc.stderr
    assert f"state folder {home / 'loom-fs-mcp'} is a symbolic link" in proc.stderr
    assert list(target.iterdir()) == [] and mode(target) == 0o755
    assert not os.path.exists(target / "token")
