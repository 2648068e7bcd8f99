"""docs/clients.md: every snippet parses, every command line uses
real flags and settings, and each client configuration is replayed against a
running server the way that client would use it (Claude Desktop's command over
stdio; the HTTP clients' URL and header, with their variables filled in).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from app.cli import build_parser
from app.security.tokenfile import default_token_path
from app.settings import Settings
from tests.clients.conftest import REPO, console_script
from tests.live import env_without_loomfs, live_server

TOKEN = "guide-token-9c1e"
PLACEHOLDER_EXE = "/absolute/path/to/loom-fs-mcp/.venv/bin/loom-fs-mcp"
PLACEHOLDER_CONFIG = "/absolute/path/to/loom-fs-mcp/config/roots.toml"
BLOCK = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>\w+)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


def section() -> str:
    return (REPO / "docs" / "clients.md").read_text()


def blocks(lang: str) -> list[str]:
    return [textwrap.dedent(m["body"]) for m in BLOCK.finditer(section()) if m["lang"] == lang]


def json_snippets() -> dict[str, Any]:
    """The JSON configs, by the client they belong to (told apart by their shape)."""
    found: dict[str, Any] = {}
    for body in blocks("json"):
        data = json.loads(body)
        if "servers" in data:
            found["vscode"] = data
        elif "command" in data["mcpServers"]["loom-fs"]:
            found["claude_desktop"] = data
        else:
            found["cursor"] = data
    return found


def default_url() -> str:
    fields = Settings.model_fields
    return f"http://{fields['host'].default}:{fields['port'].default}/mcp"


def bash_lines() -> list[str]:
    return [line for body in blocks("bash") for line in body.splitlines() if line.strip()]


def claude_code_http_command() -> list[str]:
    (line,) = [ln for ln in bash_lines() if ln.startswith("claude mcp add")]
    return shlex.split(line)


# -- the snippets as written ----------------------------------------------------


def test_every_json_snippet_parses_and_each_client_has_one() -> None:
    assert set(json_snippets()) == {"claude_desktop", "cursor", "vscode"}
    assert len(blocks("json")) == 3


def test_http_snippets_point_at_the_default_address() -> None:
    url = default_url()
    assert url == "http://127.0.0.1:8000/mcp"
    snippets = json_snippets()
    assert snippets["cursor"]["mcpServers"]["loom-fs"]["url"] == url
    vscode = snippets["vscode"]["servers"]["loom-fs"]
    assert (vscode["type"], vscode["url"]) == ("http", url)
    cmd = claude_code_http_command()
    assert cmd[:6] == ["claude", "mcp", "add", "--transport", "http", "loom-fs"]
    assert cmd[6] == url
    assert f"url: {url}" in blocks("yaml")[0]


def test_claude_desktop_command_uses_real_cli_flags() -> None:
    entry = json_snippets()["claude_desktop"]["mcpServers"]["loom-fs"]
    assert entry["command"] == PLACEHOLDER_EXE
    assert entry["command"].endswith("/.venv/bin/loom-fs-mcp")  # the venv script, not `uv run`
    args = build_parser().parse_args(entry["args"])
    assert args.config == PLACEHOLDER_CONFIG
    assert args.transport == "stdio"  # the default, which is what a launching client needs


def test_claude_code_stdio_variant_uses_real_cli_flags() -> None:
    text = " ".join(section().split())
    m = re.search(r"`claude mcp add loom-fs -- (\S+) (.*?)`", text)
    assert m is not None
    assert m[1] == PLACEHOLDER_EXE
    assert build_parser().parse_args(shlex.split(m[2])).config == PLACEHOLDER_CONFIG


def test_environment_names_are_real_settings() -> None:
    mentioned = set(re.findall(r"\bLOOMFS_[A-Z_]+\b", section()))
    ours = {f"LOOMFS_{name.upper()}" for name in Settings.model_fields}
    # LOOMFS_AUTH_HEADER is the user's own variable for tunnel-client, not ours.
    assert mentioned - {"LOOMFS_AUTH_HEADER"} <= ours
    assert {"LOOMFS_TOKEN", "LOOMFS_TOKEN_FILE", "LOOMFS_ALLOWED_HOSTS"} <= mentioned


def test_tunnel_client_config_carries_the_bearer_header() -> None:
    (yaml,) = blocks("yaml")
    assert re.search(r"^  tunnel_id: tunnel_[0-9a-f]{32}$", yaml, re.M)
    assert "  api_key: env:CONTROL_PLANE_API_KEY\n" in yaml
    assert "    Authorization: env:LOOMFS_AUTH_HEADER\n" in yaml
    # env: takes the whole header value, so the variable must hold "Bearer <token>".
    assert 'export LOOMFS_AUTH_HEADER="Bearer $LOOMFS_TOKEN"' in bash_lines()


# -- the snippets replayed against a running server ----------------------------


async def test_claude_desktop_config_starts_the_server_over_stdio(
    one_root_config: Any, tmp_path: Path
) -> None:
    entry = json_snippets()["claude_desktop"]["mcpServers"]["loom-fs"]
    cfg = str(one_root_config("reference"))
    params = StdioServerParameters(
        command=entry["command"].replace(PLACEHOLDER_EXE, console_script()),
        args=[a.replace(PLACEHOLDER_CONFIG, cfg) for a in entry["args"]],
        cwd=str(tmp_path),  # a client starts it from anywhere: nothing may depend on the cwd
        env=env_without_loomfs(),  # the SDK's default keeps no XDG_STATE_HOME: the real home
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        res = await s.call_tool("list_roots", {})
    assert res.structured_content["roots"][0]["name"] == "main"


def shell(line: str, home: Path) -> str:
    """What bash makes of `line` (a command substitution reads the file under `home`), with
    nothing of this process's environment but PATH."""
    return subprocess.run(
        ["bash", "-c", line], env={"HOME": str(home), "PATH": os.environ["PATH"]},
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout


def made_token_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose made token (where the server makes it with XDG_STATE_HOME unset, the
    path the guide reads) holds TOKEN."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME")
    path = Path(default_token_path())
    assert path == home / ".local" / "state" / "loom-fs-mcp" / "token"
    path.parent.mkdir(parents=True)
    path.write_text(f"{TOKEN}\n")
    return home


def http_headers(home: Path) -> dict[str, dict[str, str]]:
    """Each HTTP client's headers, with its variables filled in as that client would: the
    shell lines of the guide run by bash, reading the token file under `home`."""
    snippets = json_snippets()
    header = claude_code_http_command()[-1]
    name, _, value = shell(f'printf %s "{header}"', home).partition(": ")
    (token_line,) = [ln for ln in bash_lines() if ln.startswith("export LOOMFS_TOKEN=")]
    env_token = shell(f'{token_line}; printf %s "$LOOMFS_TOKEN"', home)
    (export,) = [ln for ln in bash_lines() if ln.startswith("export LOOMFS_AUTH_HEADER=")]
    tunnel_value = shell(f'{token_line}; {export}; printf %s "$LOOMFS_AUTH_HEADER"', home)
    return {
        "claude-code": {name: value},
        "cursor": {
            k: v.replace("${env:LOOMFS_TOKEN}", env_token)
            for k, v in snippets["cursor"]["mcpServers"]["loom-fs"]["headers"].items()
        },
        "vscode": {
            k: v.replace("${input:loomfs-token}", TOKEN)
            for k, v in snippets["vscode"]["servers"]["loom-fs"]["headers"].items()
        },
        "tunnel-client": {"Authorization": tunnel_value},
    }


@pytest.mark.parametrize("client", ["claude-code", "cursor", "vscode", "tunnel-client"])
async def test_http_config_is_accepted_by_a_server_with_that_token(
    client: str, one_root_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = http_headers(made_token_home(tmp_path, monkeypatch))[client]
    assert headers and all(TOKEN in v for v in headers.values()), headers
    with live_server(one_root_config("reference"), token=TOKEN) as srv:
        url = default_url().replace(":8000/", f":{srv.port}/")
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
        assert "list_roots" in names
        # The same request with the variable left unfilled is refused: the header is what counts.
        raw = {k: v.replace(TOKEN, "${LOOMFS_TOKEN}") for k, v in headers.items()}
        refused = httpx.post(url, headers=raw, json={}, timeout=10)
        assert refused.status_code == 401


def test_the_python_snippets_parse_and_use_real_agents_sdk_names() -> None:
    """The Agents SDK snippet: valid Python, its imports and keyword arguments exist."""
    import ast
    import importlib
    import inspect

    (body,) = blocks("python")
    tree = ast.parse(body)
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                names[alias.name] = getattr(module, alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            accepted = inspect.signature(names[node.func.id]).parameters
            for kw in node.keywords:
                assert kw.arg in accepted, (node.func.id, kw.arg)
    assert "convert_schemas_to_strict" in body
