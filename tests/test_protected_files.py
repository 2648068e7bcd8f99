"""The server's own files (docs/security.md): config, token file, every audit log written.

They are floor-denied by path and by identity (a hard link under an innocent
name is still refused), across reloads that move the log or lower its backups;
a config reached through a link inside a root that grants write is refused at
start and on reload (the agent could otherwise swap the file that defines its
roots). Also here: a root whose folder was deleted or replaced says so.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from app.corpus import deep_research
from app.errors import ConfigError, DeniedName, LoomError, RootGone
from app.fs.change import move, trash, write
from app.fs.control import NoControl
from app.fs.reading import listing
from app.fs.reading import read as read_mod
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.registry import Registry, Snapshot
from tests.kit import roots_toml

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


CTL = NoControl()


def toml(*roots: tuple[str, Path, str], audit: Path, extra: str = "") -> str:
    return roots_toml(*roots, audit_log=audit, extra=f"search_fetch_tools = true\n{extra}")


def every_answer(snap: Snapshot, root: str) -> str:
    """What an agent can learn from a root: every listing, search and read, as text."""
    r = snap.root(root)
    out = [
        listing.list_directory(
            r, "", recursive=True, max_depth=10, offset=0, limit=10000, cap=1 << 22, control=CTL
        ).model_dump_json(),
        search_files(
            r, FilesOptions(pattern="*", offset=0, limit=10000, cap=1 << 22), CTL
        ).model_dump_json(),
        search_text(r, TextOptions(
            query="TOKEN-VALUE", file_glob="*", case_sensitive=False, offset=0, limit=1000,
            cap=1 << 22, file_limit=1 << 20, budget=1 << 26,
        ), CTL).model_dump_json(),
        search_text(r, TextOptions(
            query="roots", file_glob="*", case_sensitive=False, offset=0, limit=1000,
            cap=1 << 22, file_limit=1 << 20, budget=1 << 26,
        ), CTL).model_dump_json(),
        str(deep_research.search(snap, "roots TOKEN-VALUE ALLOW", CTL)),
    ]
    return "\n".join(out)


def refused(fn: Callable[[], Any]) -> LoomError:
    with pytest.raises(LoomError) as info:
        fn()
    return info.value


# -- identity and path: config, token file, audit logs -------------------------


@pytest.fixture
def place(tmp_path: Path) -> Path:
    for d in ("ref", "ws", "etc", "state"):
        (tmp_path / d).mkdir()
    (tmp_path / "ref" / "doc.txt").write_text("plain\n")
    return tmp_path


WHICH = ["config", "token", "audit", "audit-backup"]


@pytest.mark.parametrize("which", WHICH)
@pytest.mark.parametrize("how", ["in-read-only-root", "hard-link-in-workspace"])
def test_server_files_are_never_served(
    place: Path, which: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each own file, at its path in a reference root or hard-linked into a workspace
    under an innocent name: not readable, listable, searchable, movable or deletable."""
    inside = place / "ref" if how == "in-read-only-root" else place / "etc"
    cfg = (inside if which == "config" else place / "etc") / "loom.toml"
    audit = (inside if which.startswith("audit") else place / "state") / "audit.log"
    token = (inside if which == "token" else place / "etc") / "token.txt"
    token.write_text("TOKEN-VALUE\n")
    monkeypatch.setenv("LOOMFS_TOKEN_FILE", str(token))
    extra = "audit_log_max_bytes = 200\naudit_log_backups = 2"
    cfg.write_text(toml(("ref", place / "ref", "reference"), ("ws", place / "ws", "workspace"),
                        audit=audit, extra=extra))
    reg = Registry(str(cfg))
    for _ in range(20):  # rotate the audit log: audit.log.1 now exists
        with reg.current.root("ref").open_file("doc.txt", op="read_text_file"):
            pass
    target = {
        "config": cfg, "token": token, "audit": audit, "audit-backup": Path(f"{audit}.1")
    }[which]
    assert target.exists()
    if how == "in-read-only-root":
        root, rel = "ref", target.name
    else:
        root, rel = "ws", "innocent.txt"
        os.link(target, place / "ws" / rel)
        ino = os.stat(target).st_ino
    snap = reg.current
    r = snap.root(root)
    fn: Callable[[], Any]  # a read, then a write: each refused
    for fn in (
        lambda: read_mod.read_text_file(r, rel, start=1, end=10, tail=None, cap=10000),
        lambda: listing.stat_path(r, rel),
        lambda: deep_research.fetch(snap, f"{root}/{rel}"),
        lambda: listing.list_directory(
            r, rel, recursive=False, max_depth=1, offset=0, limit=10, cap=10000, control=CTL
        ),
    ):
        assert isinstance(refused(fn), DeniedName)
    if root == "ws":
        for fn in (
            lambda: write.write_file(r, rel, "x", overwrite=True),
            lambda: move.move_file(r, rel, "moved.txt"),
            lambda: trash.delete(r, rel),
        ):
            assert isinstance(refused(fn), DeniedName)
        # Still there, still the same file, neither replaced nor moved nor trashed.
        assert os.stat(place / "ws" / rel).st_ino == ino
        assert not (place / "ws" / "moved.txt").exists()
    seen = every_answer(snap, root)
    assert rel not in seen and "TOKEN-VALUE" not in seen and "[[roots]]" not in seen
    assert "ALLOW root=" not in seen


def test_a_reload_that_moves_the_audit_log_or_lowers_backups_keeps_old_logs_denied(
    place: Path,
) -> None:
    logs = place / "ref" / "logs"
    cfg = place / "etc" / "loom.toml"
    roots = (("ref", place / "ref", "reference"), ("ws", place / "ws", "workspace"))
    cfg.write_text(toml(*roots, audit=logs / "audit.log",
                        extra="audit_log_max_bytes = 200\naudit_log_backups = 3"))
    reg = Registry(str(cfg))
    for _ in range(40):
        with reg.current.root("ref").open_file("doc.txt", op="read_text_file"):
            pass
    assert (logs / "audit.log.3").exists()
    os.link(logs / "audit.log.2", place / "ws" / "copy.txt")
    # Fewer backups: audit.log.2 and .3 are no longer this config's files, but were written.
    cfg.write_text(toml(*roots, audit=logs / "audit.log",
                        extra="audit_log_max_bytes = 200\naudit_log_backups = 1"))
    reg.reload()
    # Then the log moves out of the root altogether.
    cfg.write_text(toml(*roots, audit=place / "state" / "new.log"))
    reg.reload()
    snap = reg.current
    ref = snap.root("ref")
    for name in ("audit.log", "audit.log.1", "audit.log.2", "audit.log.3"):
        err = refused(partial(
            read_mod.read_text_file, ref, f"logs/{name}", start=1, end=5, tail=None, cap=1000))
        assert isinstance(err, DeniedName), name
    assert isinstance(refused(lambda: listing.stat_path(snap.root("ws"), "copy.txt")), DeniedName)
    for root in ("ref", "ws"):
        seen = every_answer(snap, root)
        assert "audit.log" not in seen and "copy.txt" not in seen and "ALLOW root=" not in seen


# -- a config reached through a link inside a root that grants write ----------


def _link_layout(place: Path, where: str) -> Path:
    """The config really lives in `etc`; return the path the server is started with."""
    real = place / "etc" / "loom.toml"
    ws = place / "ws"
    if where == "file":  # ws/loom.toml -> etc/loom.toml (the sequence)
        os.symlink(real, ws / "loom.toml")
        return ws / "loom.toml"
    if where == "folder":  # ws/conf -> etc; --config ws/conf/loom.toml
        os.symlink(place / "etc", ws / "conf")
        return ws / "conf" / "loom.toml"
    if where == "relative-chain":  # etc2 -> ws/hop -> ../etc (a link in ws on the way)
        os.symlink("../etc", ws / "hop")
        os.symlink(ws / "hop", place / "etc2")
        return place / "etc2" / "loom.toml"
    raise AssertionError(where)


@pytest.mark.parametrize("where", ["file", "folder", "relative-chain"])
def test_a_config_reached_through_a_link_in_a_writable_root_is_refused_at_start(
    place: Path, where: str
) -> None:
    (place / "etc" / "loom.toml").write_text(
        toml(("ws", place / "ws", "workspace"), audit=place / "state" / "a.log")
    )
    given = _link_layout(place, where)
    with pytest.raises(ConfigError, match="symbolic link on the path to the server's config"):
        Registry(str(given))
    proc = subprocess.run([EXE, "--config", str(given), "--check"], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and "symbolic link on the path" in proc.stderr
    assert str(place) not in proc.stderr.split("symbolic link")[0]


def test_the_link_swap_sequence_cannot_give_the_agent_its_own_roots(place: Path) -> None:
    """The issue's sequence on a root that grants write only after a reload: the
    reload that would make the link swappable is refused, so the swap never happens."""
    real = place / "etc" / "loom.toml"
    home = place / "home"
    home.mkdir()
    (home / "private.txt").write_text("mine\n")
    real.write_text(toml(("ws", place / "ws", "reference"), audit=place / "state" / "a.log"))
    os.symlink(real, place / "ws" / "loom.toml")
    reg = Registry(str(place / "ws" / "loom.toml"))  # reference: the agent cannot touch it
    real.write_text(toml(("ws", place / "ws", "workspace"), audit=place / "state" / "a.log"))
    with pytest.raises(ConfigError, match="symbolic link on the path"):
        reg.reload()
    ws = reg.current.root("ws")
    assert ws.permissions == ("read",)
    # What the agent would do next is refused at the first step.
    for fn in (lambda: trash.delete(ws, "loom.toml"),
               lambda: write.write_file(ws, "loom.toml", "[[roots]]\n", overwrite=True)):
        assert isinstance(refused(fn), LoomError)
    assert os.path.islink(place / "ws" / "loom.toml")
    assert "home" not in reg.current.roots


def test_an_audit_log_reached_through_a_link_in_a_writable_root_is_refused(place: Path) -> None:
    os.symlink(place / "state", place / "ws" / "logs")
    cfg = place / "etc" / "loom.toml"
    cfg.write_text(toml(("ws", place / "ws", "workspace"), audit=place / "ws" / "logs" / "a.log"))
    with pytest.raises(ConfigError, match="symbolic link on the path to the server's audit log"):
        Registry(str(cfg))


# -- a root deleted or replaced while serving ------------------------------------


@pytest.mark.parametrize("change", ["deleted", "replaced", "moved-away", "swapped-for-a-link"])
def test_a_gone_root_says_so_and_a_reload_fixes_it(place: Path, change: str) -> None:
    cfg = place / "etc" / "loom.toml"
    ws = place / "ws"
    (ws / "a.txt").write_text("A\n")
    cfg.write_text(toml(("ws", ws, "workspace"), audit=place / "state" / "a.log"))
    reg = Registry(str(cfg))
    r = reg.current.root("ws")
    (ws / "a.txt").unlink()
    if change == "moved-away":
        ws.rename(place / "elsewhere")
    else:
        ws.rmdir()
    if change == "replaced":
        ws.mkdir()
        (ws / "b.txt").write_text("B\n")
    if change == "swapped-for-a-link":
        os.symlink(place / "ref", ws)
    calls: list[Callable[[], Any]] = [
        lambda: listing.list_directory(r, "", recursive=False, max_depth=1, offset=0, limit=10,
                                       cap=10000, control=CTL),
        lambda: search_files(r, FilesOptions(pattern="*", offset=0, limit=10, cap=10000), CTL),
        lambda: read_mod.read_text_file(r, "b.txt", start=1, end=5, tail=None, cap=1000),
        lambda: write.write_file(r, "c.txt", "C"),
        lambda: deep_research.search(reg.current, "B", CTL),
    ]
    for fn in calls:
        err = refused(fn)
        assert isinstance(err, RootGone) and "root 'ws' is gone" in err.message
        assert str(place) not in err.message
    if change in ("deleted", "moved-away"):
        ws.mkdir()
        (ws / "b.txt").write_text("B\n")
    if change == "swapped-for-a-link":
        ws.unlink()
        ws.mkdir()
        (ws / "b.txt").write_text("B\n")
    reg.reload()
    r = reg.current.root("ws")
    got = listing.list_directory(r, "", recursive=False, max_depth=1, offset=0, limit=10,
                                 cap=10000, control=CTL)
    assert [e["name"] for e in got.model_dump()["entries"]] == ["b.txt"]


# -- deny on the resolved target before any type check --------------------------

DENIED_TARGETS = {
    ".env": "file",  # base
    "id_rsa": "file",  # floor
    ".git": "dir",  # floor, a folder
    "config/prod.yaml": "file",  # a `/` pattern
    "vault": "dir",  # a root-level name pattern naming a folder
}


def _deny_tree(base: Path) -> Path:
    root = base / "dt"
    root.mkdir()
    for rel, kind in DENIED_TARGETS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            p.mkdir()
            (p / "inside.txt").write_text("secret\n")
        else:
            p.write_text("secret\n")
    return root


@pytest.mark.parametrize("engine", ["openat2", "walk"])
def test_a_link_to_a_denied_target_is_denied_before_its_type_is_told(
    tmp_path: Path, engine: str
) -> None:
    from app.security import openat2
    from tests.security.conftest import make_root

    if engine == "openat2" and not openat2.available():
        pytest.skip("openat2 is not available on this kernel")
    top = _deny_tree(tmp_path)
    for i, (rel, depth) in enumerate(itertools.product(DENIED_TARGETS, (0, 1))):
        link = top / (f"sub{i}/link{i}" if depth else f"link{i}")
        link.parent.mkdir(exist_ok=True)
        os.symlink(os.path.relpath(top / rel, link.parent), link)
    root = make_root(top, engine=engine, deny=["config/prod.yaml", "vault"])
    links = sorted(str(p.relative_to(top)) for p in top.rglob("link*"))
    assert len(links) == 2 * len(DENIED_TARGETS)
    ways: dict[str, Callable[[str], Any]] = {
        "open_file": lambda p: root.open_file(p, op="read_text_file"),
        "open_dir": lambda p: root.open_dir(p, op="list_directory"),
        "open_parent (below the link)": lambda p: root.open_parent(
            f"{p}/new.txt", op="write_file", perm="write"),
        "open_parent (create under it)": lambda p: root.open_parent(
            f"{p}/d/new.txt", op="write_file", perm="write", create_parents=True),
    }
    for link, (way, fn) in itertools.product(links, ways.items()):
        err = refused(partial(fn, link))
        assert isinstance(err, DeniedName), f"{way} {link}: {err.message}"
        assert err.message.startswith("matches deny pattern"), f"{way} {link}: {err.message}"
    # The walk (open_subdir) never follows a link, so it never reaches the target at all.
    listed = listing.list_directory(root, "", recursive=True, max_depth=5, offset=0,
                                    limit=1000, cap=1 << 20, control=CTL).model_dump()
    assert not any("inside.txt" in e["path"] for e in listed["entries"])


# -- forwarded-for is never trusted ----------------------------------------------


def _audit_clients(log: Path) -> set[str]:
    return {line.rsplit(" client=", 1)[1].strip() for line in log.read_text().splitlines()}


async def _call_with_forged_peer(url: str) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"X-Forwarded-For": "6.6.6.6", "X-Real-IP": "6.6.6.6", "Forwarded": "for=6.6.6.6"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write_),
        ClientSession(read, write_) as s,
    ):
        await s.initialize()
        result = await s.call_tool("read_text_file", {"path": "doc.txt"})
        assert not result.is_error


def test_a_forged_forwarded_for_never_reaches_the_audit_log(place: Path) -> None:
    """Both the test server and the console script's own uvicorn settings."""
    import anyio

    from tests.live import live_server
    from tests.service.test_cli_http import free_port, spawn_http, wait_healthy

    log = place / "state" / "audit.log"
    cfg = place / "etc" / "loom.toml"
    cfg.write_text(toml(("ref", place / "ref", "reference"), audit=log))
    with live_server(cfg) as srv:
        anyio.run(_call_with_forged_peer, srv.url)
    clients = _audit_clients(log)
    assert clients and all(c.startswith("127.0.0.1:") for c in clients), clients

    log.unlink()
    port = free_port()
    proc = spawn_http(cfg, "--port", str(port), "--no-auth")
    try:
        wait_healthy(port, proc)
        anyio.run(_call_with_forged_peer, f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.terminate()
        proc.communicate(timeout=20)  # also closes its pipes
    clients = _audit_clients(log)
    assert clients and all(c.startswith("127.0.0.1:") for c in clients), clients


# -- the link walk that finds every link on the config's path, against realpath --


@pytest.mark.parametrize("seed", range(30))
def test_resolve_links_agrees_with_realpath_and_reports_every_link(
    tmp_path: Path, seed: int
) -> None:
    """Random folders and links (relative, absolute, chains, `..` after a link): the
    walk reaches the file realpath reaches, and each link it reports is one."""
    import random

    from app.config import resolve_links

    rnd = random.Random(seed)
    base = tmp_path / "t"
    dirs = [base]
    for i in range(6):
        d = rnd.choice(dirs) / f"d{i}"
        d.mkdir(parents=True)
        dirs.append(d)
    (rnd.choice(dirs) / "loom.toml").write_text("x")
    links: list[Path] = []
    for i in range(6):
        where = rnd.choice(dirs) / f"l{i}"
        target = rnd.choice(dirs + links)
        if rnd.random() < 0.5:
            os.symlink(os.path.relpath(target, where.parent), where)
        else:
            os.symlink(target, where)
        links.append(where)
    for _ in range(20):
        comps: list[str] = []
        here = base
        for _ in range(rnd.randint(1, 5)):
            options = [p.name for p in (here.iterdir() if here.is_dir() else [])] + [".."]
            pick = rnd.choice(options)
            comps.append(pick)
            here = here / pick
        path = str(base.joinpath(*comps))
        try:
            got, met = resolve_links(path)
        except ConfigError:
            continue  # a loop: refused, with a message
        assert got == os.path.realpath(path), path
        assert all(os.path.islink(m) for m in met)


def test_reload_config_over_http_refuses_a_config_the_agent_could_swap(place: Path) -> None:
    """The reload_config tool: refused with the reason and no host path; roots unchanged."""
    import anyio

    from tests.live import live_server

    real = place / "etc" / "loom.toml"
    real.write_text(toml(("ws", place / "ws", "reference"), audit=place / "state" / "a.log"))
    os.symlink(real, place / "ws" / "loom.toml")
    with live_server(place / "ws" / "loom.toml") as srv:
        real.write_text(toml(("ws", place / "ws", "workspace"), audit=place / "state" / "a.log"))

        async def main() -> tuple[Any, Any, Any]:
            async with srv.session() as s:
                reload = await s.call_tool("reload_config", {})
                roots = await s.call_tool("list_roots", {})
                listed = await s.call_tool("list_directory", {"path": ""})
                return reload, roots, listed

        reload, roots, listed = anyio.run(main)
    text = " ".join(getattr(c, "text", "") for c in reload.content)
    assert reload.is_error and "symbolic link on the path to the server's config file" in text
    assert str(place) not in text
    assert roots.structured_content["roots"][0]["permissions"] == ["read"]
    names = [e["name"] for e in listed.structured_content["entries"]]
    assert "loom.toml" not in names  # the link resolves to the config: denied by identity
