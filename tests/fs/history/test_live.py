"""The history tools through the MCP SDK client against a live server (uvicorn, HTTP).

Happy paths compared with `git` itself, and each refusal with its message:
a root without a repository, a `.git` link, a `gitdir:` file, a denied path,
an unknown revision. The tools exist only when some readable root has a `.git`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fs.history.conftest import Repo, build_history
from tests.kit import roots_toml
from tests.live import LiveServer, call_tool, live_server, text_of

GIT_TOOLS = {"git_log", "git_show", "git_diff"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("live")
    repo, ids = build_history(base / "hist")
    other, _ = build_history(base / "other")
    plain = base / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    linked = base / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(other.path / ".git")
    gitfile = base / "gitfile"
    gitfile.mkdir()
    (gitfile / ".git").write_text(f"gitdir: {other.path / '.git'}\n")
    cfg = base / "cfg.toml"
    cfg.write_text(roots_toml(
        ("repo", repo.path, "reference"), ("plain", plain, "reference"),
        ("linked", linked, "reference"), ("gitfile", gitfile, "reference"),
        audit_log=base / "audit.log", extra='default_root = "repo"\nmax_output_chars = 20000',
    ))
    plain_cfg = base / "plain.toml"
    plain_cfg.write_text(roots_toml(("plain", plain, "workspace"), audit_log=base / "audit2.log"))
    return {"repo": repo, "ids": ids, "cfg": cfg, "plain_cfg": plain_cfg, "base": base}


@pytest.fixture(scope="module")
def server(world: dict[str, Any]) -> Iterator[LiveServer]:
    with live_server(world["cfg"]) as srv:
        yield srv


async def test_git_tools_are_listed_read_only(server: LiveServer) -> None:
    async with server.session() as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) >= GIT_TOOLS
    for name in GIT_TOOLS:
        t = tools[name]
        assert t.description and t.output_schema is not None
        assert t.annotations is not None and t.annotations.read_only_hint is True
        assert t.annotations.destructive_hint is False
        assert t.annotations.open_world_hint is False


async def test_no_repository_no_git_tools(world: dict[str, Any]) -> None:
    with live_server(world["plain_cfg"]) as srv:
        async with srv.session() as s:
            names = {t.name for t in (await s.list_tools()).tools}
    assert not (GIT_TOOLS & names)
    assert "write_file" in names


async def test_log_show_diff_over_the_wire_equal_git(server: LiveServer, world) -> None:
    repo: Repo = world["repo"]
    ids = world["ids"]
    res = await call_tool(server, "git_log", {"limit": 50})
    assert not res.is_error
    assert [c["id"] for c in res.structured_content["commits"]] == repo.git(
        "log", "--format=%H"
    ).split()
    res = await call_tool(server, "git_log", {"path": "src/main.py"})
    assert [c["id"] for c in res.structured_content["commits"]] == repo.git(
        "log", "--format=%H", "--", "src/main.py"
    ).split()
    res = await call_tool(server, "git_show", {"commit": ids["rename"][:8]})
    assert not res.is_error
    files = res.structured_content["files"]
    assert {"path": "src/main.py", "change": "renamed", "old_path": "src/app.py"} in files
    res = await call_tool(server, "git_show", {"commit": "v1", "path": "README.md"})
    content = res.structured_content["file"]["content"]
    assert content.split("\n") == [
        f"{i} | {x}" for i, x in enumerate(repo.git("show", "v1:README.md").splitlines(), 1)
    ]
    # The text item is for a model: the file's lines verbatim, numbered, not JSON.
    assert "1 # Demo\n" in text_of(res)
    res = await call_tool(server, "git_diff", {"base": ids["first"], "target": ids["key"]})
    assert not res.is_error
    paths = [f["path"] for f in res.structured_content["files"]]
    assert paths == ["src/app.py"]
    assert res.structured_content["hidden_denied"] == 2
    assert "-    return 1\n+    return 2" in text_of(res)
    assert "hunter2" not in str(res.content) and "MIIkey" not in str(res.content)


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("git_log", {"root": "plain"},
         "root 'plain' holds no git repository (no .git directory at its top)"),
        ("git_log", {"root": "linked"},
         "root 'linked': .git is a symbolic link; only a real .git directory inside the root "
         "is read"),
        ("git_diff", {"root": "gitfile"},
         "root 'gitfile': .git is a file (a 'gitdir:' pointer to a repository elsewhere); "
         "only a real .git directory inside the root is read"),
        ("git_show", {"commit": "HEAD~1", "path": ".env"}, "matches deny pattern '.env'"),
        ("git_show", {"commit": "HEAD", "path": "keys/deploy.pem"},
         "matches deny pattern '*.pem'"),
        ("git_log", {"path": ".env"}, "matches deny pattern '.env'"),
        ("git_show", {"commit": "nosuch"},
         "unknown revision 'nosuch': no commit, branch or tag of that name"),
        ("git_show", {"commit": "HEAD", "path": "../outside"}, "path escapes the root"),
    ],
)
async def test_refusals_over_the_wire(server: LiveServer, tool: str, args: dict[str, Any],
                                      message: str) -> None:
    res = await call_tool(server, tool, args)
    assert res.is_error
    assert text_of(res) == message


async def test_a_repository_created_later_brings_the_tools_on_reload(tmp_path: Path) -> None:
    from tests.fs.history.conftest import git_env

    top = tmp_path / "work"
    top.mkdir()
    (top / "a.txt").write_text("a\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(roots_toml(("work", top, "reference"), audit_log=tmp_path / "audit.log"))
    with live_server(cfg) as srv:
        async with srv.session() as s:
            before = {t.name for t in (await s.list_tools()).tools}
            subprocess.run(["git", "-C", str(top), "init", "-q"], check=True,
                           env=git_env(tmp_path), capture_output=True)
            assert not (await s.call_tool("reload_config", {})).is_error
            after = {t.name for t in (await s.list_tools()).tools}
            empty = await s.call_tool("git_log", {})
    assert not (GIT_TOOLS & before)
    assert after >= GIT_TOOLS
    assert empty.is_error and "HEAD does not point to a commit" in text_of(empty)


async def test_no_git_result_or_error_holds_a_host_path(server: LiveServer, world) -> None:
    base = str(world["base"])
    host = f"{world['repo'].path}/README.md"
    calls: list[tuple[str, dict[str, Any]]] = []
    for root in ("repo", "plain", "linked", "gitfile", "nope"):
        calls += [("git_log", {"root": root}), ("git_diff", {"root": root}),
                  ("git_show", {"root": root, "commit": "HEAD"})]
    for path in (host, "../x", ".env", "src", "big.txt", "logo.bin", "nope", "a\\b"):
        calls += [("git_log", {"path": path}), ("git_diff", {"path": path}),
                  ("git_show", {"commit": "HEAD", "path": path}),
                  ("git_show", {"commit": host})]
    errors = 0
    async with server.session() as s:
        for tool, args in calls:
            res = await s.call_tool(tool, args)
            errors += bool(res.is_error)
            text = " ".join(getattr(c, "text", "") for c in res.content)
            assert base not in text and base not in str(res.structured_content), (tool, args)
    assert errors > 20
