"""The tool surface follows the config, across reloads, with list_changed."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.kit import roots_toml
from tests.live import live_server, text_of

WRITE_TOOLS = {"write_file", "edit_file", "apply_patch", "create_directory", "move_file",
               "copy_file"}


def add_root(cfg: Path, path: Path, name: str, role: str) -> None:
    cfg.write_text(cfg.read_text() + roots_toml((name, path, role), audit_log=None))


async def tool_names(s) -> set[str]:
    return {t.name for t in (await s.list_tools()).tools}


@pytest.mark.parametrize(
    ("role", "present", "absent"),
    [
        ("reference", {"list_roots", "reload_config"}, WRITE_TOOLS | {"delete"}),
        ("sourcecode", WRITE_TOOLS, {"delete"}),
        ("workspace", WRITE_TOOLS | {"delete"}, set()),
    ],
)
async def test_surface_follows_the_roles(one_root_config, role, present, absent) -> None:
    with live_server(one_root_config(role)) as srv:
        async with srv.session() as s:
            names = await tool_names(s)
    assert present <= names
    assert not (absent & names)


async def test_reload_adding_a_workspace_adds_tools_and_notifies(one_root_config, tmp_path) -> None:
    cfg = one_root_config("reference")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    changed = anyio.Event()

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    with live_server(cfg) as srv:
        async with srv.session(message_handler=on_message) as s:
            before = await tool_names(s)
            assert not (WRITE_TOOLS & before)
            add_root(cfg, scratch, "scratch", "workspace")
            res = await s.call_tool("reload_config", {})
            assert not res.is_error
            assert res.structured_content["generation"] == 2
            with anyio.fail_after(10):
                await changed.wait()
            after = await tool_names(s)
    assert WRITE_TOOLS | {"delete"} <= after


async def test_2026_client_hears_list_changed_through_listen(one_root_config, tmp_path) -> None:
    cfg = one_root_config("reference")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with live_server(cfg) as srv:
        async with httpx2.AsyncClient() as http:
            async with Client(streamable_http_client(srv.url, http_client=http)) as client:
                async with client.listen(tools_list_changed=True) as sub:
                    add_root(cfg, scratch, "scratch", "workspace")
                    res = await client.call_tool("reload_config", {})
                    assert not res.is_error
                    with anyio.fail_after(10):
                        async for _event in sub:
                            break
                names = {t.name for t in (await client.list_tools()).tools}
    assert "delete" in names


@pytest.mark.parametrize(
    "breakage",
    [
        'role = "workspace"\npermissions = ["read", "fly"]',  # unknown permission
        'role = "reference"\npermissions = ["write"]',  # above the ceiling
        'role = "nonsense"',  # unknown role
        'role = "workspace"\nsurprise = 1',  # unknown key
    ],
)
async def test_invalid_reload_changes_nothing(one_root_config, tmp_path, breakage) -> None:
    cfg = one_root_config("reference")
    with live_server(cfg) as srv:
        async with srv.session() as s:
            before = await tool_names(s)
            snap = srv.registry.current
            cfg.write_text(cfg.read_text().replace('role = "reference"', breakage))
            res = await s.call_tool("reload_config", {})
            assert res.is_error
            assert text_of(res).startswith("invalid config:")
            assert str(tmp_path) not in text_of(res)
            assert srv.registry.current is snap
            assert await tool_names(s) == before
            ok = await s.call_tool("list_roots", {})
            assert ok.structured_content["roots"][0]["role"] == "reference"


async def test_reload_under_load_fails_no_call(one_root_config, tmp_path) -> None:
    """Calls overlap reloads that really change the config: each answer is whole, from
    one generation or the next, and the clients see both versions while they run."""
    cfg = one_root_config("reference")
    plain = cfg.read_text()
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "x.txt").write_text("X\n")
    add_root(cfg, extra, "extra", "reference")
    with_extra = cfg.read_text()
    cfg.write_text(plain)
    failures: list[str] = []
    seen: list[tuple[str, ...]] = []
    calls = 0

    with live_server(cfg) as srv:

        async def client(n: int) -> None:
            nonlocal calls
            async with srv.session() as s:
                for _ in range(25):
                    res = await s.call_tool("list_roots", {})
                    calls += 1
                    if res.is_error:
                        failures.append(str(res.content))
                        continue
                    names = tuple(r["name"] for r in res.structured_content["roots"])
                    if names not in (("main",), ("main", "extra")):
                        failures.append(f"torn snapshot: {names}")
                    seen.append(names)
                    await anyio.sleep(0.005)

        async def reloader() -> None:
            async with srv.session() as s:
                for i in range(10):
                    cfg.write_text(with_extra if i % 2 == 0 else plain)  # a changed config
                    res = await s.call_tool("reload_config", {})
                    if res.is_error:
                        failures.append(text_of(res))
                    await anyio.sleep(0.02)

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(client, n)
            tg.start_soon(reloader)
        assert srv.registry.current.generation == 11
        assert [r.name for r in srv.registry.current.roots.values()] == ["main"]
    assert failures == []
    assert calls == 100
    # The calls overlapped the reloads: both versions were answered, and they alternated.
    assert seen.count(("main", "extra")) > 0 and seen.count(("main",)) > 0
    flips = sum(seen[i] != seen[i + 1] for i in range(len(seen) - 1))
    assert flips >= 3, flips
