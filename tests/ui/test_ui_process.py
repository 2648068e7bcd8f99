"""The console script and the owner's page: the printed link, `--ui-link`, `--ui` alone.

Real processes (`loom-fs-mcp` from the venv), real sockets; the state folder in a temp
folder (`XDG_STATE_HOME`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.kit import roots_toml
from tests.live import env_without_loomfs, free_port
from tests.ui.uikit import EXE, Spawned

LINK = re.compile(r"http://127\.0\.0\.1:(\d+)/ui/login\?code=[A-Za-z0-9_.-]+")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "roots.toml"
    cfg.write_text(roots_toml(("ws", ws, "workspace"), audit_log=tmp_path / "logs" / "audit.log"))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return cfg, env_without_loomfs(XDG_STATE_HOME=str(state))


@pytest.fixture
def http_server(setup) -> Iterator[tuple[Spawned, int, Path, dict[str, str]]]:
    cfg, env = setup
    port = free_port()
    srv = Spawned("--config", str(cfg), "--transport", "http", "--port", str(port), env=env)
    try:
        yield srv, port, cfg, env
    finally:
        srv.stop()


def logs_in(link: str) -> httpx.Client:
    http = httpx.Client(timeout=10)
    r = http.get(link, follow_redirects=True)
    assert r.status_code == 200 and "<h1>Overview</h1>" in r.text, r.text
    return http


def assert_only_in_ui_audit(tmp_path: Path, line: str) -> None:
    """`line` is among a `--ui` process's owner lines (`ui-audit.log`), and its op is not in
    the audit log, which that process never writes."""
    assert line in (tmp_path / "logs" / "ui-audit.log").read_text()
    op = next(f for f in line.split() if f.startswith("op="))
    audit = tmp_path / "logs" / "audit.log"
    assert not audit.exists() or op not in audit.read_text()


def test_the_http_server_prints_a_login_link_that_logs_in_once(http_server, setup) -> None:
    srv, port, _, env = http_server
    link = srv.wait_for(LINK)
    assert int(link.group(1)) == port
    logs_in(link.group(0)).close()
    with httpx.Client(timeout=10) as again:
        assert again.get(link.group(0)).status_code == 401
    secret = Path(env["XDG_STATE_HOME"]) / "loom-fs-mcp" / "owner-secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_ui_link_prints_a_fresh_link_the_serving_process_takes(http_server) -> None:
    srv, port, cfg, env = http_server
    srv.wait_for(LINK)
    done = subprocess.run([EXE, "--config", str(cfg), "--ui-link", "--port", str(port)],
                          capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    printed = LINK.fullmatch(done.stdout.strip())
    assert printed and int(printed.group(1)) == port
    logs_in(printed.group(0)).close()


def test_ui_alone_serves_the_page_and_no_mcp(setup, tmp_path: Path) -> None:
    cfg, env = setup
    port = free_port()
    ui = Spawned("--config", str(cfg), "--ui", "--port", str(port), env=env)
    try:
        link = ui.wait_for(LINK)
        with contextlib.closing(logs_in(link.group(0))) as http:
            page = http.get(f"http://127.0.0.1:{port}/ui/").text
            assert "served alone" in page
            assert http.post(f"http://127.0.0.1:{port}/mcp", json={}).status_code == 404
        assert_only_in_ui_audit(tmp_path, "op=owner_login client=owner")
    finally:
        ui.stop()


def test_ui_alone_restores_a_version_and_writes_its_own_owner_line(setup, tmp_path: Path) -> None:
    """A `--ui` process (the clients on stdio) restores from the trash another process
    filled: the file replaced and kept, the line in `ui-audit.log`, none in the audit log."""
    cfg, env = setup
    ws = tmp_path / "ws"
    (ws / "plan.md").write_text("the agent's plan\n")
    stamp = ws / ".mcp-trash" / "20261201T090000Z"
    stamp.mkdir(parents=True)
    (stamp / "plan.md").write_text("the owner's plan\n")
    (stamp / ".mcp-trash").write_text(json.dumps({
        "kind": "version", "path": "plan.md", "name": "plan.md", "op": "write",
        "client": "agent"}))
    port = free_port()
    ui = Spawned("--config", str(cfg), "--ui", "--port", str(port), env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        with contextlib.closing(logs_in(ui.wait_for(LINK).group(0))) as http:
            csrf = re.search(r'name="csrf" value="([^"]+)"', http.get(f"{base}/ui/").text)
            assert csrf is not None
            r = http.post(f"{base}/ui/restore", headers={"Origin": base}, data={
                "csrf": csrf.group(1), "root": "ws", "id": "20261201T090000Z/plan.md"})
            assert r.status_code == 200, r.text
        assert (ws / "plan.md").read_text() == "the owner's plan\n"
        kept = [p for p in (ws / ".mcp-trash").glob("*/plan.md")]
        assert [p.read_text() for p in kept] == ["the agent's plan\n"]
        record = json.loads((kept[0].parent / ".mcp-trash").read_text())
        assert (record["op"], record["client"]) == ("restore", "owner")
        assert_only_in_ui_audit(tmp_path, "ALLOW root=ws path=plan.md op=owner_restore "
                                "client=owner")
    finally:
        ui.stop()


def test_ui_alone_refuses_a_non_loopback_host(setup) -> None:
    cfg, env = setup
    done = subprocess.run([EXE, "--config", str(cfg), "--ui", "--host", "0.0.0.0"],
                          capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "--ui serves loopback only" in done.stderr


def test_an_owner_secret_open_to_others_is_refused_not_repaired(setup) -> None:
    cfg, env = setup
    folder = Path(env["XDG_STATE_HOME"]) / "loom-fs-mcp"
    folder.mkdir(mode=0o700)
    secret = folder / "owner-secret"
    secret.write_text("a-secret-someone-else-could-read\n")
    os.chmod(secret, 0o644)
    done = subprocess.run([EXE, "--config", str(cfg), "--ui-link"], capture_output=True,
                          text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert "owner secret" in done.stderr and "open to other users" in done.stderr
    assert done.stdout == ""
    assert stat.S_IMODE(secret.stat().st_mode) == 0o644
