"""The overview: roots, clients and their sessions, the byte budget's gauges, indexes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.live import call
from tests.ui.uikit import Owner, ui_server

BUDGET = "[budget]\nbytes_per_minute = 60000\nburst_bytes = 20000000\n"


def cells(page: str, first: str) -> list[str]:
    row = re.search(rf"<tr><td>{re.escape(first)}.*?</tr>", page, re.S)
    assert row, page
    return re.findall(r"<td>(.*?)</td>", row.group(0), re.S)


def test_the_overview_shows_each_root_with_role_permissions_and_path(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    with ui_server(tmp_path, roots=(("docs", docs, "reference"),)) as srv:
        page = Owner(srv).get("/ui/").text
        ws = cells(page, "ws")
        assert ws[1:] == ["workspace", "read, write, delete", f"<code>{tmp_path / 'ws'}</code>"]
        assert cells(page, "docs")[1:3] == ["reference", "read"]


@pytest.mark.asyncio
async def test_the_overview_counts_the_open_sessions(tmp_path: Path) -> None:
    with ui_server(tmp_path) as srv:
        owner = Owner(srv)
        assert cells(owner.get("/ui/").text, "every client")[2] == "0"
        async with srv.session() as s:
            await s.list_tools()
            row = cells(owner.get("/ui/").text, "every client")
            assert row[2] == "1" and "ago" in row[4]


@pytest.mark.asyncio
async def test_the_budget_gauges_fall_as_content_is_read(tmp_path: Path) -> None:
    with ui_server(tmp_path, extra=BUDGET) as srv:
        (tmp_path / "ws" / "big.txt").write_text("x" * 30000)
        owner = Owner(srv)

        def level() -> int:
            page = owner.get("/ui/").text
            found = re.search(r'<meter min="0" max="20000000" value="(\d+)"', page)
            assert found
            return int(found.group(1))

        before = level()
        failed, _ = await call(srv, "read_text_file", path="big.txt")
        assert not failed
        assert before - level() >= 25000


def test_without_a_budget_the_overview_says_content_is_not_metered(tmp_path: Path) -> None:
    with ui_server(tmp_path) as srv:
        assert "content is not metered" in Owner(srv).get("/ui/").text
