"""The MCP SDK's own clients over Streamable HTTP, both protocol eras."""

from __future__ import annotations

import warnings
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.live import live_server

TOKEN = "tok-123"


@pytest.fixture
def secured(one_root_config):
    with live_server(one_root_config("reference"), token=TOKEN) as srv:
        yield srv


async def test_2025_session_initialises_lists_and_calls(secured) -> None:
    async with secured.session() as s:
        tools = (await s.list_tools()).tools
        by_name = {t.name: t for t in tools}
        assert set(by_name) == {
            name for name in by_name if name not in {"write_file", "edit_file", "delete"}
        }
        lr = by_name["list_roots"]
        assert lr.description and lr.annotations.read_only_hint is True
        assert lr.annotations.open_world_hint is False
        assert lr.output_schema is not None
        res = await s.call_tool("list_roots", {})
        assert not res.is_error
        assert res.structured_content["roots"][0]["name"] == "main"


async def test_2025_session_gets_tool_error_with_the_servers_text(secured, tree) -> None:
    # Break the config: the reload is refused, with the validation error as a tool error.
    cfg = Path(secured.registry.config_path)
    cfg.write_text(
        cfg.read_text().replace('role = "reference"', 'role = "reference"\npermissions = []')
    )
    async with secured.session() as s:
        res = await s.call_tool("reload_config", {})
    assert res.is_error
    assert res.content[0].text == (
        "invalid config: root 'main': permissions is empty; a root must grant something"
    )
    assert secured.registry.current.generation == 1


async def test_2026_client_initialises_lists_and_calls(secured) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(secured.url, http_client=http)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"list_roots", "reload_config"} <= names
            res = await client.call_tool("list_roots", {})
            assert not res.is_error
            assert res.structured_content["roots"][0]["role"] == "reference"


async def test_2026_client_without_token_is_refused(secured) -> None:
    # The SDK turns the refusal into its own error; the HTTP exchange shows it was a 401.
    answers: list[httpx2.Response] = []

    async def record(response: httpx2.Response) -> None:
        answers.append(response)

    async with httpx2.AsyncClient(event_hooks={"response": [record]}) as http:
        with pytest.raises(BaseException):  # noqa: B017 - an MCPError, inside task groups
            async with Client(streamable_http_client(secured.url, http_client=http)) as client:
                await client.list_tools()
    assert answers and {r.status_code for r in answers} == {401}, answers
    assert all(r.headers["www-authenticate"].startswith("Bearer") for r in answers)


async def test_every_tool_has_description_and_full_annotations(secured) -> None:
    async with secured.session() as s:
        for t in (await s.list_tools()).tools:
            assert t.description and len(t.description) > 20, t.name
            a = t.annotations
            assert a is not None, t.name
            for hint in (
                "read_only_hint",
                "destructive_hint",
                "idempotent_hint",
                "open_world_hint",
            ):
                assert getattr(a, hint) is not None, (t.name, hint)
            assert a.open_world_hint is False


async def test_logging_set_level_is_answered(secured) -> None:
    async with secured.session() as s:
        # Deprecated in the 2026-07-28 era, still sent by 2025-11-25 clients.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await s.set_logging_level("warning")
        assert result is not None
