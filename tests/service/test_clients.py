"""`[[clients]]` over a live server: each client's token selects its grant, and it meets
nothing else (docs/clients.md).

Three clients on three roots, disjoint: `chatgpt` reads `alpha-docs`, `claude` reads and
writes `beta-repo`, `agent` reads, writes and deletes in `gamma-scratch`. Each root holds a
planted file whose name and content are its own; every answer a client gets is searched
for the plants of the roots it was not granted.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.types import CallToolResult

from app.server import collect_tools
from tests.kit import roots_toml, toml_value
from tests.live import LiveServer, live_server, text_of

ROOTS = {  # root -> (role, the marker of its planted file's name and of its content)
    "alpha-docs": ("reference", "plantalpha", "SECRET-ALPHA-CONTENT"),
    "beta-repo": ("sourcecode", "plantbeta", "SECRET-BETA-CONTENT"),
    "gamma-scratch": ("workspace", "plantgamma", "SECRET-GAMMA-CONTENT"),
}
GRANTS = {
    "chatgpt": {"alpha-docs": ["read"]},
    "claude": {"beta-repo": ["read", "write"]},
    "agent": {"gamma-scratch": ["read", "write", "delete"]},
}
ROOTLESS = {"list_roots", "reload_config", "search"}
HAS_GIT = shutil.which("git") is not None


def plant(root: str) -> str:
    return f"{ROOTS[root][1]}.txt"


def clients_toml(grants: dict[str, dict[str, list[str]]], token_files: dict[str, Path]) -> str:
    lines = []
    for name, roots in grants.items():
        lines += ["[[clients]]", f"name = {toml_value(name)}",
                  "roots = { " + ", ".join(f'"{r}" = {toml_value(p)}' for r, p in roots.items())
                  + " }"]
        if name in token_files:
            lines.append(f"token_file = {toml_value(token_files[name])}")
    return "\n".join(lines) + "\n"


class Setup:
    """The folders, the config and the tokens of one server of three clients."""

    def __init__(self, base: Path, state: Path) -> None:
        self.base = base
        self.state = state
        self.audit = base / "audit.log"
        specs = []
        for name, (role, _marker, content) in ROOTS.items():
            folder = base / name
            folder.mkdir()
            (folder / plant(name)).write_text(f"{content} needle\n")
            specs.append((name, folder, role))
        self.specs = specs
        if HAS_GIT:  # beta-repo is a repository: its reader gets the history tools
            repo = base / "beta-repo"
            git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run([*git, "init", "-q"], check=True, timeout=30)
            subprocess.run([*git, "add", "."], check=True, timeout=30)
            subprocess.run([*git, "commit", "-q", "-m", "plantbeta history"], check=True,
                           timeout=30)
        self.claude_token = base / "secrets" / "claude.token"
        self.claude_token.parent.mkdir()
        self.claude_token.write_text("claude-token-one\n")
        self.claude_token.chmod(0o600)
        self.config = base / "roots.toml"
        self.write(GRANTS)

    def write(self, grants: dict[str, dict[str, list[str]]]) -> None:
        extra = 'search_fetch_tools = true\ndefault_root = "beta-repo"'
        self.config.write_text(
            roots_toml(*self.specs, audit_log=self.audit, extra=extra)
            + clients_toml(grants, {"claude": self.claude_token})
        )

    def token(self, client: str) -> str:
        if client == "claude":
            return self.claude_token.read_text().strip()
        return (self.state / "loom-fs-mcp" / "tokens" / client).read_text().strip()


@pytest.fixture
def setup(tmp_path: Path, private_state_home: Path) -> Setup:
    return Setup(tmp_path, private_state_home)


@pytest.fixture
def server(setup: Setup) -> Iterator[LiveServer]:
    with live_server(setup.config, client_tokens=True) as srv:
        yield srv


def expected_tools(grant: dict[str, list[str]]) -> set[str]:
    """The tools a grant allows, by each tool's declared permission (search and fetch are
    on in this config; beta-repo is a git repository when git is there)."""
    perms = {p for ps in grant.values() for p in ps} | {"search_fetch"}
    if HAS_GIT and "read" in grant.get("beta-repo", []):
        perms.add("git")
    return {spec.name for spec, _ in collect_tools() if spec.perm is None or spec.perm in perms}


def args_for(tool: str, root: str) -> dict[str, Any]:
    """Arguments of a call of `tool` on `root` (every tool of the catalog)."""
    f = plant(root)
    table: dict[str, dict[str, Any]] = {
        "list_directory": {"root": root},
        "stat_path": {"root": root, "path": f},
        "read_text_file": {"root": root, "path": f},
        "read_multiple_files": {"root": root, "paths": [f]},
        "read_media_file": {"root": root, "path": f},
        "search_files": {"root": root, "pattern": "*"},
        "search_text": {"root": root, "query": "needle"},
        "write_file": {"root": root, "path": "written.txt", "content": "x", "overwrite": True},
        "edit_file": {"root": root, "path": f, "dry_run": True,
                      "edits": [{"old_text": "needle", "new_text": "pin"}]},
        "apply_patch": {"root": root, "dry_run": True,
                        "patch": "*** Begin Patch\n*** Add File: patched.txt\n+x\n*** End Patch\n"},
        "create_directory": {"root": root, "path": "made"},
        "move_file": {"root": root, "source": "absent-a", "destination": "absent-b"},
        "copy_file": {"source_root": root, "destination_root": root, "source": f,
                      "destination": "copied.txt", "overwrite": True},
        "delete": {"root": root, "path": "absent"},
        "fetch": {"id": f"{root}/{f}"},
        "search": {"query": "needle"},
        "git_log": {"root": root},
        "git_show": {"root": root, "commit": "HEAD", "path": f},
        "git_diff": {"root": root},
        "list_roots": {},
        "reload_config": {},
    }
    return table.get(tool, {"root": root, "path": f})


def answer_of(res: CallToolResult) -> str:
    """Everything a client reads in an answer: its text and its structured content."""
    return text_of(res) + json.dumps(res.structured_content or {})


def foreign_marks(client: str) -> list[str]:
    """Names and contents of the roots `client` was not granted."""
    return [mark for root, (_, name, content) in ROOTS.items() if root not in GRANTS[client]
            for mark in (root, name, content)]


async def tool_names(s: ClientSession) -> set[str]:
    return {t.name for t in (await s.list_tools()).tools}


@pytest.mark.parametrize("client", sorted(GRANTS))
async def test_each_client_meets_exactly_its_grant_in_every_tool(
    server: LiveServer, setup: Setup, client: str
) -> None:
    """The table of tool x client: the tools its grant allows and no other; each of them on
    its own root answers, on another root `unknown root` listing its roots only; nothing it
    reads names or quotes another client's root."""
    grant = GRANTS[client]
    own = ", ".join(grant)
    allowed = expected_tools(grant)
    table: dict[tuple[str, str], str] = {}
    async with server.session(token=setup.token(client)) as s:
        listed = await tool_names(s)
        assert listed == allowed
        for spec, _ in collect_tools():
            tool = spec.name
            targets = [next(iter(grant))] if tool in ROOTLESS else list(ROOTS)
            for root in targets:
                res = await s.call_tool(tool, args_for(tool, root))
                said = answer_of(res)
                if tool not in allowed:
                    table[tool, root] = "unknown tool" if said.startswith(
                        f"unknown tool '{tool}'") else said
                elif root in grant:
                    table[tool, root] = "answered"
                    assert "unknown root" not in said and "unknown tool" not in said, said
                    for mark in foreign_marks(client):
                        assert mark not in said, (tool, mark, said)
                else:
                    table[tool, root] = text_of(res)
                    assert res.is_error
        if "copy_file" in allowed:  # a copy into a root outside the grant
            for other in ROOTS:
                if other in grant:
                    continue
                res = await s.call_tool("copy_file", {
                    "source_root": next(iter(grant)), "destination_root": other,
                    "source": plant(next(iter(grant))), "destination": "x.txt"})
                assert text_of(res) == f"unknown root '{other}'; known roots: {own}"
    for (tool, root), outcome in table.items():
        if tool not in allowed:
            assert outcome == "unknown tool", (tool, root, outcome)
        elif root not in grant and tool not in ROOTLESS:
            assert outcome == f"unknown root '{root}'; known roots: {own}", (tool, outcome)
    # Outside a call's own echo of a foreign root's name, nothing foreign ever came back.
    for (tool, root), outcome in table.items():
        for mark in foreign_marks(client):
            if mark != root:
                assert mark not in outcome, (tool, root, mark, outcome)


@pytest.mark.parametrize(
    ("client", "roots", "default"),
    [("chatgpt", ["alpha-docs"], "alpha-docs"),  # the grant's only root
     ("claude", ["beta-repo"], "beta-repo"),  # the config's default_root, granted
     ("agent", ["gamma-scratch"], "gamma-scratch")],
)
async def test_list_roots_and_the_default_root_follow_the_grant(
    server: LiveServer, setup: Setup, client: str, roots: list[str], default: str
) -> None:
    async with server.session(token=setup.token(client)) as s:
        res = await s.call_tool("list_roots", {})
        got = res.structured_content or {}
        assert [r["name"] for r in got["roots"]] == roots
        assert [r["name"] for r in got["roots"] if r.get("default")] == [default]
        read = await s.call_tool("read_text_file", {"path": plant(default)})
        assert ROOTS[default][2] in text_of(read)


async def test_a_grant_narrower_than_the_root_holds_within_it(setup: Setup) -> None:
    """A root's permissions intersected with the grant: read only in a workspace root."""
    setup.write({**GRANTS, "agent": {"gamma-scratch": ["read"]}})
    with live_server(setup.config, client_tokens=True) as srv:
        async with srv.session(token=setup.token("agent")) as s:
            assert not ({"write_file", "delete"} & await tool_names(s))
            res = await s.call_tool("list_roots", {})
            assert (res.structured_content or {})["roots"][0]["permissions"] == ["read"]


@pytest.mark.parametrize("header", [
    "Bearer wrong-token", "Bearer claude-token-on", "Bearer", "Basic claude-token-one", "",
])
def test_a_wrong_token_is_401(server: LiveServer, header: str) -> None:
    r = httpx.post(server.url, headers={"Authorization": header} if header else {}, json={})
    assert r.status_code == 401


async def test_reload_rotates_a_token_and_changes_a_grant_at_once(
    server: LiveServer, setup: Setup
) -> None:
    """A token file rewritten and a grant widened: after the reload the old token is 401,
    the new one works, and the widened client sees the new root in its next request."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    old = setup.token("claude")
    async with server.session(message_handler=on_message, token=setup.token("chatgpt")) as s:
        assert "write_file" not in await tool_names(s)
        setup.claude_token.write_text("claude-token-two\n")
        setup.write({**GRANTS, "chatgpt": {"alpha-docs": ["read"], "beta-repo": ["read",
                                                                                 "write"]}})
        res = await s.call_tool("reload_config", {})
        assert not res.is_error, text_of(res)
        assert [r["name"] for r in (res.structured_content or {})["roots"]] == [
            "alpha-docs", "beta-repo"]
        with anyio.fail_after(10):
            await changed.wait()
        assert "write_file" in await tool_names(s)
        read = await s.call_tool("read_text_file", {"root": "beta-repo",
                                                    "path": plant("beta-repo")})
        assert ROOTS["beta-repo"][2] in text_of(read)
    unauthorized = httpx.post(server.url, headers={"Authorization": f"Bearer {old}"}, json={})
    assert unauthorized.status_code == 401
    async with server.session(token="claude-token-two") as s:
        res = await s.call_tool("list_roots", {})
        assert [r["name"] for r in (res.structured_content or {})["roots"]] == ["beta-repo"]


async def test_a_refused_reload_tells_a_client_nothing_of_the_config(
    server: LiveServer, setup: Setup
) -> None:
    setup.write({**GRANTS, "chatgpt": {"beta-repo": ["read", "delete"]}})
    async with server.session(token=setup.token("chatgpt")) as s:
        res = await s.call_tool("reload_config", {})
        assert res.is_error
        assert "beta-repo" not in text_of(res) and "nothing changed" in text_of(res)
        listed = await s.call_tool("list_roots", {})
        assert [r["name"] for r in (listed.structured_content or {})["roots"]] == ["alpha-docs"]


async def test_audit_lines_name_each_client(server: LiveServer, setup: Setup) -> None:
    for client, grant in GRANTS.items():
        root = next(iter(grant))
        async with server.session(token=setup.token(client)) as s:
            await s.call_tool("read_text_file", {"root": root, "path": plant(root)})
    lines = setup.audit.read_text().splitlines()
    pattern = re.compile(r" root=(\S+) .* peer=127\.0\.0\.1:\d+ client=(\S+)$")
    seen: dict[str, set[str]] = {}
    for line in lines:
        m = pattern.search(line)
        assert m, line
        seen.setdefault(m.group(2), set()).add(m.group(1))
    assert seen == {client: set(grant) for client, grant in GRANTS.items()}


@pytest.mark.parametrize("client", sorted(GRANTS))
async def test_the_stateless_revision_takes_the_grant_from_each_request(
    server: LiveServer, setup: Setup, client: str
) -> None:
    """2026-07-28 has no session: each request's token selects the grant."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    grant = GRANTS[client]
    headers = {"Authorization": f"Bearer {setup.token(client)}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(server.url, http_client=http)) as c,
    ):
        assert c.protocol_version == "2026-07-28"
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == expected_tools(grant)
        listed = await c.call_tool("list_roots", {})
        assert [r["name"] for r in (listed.structured_content or {})["roots"]] == list(grant)
        found = await c.call_tool("search", {"query": "needle"})
        said = answer_of(found)
        assert ROOTS[next(iter(grant))][1] in said
        for mark in foreign_marks(client):
            assert mark not in said, (mark, said)


async def test_calls_in_parallel_with_grant_changes_never_see_a_mixed_grant(
    server: LiveServer, setup: Setup
) -> None:
    """chatgpt's grant flips between alpha-docs and beta-repo, reload after reload, while two
    of its sessions call: every answer is wholly under one grant (its roots, its default,
    its search hits), never a mix."""
    flips = 8
    states = [{"alpha-docs": ["read"]}, {"beta-repo": ["read"]}]
    done = anyio.Event()
    seen: list[tuple[str, ...]] = []

    async def flipper() -> None:
        async with server.session(token=setup.token("agent")) as s:
            for i in range(flips):
                setup.write({**GRANTS, "chatgpt": states[i % 2]})
                res = await s.call_tool("reload_config", {})
                assert not res.is_error, text_of(res)
                await anyio.sleep(0.02)
        done.set()

    async def caller() -> None:
        async with server.session(token=setup.token("chatgpt")) as s:
            while not done.is_set():
                listed = (await s.call_tool("list_roots", {})).structured_content or {}
                names = [r["name"] for r in listed["roots"]]
                defaults = [r["name"] for r in listed["roots"] if r.get("default")]
                assert len(names) == 1 and defaults == names, listed
                found = (await s.call_tool("search", {"query": "needle"})).structured_content
                hits = {r["id"].split("/", 1)[0] for r in (found or {}).get("results", [])}
                assert len(hits) <= 1, found
                seen.append(tuple(names))

    async with anyio.create_task_group() as tg:
        tg.start_soon(flipper)
        tg.start_soon(caller)
        tg.start_soon(caller)
    assert seen  # the callers made calls while the grant flipped


async def test_a_clients_budget_is_its_own_and_list_roots_shows_it(setup: Setup) -> None:
    text = setup.config.read_text()
    text = text.replace('role = "workspace"', 'role = "workspace"\nmax_read_bytes = 16384')
    text = text.replace('roots = { "gamma-scratch"', 'budget = { bytes_per_minute = 1, '
                        'burst_bytes = 20000 }\nroots = { "gamma-scratch"')
    setup.config.write_text("max_output_chars = 4096\n" + text)
    with live_server(setup.config, client_tokens=True) as srv:
        async with srv.session(token=setup.token("agent")) as s:
            listed = (await s.call_tool("list_roots", {})).structured_content or {}
            assert listed["client_budget"]["burst_bytes"] == 20000
            big = await s.call_tool("write_file", {"root": "gamma-scratch", "path": "big.txt",
                                                   "content": "x" * 15000})
            assert not big.is_error, text_of(big)
            again = await s.call_tool("write_file", {"root": "gamma-scratch", "path": "b2.txt",
                                                     "content": "x" * 15000})
            assert again.is_error and "client 'agent'" in text_of(again)
        async with srv.session(token=setup.token("claude")) as s:
            listed = (await s.call_tool("list_roots", {})).structured_content or {}
            assert listed.get("client_budget") is None
            ok = await s.call_tool("write_file", {"root": "beta-repo", "path": "big.txt",
                                                  "content": "x" * 15000})
            assert not ok.is_error, text_of(ok)


def test_the_console_script_serves_clients_and_sighup_rotates_a_token(
    setup: Setup, tmp_path: Path
) -> None:
    """The real start: each client printed with its token's place, each token opens its own
    grant only, and after a token file is rewritten SIGHUP makes the old one 401."""
    import signal
    import time

    from tests.live import INIT_REQUEST, MCP_POST_HEADERS, free_port
    from tests.service.test_cli_http import spawn_http, wait_healthy

    port = free_port()
    proc = spawn_http(setup.config, "--port", str(port), XDG_STATE_HOME=str(setup.state))
    url = f"http://127.0.0.1:{port}/mcp"

    def status(token: str) -> int:
        return httpx.post(url, json=INIT_REQUEST, timeout=10, headers={
            **MCP_POST_HEADERS, "Authorization": f"Bearer {token}"}).status_code

    try:
        wait_healthy(port, proc)
        for client in GRANTS:
            assert status(setup.token(client)) == 200
        setup.claude_token.write_text("claude-token-three\n")
        proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10
        while status("claude-token-one") != 401:
            assert time.monotonic() < end, "SIGHUP did not rotate the token"
            time.sleep(0.05)
        assert status("claude-token-three") == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    for client, grant in GRANTS.items():
        root = next(iter(grant))
        assert f"client {client}: {root} [{', '.join(grant[root])}]; token " in err, err
    assert f"token {setup.claude_token} (token_file;" in err
    assert "tokens/chatgpt (made" in err


def test_a_session_is_its_clients_and_ends_when_a_reload_removes_the_client(
    server: LiveServer, setup: Setup
) -> None:
    """Another client's token in a session it did not open: 404, as a session that does not
    exist. A reload that removes a client ends its sessions; the others' stay."""
    from app import sdk
    from tests.live import MCP_POST_HEADERS, open_raw_session, session_policy, tool_request

    def opened(client: str) -> httpx.Client:
        http = httpx.Client(base_url=server.base, timeout=10,
                            headers={"Authorization": f"Bearer {setup.token(client)}"})
        open_raw_session(http)
        return http

    agent, chatgpt = opened("agent"), opened("chatgpt")
    try:
        stolen = httpx.post(server.url, json=tool_request(2, "list_roots", {}), timeout=10,
                            headers={**MCP_POST_HEADERS,
                                     "Authorization": f"Bearer {setup.token('claude')}",
                                     "mcp-session-id": agent.headers["mcp-session-id"],
                                     "mcp-protocol-version": "2025-11-25"})
        assert stolen.status_code == 404
        assert "gamma-scratch" not in stolen.text
        table = sdk.session_table(server.server.session_manager)
        assert agent.headers["mcp-session-id"] in table
        setup.write({"chatgpt": GRANTS["chatgpt"], "claude": GRANTS["claude"]})
        reloaded = chatgpt.post("/mcp", json=tool_request(3, "reload_config", {}),
                                headers=MCP_POST_HEADERS)
        assert reloaded.status_code == 200, reloaded.text
        assert agent.headers["mcp-session-id"] not in table
        assert chatgpt.headers["mcp-session-id"] in table
        assert agent.headers["mcp-session-id"] not in session_policy(server.app).uses
        still = chatgpt.post("/mcp", json=tool_request(4, "list_roots", {}),
                             headers=MCP_POST_HEADERS)
        assert still.status_code == 200 and "alpha-docs" in still.text
    finally:
        agent.close()
        chatgpt.close()


def test_no_client_keeps_another_out_of_the_session_table(setup: Setup) -> None:
    """A table of 6 sessions and 3 clients: each may hold 2. One client that keeps opening
    sessions and using them is refused 503 with a Retry-After about its own sessions once it
    holds 2, and the other clients still open theirs."""
    from tests.live import INIT_REQUEST, MCP_POST_HEADERS, tool_request

    with live_server(setup.config, client_tokens=True, max_sessions=6) as srv, \
            httpx.Client(timeout=30) as http:

        def open_as(client: str) -> httpx.Response:
            return http.post(srv.url, json=INIT_REQUEST, headers={
                **MCP_POST_HEADERS, "Authorization": f"Bearer {setup.token(client)}"})

        held = []
        for _ in range(2):
            r = open_as("agent")
            assert r.status_code == 200
            sid = r.headers["mcp-session-id"]
            used = http.post(srv.url, json=tool_request(2, "list_roots", {}), headers={
                **MCP_POST_HEADERS, "Authorization": f"Bearer {setup.token('agent')}",
                "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
            assert used.status_code == 200
            held.append(sid)
        refused = open_as("agent")
        assert refused.status_code == 503
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        for client in ("chatgpt", "claude", "chatgpt", "claude"):
            assert open_as(client).status_code == 200, client
