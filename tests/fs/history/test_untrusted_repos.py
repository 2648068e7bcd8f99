"""Untrusted repositories: nothing they configure runs, and `.git` is only ever the
real directory at the top of the root.

The armed repository's config, attributes and hooks define every command git
(or a library imitating it) could run: filters, textconv, external diff,
fsmonitor, pager, aliases, hooks. Each would create a marker file. After every
tool call no marker exists, and no process was started (an audit hook sees
every spawn the interpreter makes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import NotFound
from app.fs.control import NoControl
from app.fs.history import ops
from app.fs.history.store import RepoRefused
from tests.fs.history.conftest import build_history, make_root
from tests.kit import roots_toml

SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                "os.fork", "os.forkpty", "pty.spawn"}
_spawns: list[str] = []
_watching = [False]


def _hook(event: str, args: tuple) -> None:
    if _watching[0] and event in SPAWN_EVENTS:
        _spawns.append(event)


sys.addaudithook(_hook)


def arm(repo: Path, marker: Path) -> None:
    """Every command a git config or hook may hold, each creating the marker."""
    cmd = f"touch {marker}"
    keys = {
        "core.fsmonitor": cmd, "core.pager": cmd, "core.editor": cmd, "core.sshCommand": cmd,
        "core.hooksPath": str(repo / ".git" / "hooks"), "diff.external": cmd,
        "diff.armed.textconv": cmd, "diff.armed.command": cmd, "filter.armed.clean": cmd,
        "filter.armed.smudge": cmd, "filter.armed.process": cmd, "filter.armed.required": "true",
        "alias.log": f"!{cmd}", "alias.show": f"!{cmd}", "alias.diff": f"!{cmd}",
        "pager.log": cmd, "pager.show": cmd, "pager.diff": cmd, "core.askPass": cmd,
        "gpg.program": cmd, "log.showSignature": "true", "uploadpack.packObjectsHook": cmd,
    }
    cfg = repo / ".git" / "config"
    with cfg.open("a") as f:
        sections: dict[str, list[tuple[str, str]]] = {}
        for key, value in keys.items():
            section, _, name = key.rpartition(".")
            sections.setdefault(section, []).append((name, value))
        for section, items in sections.items():
            head, _, sub = section.partition(".")
            f.write(f'[{head} "{sub}"]\n' if sub else f"[{head}]\n")
            for name, value in items:
                f.write(f'\t{name} = "{value}"\n')
    (repo / ".gitattributes").write_text("* filter=armed diff=armed\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=armed diff=armed\n")
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction",
                 "fsmonitor-watchman", "pre-auto-gc", "post-merge", "pre-push"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\n{cmd}\n")
        hook.chmod(0o755)


def test_an_armed_repository_runs_nothing(tmp_path: Path) -> None:
    repo, ids = build_history(tmp_path)
    marker = tmp_path / "MARKER"
    arm(repo.path, marker)
    (repo.path / "README.md").write_text("changed in the working tree\n")
    root = make_root(repo.path)
    c = NoControl()
    calls = [
        lambda: ops.git_log(root, path="", commit="HEAD", offset=0, limit=50, cursor=None,
                            cap=65536, control=c),
        lambda: ops.git_log(root, path="README.md", commit="main", offset=0, limit=50,
                            cursor=None, cap=65536, control=c),
        lambda: ops.git_show(root, commit="HEAD~1", path=None, start_line=1, end_line=300,
                             offset=0, cap=65536, control=c),
        lambda: ops.git_show(root, commit="v1", path="README.md", start_line=1, end_line=300,
                             offset=0, cap=65536, control=c),
        lambda: ops.git_diff(root, base=ids["first"], target="HEAD", path="", offset=0,
                             cap=65536, read_budget=1 << 26, control=c),
        lambda: ops.git_diff(root, base="HEAD", target=None, path="", offset=0, cap=65536,
                             read_budget=1 << 26, control=c),
    ]
    _spawns.clear()
    _watching[0] = True
    try:
        for call in calls:
            call()
            assert not marker.exists()
    finally:
        _watching[0] = False
    assert _spawns == []
    # The arming is real: git itself, asked the same, runs it.
    subprocess.run(["git", "-C", str(repo.path), "diff", "HEAD"], capture_output=True,
                   env={**os.environ, "HOME": str(tmp_path), "GIT_PAGER": ""}, timeout=60)
    assert marker.exists()


# -- .git must be the real directory at the top of the root -------------------


def _log(root):
    return ops.git_log(root, path="", commit="HEAD", offset=0, limit=5, cursor=None,
                       cap=65536, control=NoControl())


@pytest.fixture
def elsewhere(tmp_path: Path):
    repo, _ = build_history(tmp_path / "outside")
    repo.write("other.txt", "another repository\n")
    repo.git("add", "-A")
    repo.commit("Only in the other repository", 1_800_000_000)
    return repo


def test_a_git_link_to_a_repository_elsewhere_is_refused(tmp_path: Path, elsewhere) -> None:
    top = tmp_path / "root"
    top.mkdir()
    (top / ".git").symlink_to(elsewhere.path / ".git")
    with pytest.raises(RepoRefused, match=r"root 'repo': \.git is a symbolic link"):
        _log(make_root(top))


def test_a_gitdir_file_pointing_elsewhere_is_refused(tmp_path: Path, elsewhere) -> None:
    top = tmp_path / "root"
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {elsewhere.path / '.git'}\n")
    with pytest.raises(RepoRefused, match=r"\.git is a file \(a 'gitdir:' pointer"):
        _log(make_root(top))


def test_a_root_without_a_repository_is_named(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"root 'repo' holds no git repository"):
        _log(make_root(tmp_path))


@pytest.mark.parametrize("what", ["objects", "objects/pack", "refs"])
def test_a_link_inside_git_to_another_repository_is_not_followed(
    tmp_path: Path, elsewhere, what: str
) -> None:
    repo, _ = build_history(tmp_path / "mine")
    target = repo.path / ".git" / what
    shutil.rmtree(target)
    target.symlink_to(elsewhere.path / ".git" / what)
    with pytest.raises((RepoRefused, NotFound)):
        _log(make_root(repo.path))


def test_alternates_and_commondir_are_refused(tmp_path: Path, elsewhere) -> None:
    repo, _ = build_history(tmp_path / "mine")
    alt = repo.path / ".git" / "objects" / "info" / "alternates"
    alt.parent.mkdir(exist_ok=True)
    alt.write_text(str(elsewhere.path / ".git" / "objects") + "\n")
    with pytest.raises(RepoRefused, match="alternates"):
        _log(make_root(repo.path))
    alt.unlink()
    (repo.path / ".git" / "commondir").write_text(str(elsewhere.path / ".git") + "\n")
    with pytest.raises(RepoRefused, match="commondir"):
        _log(make_root(repo.path))


def test_a_git_swapped_during_a_call_serves_the_first_one(tmp_path: Path, elsewhere) -> None:
    """The handle opened at the start is what every later read goes through."""
    from app.fs.history.gitdir import GitDir
    from app.fs.history.revs import resolve

    repo, ids = build_history(tmp_path / "mine")
    root = make_root(repo.path)
    mine_head = ids["last"]
    with GitDir(root, op="test") as git:
        os.rename(repo.path / ".git", repo.path / "moved.git")
        os.symlink(elsewhere.path / ".git", repo.path / ".git")
        assert resolve(git, "HEAD").id.decode() == mine_head
        other = elsewhere.git("rev-parse", "HEAD").strip()
        assert other != mine_head
        with pytest.raises(NotFound):
            resolve(git, other)  # the other repository's objects are not reachable


async def test_an_armed_repository_runs_nothing_through_a_live_server(tmp_path: Path) -> None:
    from tests.live import live_server

    repo, ids = build_history(tmp_path)
    marker = tmp_path / "MARKER"
    arm(repo.path, marker)
    (repo.path / "README.md").write_text("changed in the working tree\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(roots_toml(("repo", repo.path, "reference"), audit_log=tmp_path / "audit.log"))
    calls = [
        ("git_log", {}), ("git_log", {"path": "README.md"}), ("git_show", {"commit": "HEAD~1"}),
        ("git_show", {"commit": "v1", "path": "README.md"}),
        ("git_diff", {"base": ids["first"], "target": "HEAD"}), ("git_diff", {}),
    ]
    _spawns.clear()
    with live_server(cfg) as srv:
        async with srv.session() as s:
            _watching[0] = True
            try:
                for name, args in calls:
                    res = await s.call_tool(name, args)
                    assert not res.is_error, (name, res.content)
                    assert not marker.exists()
            finally:
                _watching[0] = False
    assert _spawns == []
