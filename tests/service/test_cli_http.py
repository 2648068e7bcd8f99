"""The console script serving HTTP: bind guard, port in use, start-up and shutdown."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.kit import roots_toml
from tests.live import env_without_loomfs, free_port

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


def spawn_http(cfg: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [EXE, "--config", str(cfg), "--transport", "http", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_without_loomfs(**env),
        stdin=subprocess.DEVNULL,
    )


def wait_healthy(port: int, proc: subprocess.Popen[str], deadline: float = 20.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError("server did not answer /healthz in time")


@pytest.mark.parametrize(
    ("flags", "env", "missing"),
    [
        ([], {}, "missing: --allow-remote and a token"),
        (["--allow-remote"], {}, "missing: a token"),
        ([], {"LOOMFS_TOKEN": "t"}, "missing: --allow-remote"),
    ],
)
def test_non_loopback_bind_is_refused_with_what_is_missing(
    one_root_config, flags, env, missing
) -> None:
    cfg = one_root_config("reference")
    proc = subprocess.run(
        [EXE, "--config", str(cfg), "--transport", "http", "--host", "0.0.0.0", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=env_without_loomfs(**env),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0
    assert "refusing to listen on non-loopback host '0.0.0.0'" in proc.stderr
    assert missing in proc.stderr


def test_non_loopback_bind_with_allow_remote_and_token_starts(one_root_config) -> None:
    cfg = one_root_config("reference")
    port = free_port()
    proc = spawn_http(
        cfg, "--host", "0.0.0.0", "--port", str(port), "--allow-remote", LOOMFS_TOKEN="secret"
    )
    try:
        wait_healthy(port, proc)
        r = httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=5)
        assert r.status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)
    assert proc.returncode == 0  # graceful shutdown on SIGTERM


def test_port_in_use_gives_a_clear_message(one_root_config) -> None:
    cfg = one_root_config("reference")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [EXE, "--config", str(cfg), "--transport", "http", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env_without_loomfs(),
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in proc.stderr


def test_http_start_announces_roots_then_transport_and_stops_on_sigint(
    one_root_config, tree
) -> None:
    cfg = one_root_config("reference")
    port = free_port()
    proc = spawn_http(cfg, "--port", str(port))
    try:
        wait_healthy(port, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert out == ""
    assert err.index("root main (default)") < err.index("transport: http")
    assert str(tree) not in err


def test_sighup_reloads_the_config(one_root_config, tmp_path) -> None:
    cfg = one_root_config("reference")
    extra = tmp_path / "extra"
    extra.mkdir()
    port = free_port()
    proc = spawn_http(cfg, "--port", str(port))
    try:
        wait_healthy(port, proc)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["roots"] == 1
        cfg.write_text(cfg.read_text() + roots_toml(("extra", extra, "workspace"), audit_log=None))
        proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10
        while httpx.get(f"http://127.0.0.1:{port}/healthz").json()["roots"] != 2:
            assert time.monotonic() < end, "SIGHUP did not reload"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)
