"""The owner's page in a real browser (headless Chromium, `tests.ui.browser`), against the
real console script over HTTP: logged in through the printed link, changes made through
MCP as an agent makes them, and a corpus of hostile names and contents rendered in every
view without any injected script running and without a CSP violation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from app.ui.render import reveal
from tests.kit import roots_toml
from tests.live import call
from tests.ui.browser import (
    RealServer,
    browser,  # noqa: F401  (the module's fixture)
    console,
    csp_violations,
    fresh_link,
    log_in,
    wait_until,
)

FLAG = "window.__pwned=1"
# What an agent may write, each meant to run a script if printed as HTML or followed.
# `</script>` first: in a newest-first list it comes last, so when escaping breaks the
# script element it opens does not swallow the others before they run.
HOSTILE = (
    f"</script><script>{FLAG}</script>",
    f'<img src=x onerror="{FLAG}">',
    f'"><svg onload="{FLAG}">',
    f"javascript:{FLAG}",
    "evil\u202etxt.exe",
    "iso\u2066late\u2069d",
)
HOSTILE_CLIENT = f'<img src=x onerror="{FLAG}">\u202e-client'
# The views on this branch; the others join the list as they land.
VIEWS = ("/ui/", "/ui/activity", "/ui/changes", "/ui/trash", "/ui/connect")
# Views that show the agent's file names; a reason when the view has not landed yet.
NAMING: dict[str, str | None] = {
    "/ui/activity": None,
    "/ui/changes": None,
    "/ui/trash": None,
}


def file_name(text: str) -> str:
    """`text` as a file name the filesystem takes (a `/` is the one byte it refuses)."""
    return text.replace("/", "\u2215") + ".txt"


@contextlib.asynccontextmanager
async def agent(srv: RealServer, name: str = "browser-test-agent") -> AsyncIterator[ClientSession]:
    """An MCP session on `srv` with its token, announcing itself as `name`."""
    headers = {"Authorization": f"Bearer {srv.token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(srv.url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=Implementation(name=name, version="1")) as s,
    ):
        await s.initialize()
        yield s


async def write_all(srv: RealServer, files: dict[str, str], client: str,
                    overwrite: bool = False) -> None:
    async with agent(srv, client) as s:
        for path, content in files.items():
            is_error, answer = await call(s, "write_file", path=path, content=content,
                                          **({"overwrite": True} if overwrite else {}))
            assert not is_error, answer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """The console script serving one workspace root, holding the hostile corpus (names and
    contents, written twice so each has a kept version) written by a hostile client."""
    tmp = tmp_path_factory.mktemp("browser")
    ws = tmp / "ws"
    ws.mkdir()
    cfg = tmp / "roots.toml"
    cfg.write_text(roots_toml(("ws", ws, "workspace"), audit_log=tmp / "logs" / "audit.log"))
    state = tmp / "state"
    state.mkdir(mode=0o700)
    srv = RealServer(cfg, state)
    srv.root = ws  # type: ignore[attr-defined]
    try:
        corpus = {file_name(t): t for t in HOSTILE}
        asyncio.run(write_all(srv, corpus, HOSTILE_CLIENT))
        asyncio.run(write_all(srv, {k: v + "\nsecond\n" for k, v in corpus.items()},
                              HOSTILE_CLIENT, overwrite=True))
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def owner(browser: Any, server: RealServer) -> Any:  # noqa: F811
    log_in(browser, fresh_link(server))
    console(browser)
    return browser


def test_the_printed_link_logs_the_browser_in_and_a_second_use_is_refused(
    browser: Any, server: RealServer  # noqa: F811
) -> None:
    log_in(browser, server.link)
    assert browser.find_element("tag name", "h1").text == "Overview"
    assert browser.get_cookies(), "no session cookie"
    browser.delete_all_cookies()
    browser.get(server.link)
    assert browser.find_element("tag name", "h1").text != "Overview"
    log_in(browser, fresh_link(server))


def rendered(driver: Any, path: str, base: str) -> tuple[str, list[str]]:
    """The visible text of `path` once loaded, and the console's messages meanwhile."""
    driver.get(base + path)
    wait_until(driver, lambda d: d.execute_script("return document.readyState") == "complete",
               f"{path} loaded")
    return driver.find_element("tag name", "body").text, console(driver)


def assert_held(driver: Any, path: str, text: str, messages: list[str]) -> None:
    assert driver.execute_script("return window.__pwned") is None, f"a script ran on {path}"
    violations = csp_violations(messages, driver)
    assert not violations, (path, violations)
    assert "\u202e" not in text and "\u2066" not in text, f"{path} shows a bidi control"


@pytest.mark.parametrize("path", VIEWS)
def test_no_hostile_name_runs_a_script_in_a_view(owner: Any, server: RealServer,
                                                 path: str) -> None:
    text, messages = rendered(owner, path, server.base)
    assert_held(owner, path, text, messages)


def test_the_overview_shows_the_hostile_client_as_text_with_its_override_visible(
    owner: Any, server: RealServer
) -> None:
    text, messages = rendered(owner, "/ui/", server.base)
    assert_held(owner, "/ui/", text, messages)
    if "client" in text.lower() and "-client" in text:
        assert reveal(HOSTILE_CLIENT) in text
        assert "⟦U+202E⟧" in text


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
    for p, why in sorted(NAMING.items())])
def test_a_view_shows_the_hostile_names_as_text_with_the_overrides_visible(
    owner: Any, server: RealServer, path: str
) -> None:
    text, messages = rendered(owner, path, server.base)
    assert_held(owner, path, text, messages)
    for hostile in HOSTILE:
        assert reveal(file_name(hostile)) in text, (path, hostile)
    assert "⟦U+202E⟧" in text and "⟦U+2066⟧" in text


def test_the_diff_pages_show_the_hostile_contents_as_text_with_the_overrides_visible(
    owner: Any, server: RealServer
) -> None:
    owner.get(server.base + "/ui/changes")
    wait_until(owner, lambda d: d.find_element("tag name", "h1").text == "Changes",
               "changes loaded")
    links = [str(a.get_attribute("href")) for a in owner.find_elements("link text", "diff")]
    by_name = {parse_qs(urlsplit(href).query)["id"][0].split("/", 1)[1]: href
               for href in links}
    for hostile in HOSTILE:
        path = by_name[file_name(hostile)].removeprefix(server.base)
        text, messages = rendered(owner, path, server.base)
        assert_held(owner, path, text, messages)
        assert reveal(hostile) in text and "+second" in text, (path, text)


def test_a_change_made_through_mcp_appears_in_the_activity_within_seconds(
    owner: Any, server: RealServer
) -> None:
    owner.get(server.base + "/ui/activity")
    wait_until(owner, lambda d: d.find_element("tag name", "h1"), "activity loaded")
    asyncio.run(write_all(server, {"fresh-from-the-agent.txt": "hello\n"}, "browser-test-agent"))
    wait_until(owner, lambda d: "fresh-from-the-agent.txt" in d.find_element(
        "tag name", "body").text, "the new call shown by the page's polling", deadline=10)
    assert not csp_violations(console(owner), owner)


def test_restoring_a_version_from_the_page_puts_the_old_content_back_on_disk(
    owner: Any, server: RealServer
) -> None:
    target = server.root / "restore-me.txt"  # type: ignore[attr-defined]
    asyncio.run(write_all(server, {"restore-me.txt": "old\n"}, "browser-test-agent"))
    asyncio.run(write_all(server, {"restore-me.txt": "new\n"}, "browser-test-agent",
                          overwrite=True))
    owner.get(server.base + "/ui/changes")
    wait_until(owner, lambda d: "restore-me.txt" in d.find_element("tag name", "body").text,
               "the change listed")
    button = owner.find_element(
        "xpath", "//*[contains(., 'restore-me.txt')]/ancestor-or-self::tr[1]"
                 "//button[contains(translate(., 'R', 'r'), 'restore')]")
    button.click()
    wait_until(owner, lambda d: target.read_text() == "old\n", "the old content on disk")
    kept = server.root.glob(".mcp-trash/*/restore-me.txt")  # type: ignore[attr-defined]
    assert "new\n" in [p.read_text() for p in kept]  # the replaced content, a version now
    assert "is back" in owner.find_element("tag name", "body").text
    assert not csp_violations(console(owner), owner)
