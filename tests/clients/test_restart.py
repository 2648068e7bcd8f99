"""What a client sees when the HTTP server restarts under it (docs/clients.md).

The console script on a fixed free port, stopped and started again on the
same port between two calls of one client. A 2025-11-25 session gets 404 and
the MCP Python SDK's ClientSession does not initialise again (the call fails
with "Session not found"; a new session works); a 2026-07-28 `Client` is
stateless and does not notice.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.clients.conftest import console_script

DEADLINE = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(config: Path, port: int) -> Iterator[None]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOMFS_")}
    proc = subprocess.Popen(
        [console_script(), "--config", str(config), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    cfg = tmp_path / "roots.toml"
    cfg.write_text(textwrap.dedent(f"""
        audit_log = "{tmp_path / 'audit.log'}"
        [[roots]]
        name = "ws"
        path = "{tmp_path / 'ws'}"
        role = "reference"
    """))
    return cfg


async def test_a_session_is_refused_after_a_restart_and_a_new_one_works(config: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    first = serving(config, port)
    first.__enter__()
    try:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            assert not (await s.call_tool("list_roots", {})).is_error
            first.__exit__(None, None, None)
            first = contextlib.nullcontext()  # type: ignore[assignment]
            with serving(config, port):
                with pytest.raises(MCPError, match="Session not found"):
                    await s.call_tool("list_roots", {})
                with pytest.raises(MCPError, match="Session not found"):
                    await s.call_tool("list_roots", {})  # and it stays broken
                # Reconnecting (a new session) is the recovery.
                async with (
                    streamable_http_client(url) as (read2, write2),
                    ClientSession(read2, write2) as again,
                ):
                    await again.initialize()
                    assert not (await again.call_tool("list_roots", {})).is_error
    finally:
        first.__exit__(None, None, None)


async def test_a_2026_client_does_not_notice_a_restart(config: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    first = serving(config, port)
    first.__enter__()
    try:
        async with Client(url) as c:
            assert not (await c.call_tool("list_roots", {})).is_error
            first.__exit__(None, None, None)
            first = contextlib.nullcontext()  # type: ignore[assignment]
            with serving(config, port):
                assert not (await c.call_tool("list_roots", {})).is_error
    finally:
        first.__exit__(None, None, None)
