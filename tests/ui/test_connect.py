"""The Connect view: snippets holding the token, each with its copy button."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import httpx

from tests.ui.uikit import TOKEN, Owner, ui_server

PRE = re.compile(r'<pre id="(snippet-[0-9-]+)">(.*?)</pre>', re.S)


def test_connect_shows_snippets_with_the_token_and_a_copy_button_each(tmp_path: Path) -> None:
    with ui_server(tmp_path) as srv:
        page = Owner(srv).get("/ui/connect").text
        blocks = PRE.findall(page)
        assert len(blocks) == 3
        for sid, _ in blocks:
            assert f'data-copy="{sid}"' in page
        texts = [html.unescape(t) for _, t in blocks]
        assert texts[0] == (f"claude mcp add --transport http loom-fs {srv.url} --header "
                            f"'Authorization: Bearer {TOKEN}'")
        cursor = json.loads(texts[1])
        assert cursor["mcpServers"]["loom-fs"] == {
            "url": srv.url, "headers": {"Authorization": f"Bearer {TOKEN}"}}
        vscode = json.loads(texts[2])
        assert vscode["servers"]["loom-fs"]["type"] == "http"


def test_a_snippets_token_opens_mcp(tmp_path: Path) -> None:
    with ui_server(tmp_path) as srv:
        page = Owner(srv).get("/ui/connect").text
        cursor = json.loads(html.unescape(PRE.findall(page)[1][1]))
        headers = cursor["mcpServers"]["loom-fs"]["headers"]
        r = httpx.post(srv.url, headers={**headers, "Accept": "application/json"}, json={})
        assert r.status_code != 401


def test_connect_without_a_session_shows_no_token(tmp_path: Path) -> None:
    with ui_server(tmp_path) as srv:
        r = httpx.get(f"{srv.base}/ui/connect")
        assert r.status_code == 401
        assert TOKEN not in r.text
