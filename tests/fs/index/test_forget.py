"""The index forgets: once the search that saw a change has answered, no byte of a removed
or newly denied file's text is left in any file of the state directory (the database,
its write-ahead log, its shared memory, the audit log), while the server runs.

Through the real tools: a live server (uvicorn on a free port) and the MCP SDK
client call `search` and `reload_config`; the test reads the state directory's
raw bytes for a word planted in one file's text (a file of two parts) and one in
another file's name. Each word is all lowercase letters and no other word of the
tree begins with its letter, so SQLite stores it whole (FTS5 writes a term as the
suffix it does not share with the term before it).
See app/fs/index/fulltext/forget.py for where deleted text hides and how each place is
emptied.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.corpus import deep_research as dr
from app.fs.control import NoControl
from app.fs.index.fulltext import fts
from app.registry import Registry
from tests.kit import roots_toml
from tests.live import LiveServer, live_server, text_of

SECRET = "zqxjvwkplanetsecret"
NAMED = "yqvjxkwnamesecret"  # a word only in a file's name
WriteConfig = Callable[..., Path]


def holding(state: Path, needle: str) -> list[str]:
    """The files under `state` whose raw bytes hold `needle` (as UTF-8)."""
    raw = needle.encode()
    hits = []
    for dirpath, _dirs, files in os.walk(state):
        for name in files:
            p = Path(dirpath, name)
            with contextlib.suppress(FileNotFoundError):
                if raw in p.read_bytes():
                    hits.append(p.relative_to(state).as_posix())
    return sorted(hits)


def plant(root: Path) -> None:
    """A root of a few hundred files (several batches and segments), one of them secret."""
    root.mkdir()
    for i in range(300):
        (root / f"note{i:03}.txt").write_text(f"budget memo {i} " + "plain words here " * 40)
    # Longer than a part (prepare.PART_CHARS): the word is in its first and last parts.
    lines = f"budget figures {SECRET} for the board\n" * 20 + "the board met again\n" * 8000
    (root / "plan.txt").write_text(lines + f"{SECRET}\n")
    (root / f"{NAMED}.txt").write_text("budget figures, by name\n")


def config(write_config: WriteConfig, tmp_path: Path, root: Path, deny: list[str]) -> Path:
    return write_config(roots_toml(
        ("main", root, "reference", {"deny": deny}),
        audit_log=tmp_path / "state" / "audit.log",
        extra="search_fetch_tools = true",
    ))


async def search_ids(srv: LiveServer, query: str) -> list[str]:
    async with srv.session() as s:
        res = await s.call_tool("search", {"query": query})
        assert not res.is_error, res.content
        return [r["id"] for r in json.loads(text_of(res))["results"]]


async def reload(srv: LiveServer) -> None:
    async with srv.session() as s:
        res = await s.call_tool("reload_config", {})
        assert not res.is_error, res.content


# Each way a file's text stops being the index's business: (deny at start, what is done).
CHANGES = {
    # A deny rule added by a reload: the index is rebuilt for the new rules.
    "deny_rule_added_on_reload": ([], "deny"),
    # The file deleted behind the server's back.
    "file_deleted": ([], "delete"),
    # The file renamed to a name the rules deny: the walk no longer reaches it.
    "file_renamed_to_a_denied_name": (["*.hidden"], "rename"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_the_state_directory_holds_no_text_of_a_file_gone_from_the_index(
    write_config: WriteConfig, tmp_path: Path, change: str
) -> None:
    root = tmp_path / "ws"
    plant(root)
    deny, action = CHANGES[change]
    cfg = config(write_config, tmp_path, root, deny)
    state = tmp_path / "state"
    with live_server(cfg) as srv:
        found = await search_ids(srv, "budget figures")
        assert {"main/plan.txt", f"main/{NAMED}.txt"} <= set(found)
        # The reader sees the words where the index keeps them.
        assert holding(state, SECRET) and holding(state, NAMED)
        gone = ["plan.txt", f"{NAMED}.txt"]
        if action == "deny":
            config(write_config, tmp_path, root, gone)
            await reload(srv)
        for name in gone if action != "deny" else []:
            if action == "delete":
                (root / name).unlink()
            else:
                os.rename(root / name, root / (name + ".hidden"))
        found = await search_ids(srv, "budget figures")
        assert not {"main/plan.txt", f"main/{NAMED}.txt"} & set(found)
        assert holding(state, SECRET) == []
        assert holding(state, NAMED) == []
        assert await search_ids(srv, "memo")  # the rest is still indexed


def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on every file on disk is older than the racy margin: a search reads again
    only what changed."""
    later = time.time_ns() + fts.RACY_NS + 1
    monkeypatch.setattr(fts, "now_ns", lambda: later)


def test_edits_that_replaced_a_quarter_of_the_text_leave_no_earlier_words(
    write_config: WriteConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit alone may leave the earlier version's words in the index's segments (a
    purge rewrites the whole index); once edits replaced a quarter of what is indexed,
    they are merged away."""
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(6):
        (root / f"f{i}.txt").write_text(f"common {SECRET if i == 0 else 'plain'} text {i}\n" * 50)
    reg = Registry(str(config(write_config, tmp_path, root, [])), audit=False)
    state = tmp_path / "state"
    clock = [time.time_ns() + fts.RACY_NS + 1]  # every file older than the racy margin
    monkeypatch.setattr(fts, "now_ns", lambda: clock[0])
    assert dr.search(reg.current, "common", NoControl())["results"]
    for i in (0, 1):  # 1/6 of the text replaced, then 2/6: due
        (root / f"f{i}.txt").write_text(f"common other text {i}\n" * 50)
        clock[0] = time.time_ns() + fts.RACY_NS + 1
        assert dr.search(reg.current, SECRET, NoControl())["results"] == []
    assert holding(state, SECRET) == []


def test_a_reader_holding_the_log_delays_the_flush_to_the_next_search(
    write_config: WriteConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another server reading the same index file keeps the log from being written back
    (the search waits FLUSH_WAIT_MS for it, then answers); the next search does it."""
    root = tmp_path / "ws"
    plant(root)
    reg = Registry(str(config(write_config, tmp_path, root, [])), audit=False)
    state = tmp_path / "state"
    settle(monkeypatch)  # the last search reads nothing again: only the flush can help
    assert dr.search(reg.current, "budget", NoControl())["results"]
    (index,) = (state / "index").glob("main-*.sqlite3")
    other = sqlite3.connect(index, isolation_level=None)
    try:
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM files").fetchone()  # a snapshot held open
        (root / "plan.txt").unlink()
        assert "main/plan.txt" not in [
            r["id"] for r in dr.search(reg.current, "budget", NoControl())["results"]
        ]
        assert holding(state, SECRET)  # the pages that held it are not written back yet
        other.execute("COMMIT")
    finally:
        other.close()
    dr.search(reg.current, "budget", NoControl())  # nothing changed: only the flush is due
    assert holding(state, SECRET) == []


def test_the_log_is_empty_after_a_search_that_wrote(
    write_config: WriteConfig, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    plant(root)
    reg = Registry(str(config(write_config, tmp_path, root, [])), audit=False)
    dr.search(reg.current, "budget", NoControl())
    (index,) = (tmp_path / "state" / "index").glob("main-*.sqlite3")
    wal = Path(f"{index}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert fts.index_at(str(index)).con is not None  # and the server still has it open
