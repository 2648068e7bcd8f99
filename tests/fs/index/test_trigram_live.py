"""The trigram index through the real server: `search_index = true`, a live uvicorn and the
MCP SDK client. A write through the server is found by the next call, and so is one through
a hard link outside the root; a deny rule added by
a reload leaves the file out of the answer and out of the index's rows. A server that stops
stops its build, which the next one resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from app.corpus import trigram as corpus_trigram
from app.fs.index import access
from app.fs.index.trigrams import trigram, trigram_build
from app.fs.index.trigrams.trigram_build import Build
from app.fs.index.trigrams.trigram_text import FileText
from app.registry import Registry
from tests.kit import roots_toml
from tests.live import INIT_REQUEST, LiveServer, live_server

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


def config(write_config: Any, tmp_path: Path, root: Path, deny: list[str]) -> Path:
    return write_config(roots_toml(
        ("main", root, "workspace", {"deny": deny}),
        audit_log=tmp_path / "state" / "audit.log",
        extra="search_index = true",
    ))


async def found(srv: LiveServer, query: str) -> set[str]:
    async with srv.session() as s:
        res = await s.call_tool("search_text", {"query": query, "root": "main"})
        assert not res.is_error, res.content
        assert res.structured_content is not None
        return {m["path"] for m in res.structured_content["matches"]}


async def call(srv: LiveServer, tool: str, args: dict[str, Any]) -> None:
    async with srv.session() as s:
        res = await s.call_tool(tool, args)
        assert not res.is_error, res.content


def settle() -> dict[str, int]:
    """Every build under way finished; the rows of the (one) index: path -> id."""
    rows: dict[str, int] = {}
    for path, keeper in list(corpus_trigram._keepers.items()):
        state = keeper.wait()
        assert state.error is None, state.error
        con = apsw.Connection(path)
        rows.update({p: i for p, i in con.execute("SELECT path, id FROM files")})
        con.close()
    return rows


async def test_writes_through_the_server_and_deny_rules_reach_the_indexed_search(
    write_config: Any, tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("needle_one = 1\n")
    (root / "secret.txt").write_text("needle_one in a secret\n")
    (root / "other.txt").write_text("nothing here\n")
    cfg = config(write_config, tmp_path, root, [])
    corpus_trigram._keepers.clear()
    with live_server(cfg) as srv:
        assert await found(srv, "needle_one") == {"src/a.py", "secret.txt"}
        assert {"src/a.py", "secret.txt", "other.txt"} <= settle().keys()
        await call(srv, "write_file", {"root": "main", "path": "new.txt",
                                       "content": "needle_one written\n"})
        assert await found(srv, "needle_one") == {"src/a.py", "secret.txt", "new.txt"}
        config(write_config, tmp_path, root, ["secret.txt"])
        await call(srv, "reload_config", {})
        assert await found(srv, "needle_one") == {"src/a.py", "new.txt"}
        rows = settle()
        assert "secret.txt" not in rows and {"src/a.py", "new.txt"} <= rows.keys()
        assert await found(srv, "needle_one") == {"src/a.py", "new.txt"}
    for keeper in corpus_trigram._keepers.values():
        keeper.stop()


async def test_a_file_written_through_a_hard_link_outside_the_root_is_found_by_the_next_call(
    write_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel reports the write to the outside name's folder only: the index, trusted
    without a walk, looks at the files the build found linked (docs/configuration.md)."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    for i in range(8):
        (root / f"f{i}.txt").write_text(f"hay {i}\n")
    (root / "src" / "a.py").write_text("x = 1\n")
    os.link(root / "src" / "a.py", outside / "a.py")
    # Old enough to trust once indexed, the dirty window cut to the clock's (no map here):
    # else the file, stored stale, is read by every search for its own sake.
    monkeypatch.setattr(trigram_build, "RACY_WINDOW_NS", access.RACY_NS)
    time.sleep(access.RACY_NS / 1e9 + 0.1)
    cfg = config(write_config, tmp_path, root, [])
    corpus_trigram._keepers.clear()
    with live_server(cfg) as srv:
        assert await found(srv, "needle_two") == set()
        settle()
        (keeper,) = corpus_trigram._keepers.values()
        assert keeper.idx.trusted_watch() is not None and keeper.idx.linked == {"src/a.py"}
        with open(outside / "a.py", "a") as f:
            f.write("needle_two = 2\n")
        assert await found(srv, "needle_two") == {"src/a.py"}
    for keeper in corpus_trigram._keepers.values():
        keeper.stop()


async def test_a_server_stopping_stops_its_build_which_the_next_resumes(
    write_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build that would run for 24 s more (each of 120 files slowed by 0.2 s, each its own
    batch) is stopped by the server's shutdown between two files: no build thread is left,
    the index file is whole, and a later build reads only the files not committed."""
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(120):
        (root / f"f{i:03}.txt").write_text(f"needle {i}\n")
    cfg = config(write_config, tmp_path, root, [])
    real = trigram_build.FileText

    def slow(fd: int, limit: int) -> FileText:
        time.sleep(0.2)
        return real(fd, limit)

    monkeypatch.setattr(trigram_build, "FileText", slow)
    monkeypatch.setattr(trigram_build, "COMMIT_BYTES", 0)
    monkeypatch.setattr(trigram_build, "RACY_WINDOW_NS", 0)  # trusted once read
    corpus_trigram._keepers.clear()
    srv = LiveServer(cfg).start()
    try:
        assert await found(srv, "needle 7\n") == {"f007.txt"}  # a scan; a build starts
        [keeper] = corpus_trigram._keepers.values()
        for _ in range(300):  # until a few batches are committed
            if len(keeper.idx.view) >= 3:
                break
            time.sleep(0.05)
    finally:
        srv.stop()
    assert keeper.thread is not None and not keeper.thread.is_alive()
    assert corpus_trigram._keepers == {}
    keeper.kick(srv.registry.current.roots["main"], "any")  # closed: starts nothing
    assert not keeper.thread.is_alive()
    con = apsw.Connection(keeper.idx.path)
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    kept = int(con.execute("SELECT count(*) FROM files").fetchall()[0][0] or 0)
    con.close()
    assert 3 <= kept < 120
    monkeypatch.setattr(trigram_build, "FileText", real)
    snap = srv.registry.current
    main = snap.roots["main"]
    state = Build(trigram.TrigramIndex(keeper.idx.path), main,
                  corpus_trigram.identity(snap, main), threading.Event()).run()
    assert state.complete and state.indexed == 120 - kept


def test_stdin_closing_stops_the_build_and_closes_the_index(
    write_config: Any, tmp_path: Path,
) -> None:
    """The console script on stdio, a build under way on 100 MiB of text: stdin closes, the
    process stops the build between two files and closes the index (its log checkpointed
    and gone: a build killed with the process would leave it), and the next build reads
    only the files the stopped one had not committed."""
    root = tmp_path / "ws"
    root.mkdir()
    line = "word " * 50 + "\n"
    for i in range(400):
        (root / f"f{i:03}.txt").write_text(f"needle {i}\n" + line * (256 * 1024 // len(line)))
    cfg = config(write_config, tmp_path, root, [])
    snap = Registry(str(cfg)).current
    main = snap.roots["main"]
    path = corpus_trigram.index_path(snap, main)
    calls = [INIT_REQUEST, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search_text", "arguments": {"query": "needle 7"}}}]
    proc = subprocess.Popen([EXE, "--config", str(cfg)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        proc.stdin.write("".join(json.dumps(c) + "\n" for c in calls))
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
        matches = answers[1]["result"]["structuredContent"]["matches"]
        assert "f007.txt" in {m["path"] for m in matches}
        for _ in range(600):  # until the build has committed a batch
            got = trigram.summary(path)
            if got is not None and got.files:
                break
            time.sleep(0.05)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        proc.stdout.close()
    assert not os.path.exists(path + "-wal")
    got = trigram.summary(path)
    assert got is not None and 0 < got.files < 400 and not got.complete
    con = apsw.Connection(path)
    pending, young = (len(con.execute(f"SELECT id FROM files WHERE {w}").fetchall())
                      for w in ("size = -1", f"mtime = {access.STALE}"))
    con.close()
    assert pending == 0  # stopped cleanly: every row's trigrams committed in its shard
    state = Build(trigram.TrigramIndex(path), main, corpus_trigram.identity(snap, main),
                  threading.Event()).run()
    # Read again: the files it had not reached, and those too young to trust when it did.
    assert state.complete and state.indexed == 400 - got.files + young
