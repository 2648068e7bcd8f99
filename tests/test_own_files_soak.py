"""A soak over HTTP: ordinary new files are never taken for the server's own.

Six sessions write, stat, read and list new files (each takes the lowest free inode
number: on ext4 and tmpfs, the one a gone file of the server's just left) while a
seventh saves the config atomically, in turn valid and invalid, and calls
`reload_config` after each save, and the audit log rotates, deleting its oldest backup.
Before the server held its files by descriptor, freed inode numbers went to the clients'
new files: calls were refused as "one of the server's own files" and listings left files
out. Bounded by rounds, not by time.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from mcp import ClientSession

from tests.kit import complete, roots_toml
from tests.live import LiveServer, live_server, text_of

CLIENTS = 6
ROUNDS = 30


def config_text(place: Path, valid: bool) -> str:
    text = roots_toml(
        ("ws", place / "ws", "workspace"), audit_log=place / "state" / "audit.log",
        extra="audit_log_max_bytes = 3000\naudit_log_backups = 1",
    )
    return text if valid else text + "not_a_setting = true\n"


def save_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


class Progress:
    def __init__(self) -> None:
        self.calls = 0
        self.done = anyio.Event()


async def client(s: ClientSession, me: int, problems: list[str], p: Progress) -> None:
    for i in range(ROUNDS):
        folder, name = f"c{me}", f"f{i}.txt"
        rel = f"{folder}/{name}"
        calls = [
            ("write_file", {"path": rel, "content": f"{me} {i}\n"}),
            ("stat_path", {"path": rel}),
            ("read_text_file", {"path": rel}),
            ("list_directory", {"path": folder}),
        ]
        for tool, args in calls:
            result = await s.call_tool(tool, args)
            p.calls += 1
            if result.is_error:
                problems.append(f"{tool} {rel}: {text_of(result)}")
            elif tool == "list_directory":
                whole = complete(tool, result.structured_content or {})
                names = [e["name"] for e in whole["entries"]]
                if name not in names:
                    problems.append(f"list_directory {folder} left out {name}: {names}")


async def reloader(s: ClientSession, cfg: Path, place: Path, p: Progress) -> int:
    """Save and reload, then let the clients make a dozen calls before the next save: the
    window in which a gone file's number could be taken by a client's new file."""
    reloads = 0
    while not p.done.is_set():
        valid = reloads % 2 == 1
        save_atomically(cfg, config_text(place, valid))
        result = await s.call_tool("reload_config", {})
        assert result.is_error != valid, text_of(result)
        reloads += 1
        seen = p.calls
        while p.calls < seen + 12 and not p.done.is_set():
            await anyio.sleep(0.005)
    return reloads


async def soak(srv: LiveServer, cfg: Path, place: Path) -> tuple[list[str], int]:
    problems: list[str] = []
    progress = Progress()
    reloads = [0]

    async def run_reloader() -> None:
        async with srv.session() as s:
            reloads[0] = await reloader(s, cfg, place, progress)

    async def run_clients() -> None:
        async def one(me: int) -> None:
            async with srv.session() as s:
                await client(s, me, problems, progress)

        async with anyio.create_task_group() as tg:
            for me in range(CLIENTS):
                tg.start_soon(one, me)
        progress.done.set()

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_reloader)
            tg.start_soon(run_clients)
    return problems, reloads[0]


def test_no_ordinary_file_is_refused_or_left_out_under_reloads_and_rotation(
    tmp_path: Path,
) -> None:
    for d in ("ws", "etc", "state"):
        (tmp_path / d).mkdir()
    cfg = tmp_path / "etc" / "loom.toml"
    cfg.write_text(config_text(tmp_path, True))
    with live_server(cfg) as srv:
        problems, reloads = anyio.run(soak, srv, cfg, tmp_path)
    assert problems == []
    assert reloads >= 4  # the config really changed under the clients, many times
    backups = [p.name for p in (tmp_path / "state").iterdir()]
    assert sorted(backups) == ["audit.log", "audit.log.1"]  # and the log rotated
