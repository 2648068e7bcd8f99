"""What a client sees when the HTTP server restarts under it (docs/clients.md).

The console script on a fixed free port, stopped and started again on the
same port between two calls of one client. A 2025-11-25 session gets 404 and
the MCP Python SDK's ClientSession does not initialise again (the call fails
with "Session not found"; a new session works); a 2026-07-28 `Client` is
stateless and does not notice.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.clients.conftest import run_server
from tests.kit import roots_toml
from tests.live import free_port


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    cfg = tmp_path / "roots.toml"
    cfg.write_text(
        roots_toml(("ws", tmp_path / "ws", "reference"), audit_log=tmp_path / "audit.log")
    )
    return cfg


class Restartable:
    """The console script on one fixed port; `restart()` stops it and starts it again there."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._running = contextlib.ExitStack()

    def __enter__(self) -> Restartable:
        self._running.enter_context(run_server(self.config, port=self.port))
        return self

    def restart(self) -> None:
        self._running.close()
        self.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._running.close()


async def test_a_session_is_refused_after_a_restart_and_a_new_one_works(config: Path) -> None:
    with Restartable(config) as srv:
        async with (
            streamable_http_client(srv.url) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            assert not (await s.call_tool("list_roots", {})).is_error
            srv.restart()
            with pytest.raises(MCPError, match="Session not found"):
                await s.call_tool("list_roots", {})
            with pytest.raises(MCPError, match="Session not found"):
                await s.call_tool("list_roots", {})  # and it stays broken
            # Reconnecting (a new session) is the recovery.
            async with (
                streamable_http_client(srv.url) as (read2, write2),
                ClientSession(read2, write2) as again,
            ):
                await again.initialize()
                assert not (await again.call_tool("list_roots", {})).is_error


async def test_a_2026_client_does_not_notice_a_restart(config: Path) -> None:
    with Restartable(config) as srv:
        async with Client(srv.url) as c:
            assert not (await c.call_tool("list_roots", {})).is_error
            srv.restart()
            assert not (await c.call_tool("list_roots", {})).is_error
