"""One smoke scenario, two protocol eras: the 2026-07-28 `mcp.Client(url)` and the
2025-11-25 `ClientSession` must both get through it over HTTP, with and without
a bearer token.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.live import LiveServer, live_server

BROKEN = 'role = "admin"'


@contextlib.asynccontextmanager
async def session_2025(srv: LiveServer) -> AsyncIterator[tuple[Any, str]]:
    async with (
        httpx2.AsyncClient(headers=srv.headers(), timeout=30) as http,
        streamable_http_client(srv.url, http_client=http) as (read, write),
        ClientSession(read, write) as s,
    ):
        init = await s.initialize()
        yield s, init.protocol_version


@contextlib.asynccontextmanager
async def client_2026(srv: LiveServer) -> AsyncIterator[tuple[Any, str]]:
    if srv.token is None:
        async with Client(srv.url) as c:  # exactly what a user writes
            yield c, c.protocol_version
        return
    async with (
        httpx2.AsyncClient(headers=srv.headers(), timeout=30) as http,
        Client(streamable_http_client(srv.url, http_client=http)) as c,
    ):
        yield c, c.protocol_version


CLIENTS = {"2025-11-25": session_2025, "2026-07-28": client_2026}


async def smoke(client: Any, cfg: Path) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"list_roots", "reload_config", "search", "fetch"} <= names

    roots = await client.call_tool("list_roots", {})
    assert not roots.is_error
    assert [r["name"] for r in roots.structured_content["roots"]] == ["main"]

    found = await client.call_tool("search", {"query": "Title"})
    assert found.structured_content == {
        "results": [{"id": "main/README.md", "title": "README.md", "url": ""}]
    }

    # A domain error is a tool error whose text is the server's message (docs/tools.md).
    res = await client.call_tool("fetch", {"id": "nope/README.md"})
    assert res.is_error
    assert res.content[0].text == "unknown root 'nope'; known roots: main"

    # A broken config file: the reload is refused with the validation error, nothing changes.
    good = cfg.read_text()
    cfg.write_text(good.replace('role = "reference"', BROKEN))
    res = await client.call_tool("reload_config", {})
    assert res.is_error
    assert res.content[0].text == (
        "invalid config: root 'main': role: 'admin' is not one of reference, sourcecode, "
        "workspace"
    )
    cfg.write_text(good)
    res = await client.call_tool("reload_config", {})
    assert not res.is_error
    assert res.structured_content["generation"] == 2


@pytest.mark.parametrize("token", [None, "smoke-token"], ids=["no-token", "bearer"])
@pytest.mark.parametrize("era", sorted(CLIENTS))
async def test_smoke_scenario(
    era: str, token: str | None, search_fetch_config: Path, tree: Path
) -> None:
    with live_server(search_fetch_config, token=token) as srv:
        async with CLIENTS[era](srv) as (client, version):
            assert version == era
            await smoke(client, search_fetch_config)


@pytest.mark.parametrize("era", sorted(CLIENTS))
async def test_nothing_is_advertised_that_is_not_served(
    era: str, search_fetch_config: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No prompts and no resources: neither capability is advertised, their lists answer
    -32601 (Method not found), and a prompt or resource asked for by name anyway is an
    invalid parameter (-32602), said in one line, with no traceback in the log."""
    with live_server(search_fetch_config) as srv:
        async with CLIENTS[era](srv) as (client, _):
            caps = client.server_capabilities
            assert caps is not None and caps.tools is not None
            assert caps.prompts is None and caps.resources is None
            for call, code in ((client.list_prompts(), -32601),
                               (client.list_resources(), -32601),
                               (client.get_prompt("nope"), -32602),
                               (client.read_resource("file:///etc/passwd"), -32602)):
                with pytest.raises(MCPError) as got:
                    await call
                assert got.value.code == code, got.value
            assert str(got.value.message).startswith("Unknown resource")
            with pytest.raises(MCPError) as got:
                await client.get_prompt("nope")
            assert got.value.message == ("unknown prompt 'nope': this server has no prompts "
                                         "(its tools are listed by tools/list)")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
