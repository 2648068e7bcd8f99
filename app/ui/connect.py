"""How to connect each client: snippets holding its token, each with a copy button.

Over HTTP, one set per token: the server's (without `[[clients]]`), or each client's own,
read from its file as the server reads it. The token is shown in full: the page is the
owner's, and a snippet that holds it is what a person pastes. A `--ui` process serves no
client: its snippets launch the server over stdio (no token: the client owns the process),
`--client NAME` for each `[[clients]]` table.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from app.config import ResolvedClient
from app.errors import ConfigError
from app.security.tokenfile import read_token
from app.ui.access import context, login_needed, owner
from app.ui.context import UiContext
from app.ui.render import page

SERVER_NAME = "loom-fs"


@dataclass(frozen=True)
class Snippet:
    client: str  # Claude Code, Cursor, ...
    text: str


@dataclass(frozen=True)
class Block:
    who: str  # "every client with the token", or a [[clients]] name
    note: str
    snippets: list[Snippet]


def _http(name: str, url: str, token: str) -> list[Snippet]:
    bearer = f"Bearer {token}"
    return [
        Snippet("Claude Code", f"claude mcp add --transport http {shlex.quote(name)} "
                f"{url} --header {shlex.quote('Authorization: ' + bearer)}"),
        Snippet("Cursor (~/.cursor/mcp.json)", json.dumps(
            {"mcpServers": {name: {"url": url, "headers": {"Authorization": bearer}}}},
            indent=2)),
        Snippet("VS Code (.vscode/mcp.json)", json.dumps(
            {"servers": {name: {"type": "http", "url": url,
                                "headers": {"Authorization": bearer}}}}, indent=2)),
    ]


def _stdio(name: str, config: str, client: str | None) -> list[Snippet]:
    args = ["--config", config] + (["--client", client] if client else [])
    command = shlex.join([_console_script(), *args])
    return [
        Snippet("Claude Code", f"claude mcp add {shlex.quote(name)} -- {command}"),
        Snippet("Claude Desktop, Cursor", json.dumps(
            {"mcpServers": {name: {"command": _console_script(), "args": args}}}, indent=2)),
    ]


def _console_script() -> str:
    import os

    here = os.path.join(os.path.dirname(sys.executable), "loom-fs-mcp")
    return here if os.path.exists(here) else "loom-fs-mcp"


def _client_token(ctx: UiContext, c: ResolvedClient) -> str | None:
    try:
        return read_token(ctx.registry.client_token_file(c))
    except ConfigError:
        return None


def blocks(ctx: UiContext) -> list[Block]:
    snap = ctx.registry.current
    clients = snap.config.clients
    if ctx.mcp_url is None:  # a --ui process: the clients launch the server over stdio
        source = snap.config.source
        if not clients:
            return [Block("every root", "over stdio (the client starts the server)",
                          _stdio(SERVER_NAME, source, None))]
        return [Block(c.name, "over stdio, serving this client's grant only",
                      _stdio(f"{SERVER_NAME}-{c.name}", source, c.name)) for c in clients]
    if clients:
        found = []
        for c in clients:
            token = _client_token(ctx, c)
            if token is None:
                found.append(Block(c.name, "its token file cannot be read now", []))
            else:
                found.append(Block(c.name, "this client's own token",
                                   _http(f"{SERVER_NAME}-{c.name}", ctx.mcp_url, token)))
        return found
    holder = ctx.registry.token
    token = holder.current.decode("ascii") if holder and holder.current else ctx.server_token
    if token is None:
        return [Block("every client", "this server requires no token (--no-auth)", [
            Snippet("Claude Code", f"claude mcp add --transport http {SERVER_NAME} "
                    f"{ctx.mcp_url}")])]
    return [Block("every client with the token", "the server's token",
                  _http(SERVER_NAME, ctx.mcp_url, token))]


async def connect(request: Request) -> Response:
    session = owner(request)
    if session is None:
        return login_needed()
    found = blocks(context(request))
    numbered = [(b, [(f"snippet-{i}-{j}", s) for j, s in enumerate(b.snippets)])
                for i, b in enumerate(found)]
    return page("connect.html", session=session, view="connect", blocks=numbered)
