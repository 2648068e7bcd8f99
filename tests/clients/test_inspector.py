"""The MCP Inspector CLI against the real server process, with a bearer token.

The same commands a person types (`mcp-inspector --cli URL --transport http
--header "Authorization: Bearer ..." --method ...`); assertions are on the
JSON the Inspector prints.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import NodeTools, ServerProcess, run_server
from tests.kit import roots_toml

TOKEN = "inspector-test-token-7f3a"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("inspector")
    root = base / "root"
    (root / "docs").mkdir(parents=True)
    (root / "README.md").write_text("# Title\nSome text\n")
    (root / "docs" / "guide.md").write_text("How to connect a client.\n")
    (root / ".env").write_text("SECRET=1\n")
    cfg = base / "roots.toml"
    cfg.write_text(roots_toml(("main", root, "reference"), audit_log=base / "audit.log",
                              extra="search_fetch_tools = true"))
    with run_server(cfg, token=TOKEN) as srv:
        yield srv


def inspector(
    tools: NodeTools, home: Path, url: str, *args: str, token: str | None = TOKEN
) -> subprocess.CompletedProcess[str]:
    cmd = [tools.node, tools.inspector_js, "--cli", url, "--transport", "http", *args]
    if token is not None:
        cmd += ["--header", f"Authorization: Bearer {token}"]
    env = {
        **os.environ,
        # The Inspector keeps a catalog and state under HOME: keep them out of the real one.
        "HOME": str(home),
        "MCP_CATALOG_PATH": str(home / "catalog.json"),
        "PATH": os.path.dirname(tools.node) + os.pathsep + os.environ.get("PATH", ""),
    }
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def call(tools: NodeTools, home: Path, url: str, tool: str, **args: str) -> dict[str, Any]:
    flags = ["--method", "tools/call", "--tool-name", tool]
    for k, v in args.items():
        flags += ["--tool-arg", f"{k}={v}"]
    done = inspector(tools, home, url, *flags)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def test_tools_list_with_bearer_header(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    done = inspector(node_tools, tmp_path, secured.url, "--method", "tools/list")
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)["tools"]}
    assert {"list_roots", "reload_config", "read_text_file", "search", "fetch"} <= set(tools)
    # A reference root: nothing that writes is offered.
    assert not {"write_file", "edit_file", "move_file", "delete"} & set(tools)
    for name in ("list_roots", "read_text_file", "search", "fetch"):
        assert tools[name]["annotations"]["readOnlyHint"] is True, name
        assert tools[name]["outputSchema"]["type"] == "object", name


def test_without_the_token_the_inspector_is_refused(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    done = inspector(node_tools, tmp_path, secured.url, "--method", "tools/list", token=None)
    assert done.returncode != 0
    # The 401 sends the Inspector looking for OAuth, which this server does not offer.
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "auth_required", error


def test_tools_call_list_roots(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    result = call(node_tools, tmp_path, secured.url, "list_roots")
    assert not result.get("isError")
    roots = result["structuredContent"]["roots"]
    assert [(r["name"], r["role"], r["permissions"]) for r in roots] == [
        ("main", "reference", ["read"])
    ]
    # The text item is the readable rendering of the same result.
    assert result["content"][0]["text"].startswith("main: reference, read, default")


def test_tools_call_read_text_file(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    result = call(node_tools, tmp_path, secured.url, "read_text_file", path="README.md")
    assert not result.get("isError"), result
    data = result["structuredContent"]
    assert data["path"] == "README.md"
    assert "# Title" in data["content"] and "Some text" in data["content"]
    assert data["eof_reached"] is True


def test_tools_call_of_a_denied_file_is_a_tool_error(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    result = call(node_tools, tmp_path, secured.url, "read_text_file", path=".env")
    assert result["isError"] is True
    assert result["content"][0]["text"] == "matches deny pattern '.env'"


def test_tools_call_search_then_fetch(
    node_tools: NodeTools, secured: ServerProcess, tmp_path: Path
) -> None:
    found = call(node_tools, tmp_path, secured.url, "search", query="connect client")
    assert found["structuredContent"] == {
        "results": [{"id": "main/docs/guide.md", "title": "docs/guide.md", "url": ""}]
    }
    doc = call(node_tools, tmp_path, secured.url, "fetch", id="main/docs/guide.md")
    assert doc["structuredContent"]["text"] == "How to connect a client.\n"
