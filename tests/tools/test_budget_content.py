"""The byte budget counts every byte of file content a call returns (docs/configuration.md#budget).

A runaway loop per tool, on a fake clock: search_text's lines (with and without context)
paged by cursor, git_diff of the work tree and of two commits, git_show of a file, edit_file's
diff (dry run and written), fetch. What the answers hold never exceeds burst + rate x time;
a refused call returns nothing, changes nothing and is audited; names, sizes and counts stay
free on an empty bucket. Then the same loop over HTTP (a live uvicorn).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from app.budget import Budget
from app.registry import Registry
from app.server import LoomServer
from tests.fs.history.conftest import git_env
from tests.kit import roots_toml
from tests.live import live_server, text_of
from tests.tools.test_budget_tools import REFUSAL, Clock, disk

RATE, BURST = 60_000, 24_000  # 1000 bytes a second; a text answer reserves 16 KiB
LIMITS = "max_output_chars = 4096\nsearch_fetch_tools = true\n"
BUDGET = f"[budget]\nbytes_per_minute = {RATE}\nburst_bytes = {BURST}\n"
BLOCK_A = "".join(f"alpha {i:03}: {'é' * (i % 5)} the quick brown fox\n" for i in range(40))
BLOCK_B = BLOCK_A.replace("alpha", "omega")
CALLS = 30


def version(n: int) -> str:
    return "".join(f"line {i}: version {n} {'ü' * (i % 4)} words words\n" for i in range(120))


def workspace(base: Path) -> Path:
    """Eight files in two commits, then all eight changed in the work tree."""
    ws = base / "ws"
    ws.mkdir()
    env = git_env(base)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(ws), *args], env=env, check=True, capture_output=True)

    git("init", "-q")
    for n in range(3):
        for f in range(8):
            (ws / f"f{f}.txt").write_text(version(n + f))
        if n < 2:
            git("add", "-A")
            git("commit", "-q", "-m", f"version {n}")
    (ws / "block.txt").write_text(BLOCK_A)
    return ws


def config(base: Path, ws: Path, extra: str = LIMITS + BUDGET) -> Path:
    path = base / "roots.toml"
    path.write_text(roots_toml(("ws", ws, "workspace", {"max_read_bytes": 16384}),
                               audit_log=base / "audit.log", extra=extra))
    return path


def utf8(text: str | None) -> int:
    return len(text.encode("utf-8")) if text else 0


def content_of(name: str, args: dict[str, Any], got: dict[str, Any]) -> int:
    """The bytes of file content an answer holds (and, for an edit, wrote), from outside."""
    if name == "search_text":
        return sum(utf8(m["preview"]) + sum(map(utf8, m.get("before") or []))
                   + sum(map(utf8, m.get("after") or [])) for m in got.get("matches") or [])
    if name == "git_diff":
        return sum(utf8(f.get("diff")) for f in got["files"])
    if name == "git_show":
        return utf8((got.get("file") or {}).get("content"))
    if name == "fetch":
        return utf8(got["text"])
    assert name == "edit_file"
    return utf8(got.get("diff")) + (int(got["size"]) if got.get("written") else 0)


def search(context: int) -> Any:
    def call(n: int, last: dict[str, Any], ws: Path) -> tuple[str, dict[str, Any]]:
        args = {"query": "line", "context": context, "cursor": last.get("next_cursor") or ""}
        return "search_text", args
    return call


def diff(**rev: str) -> Any:
    def call(n: int, last: dict[str, Any], ws: Path) -> tuple[str, dict[str, Any]]:
        args: dict[str, Any] = {**rev}
        if last.get("next_cursor"):
            args["cursor"] = last["next_cursor"]
        return "git_diff", args
    return call


def edit(dry_run: bool) -> Any:
    def call(n: int, last: dict[str, Any], ws: Path) -> tuple[str, dict[str, Any]]:
        now = (ws / "block.txt").read_text()
        old, new = (BLOCK_A, BLOCK_B) if now == BLOCK_A else (BLOCK_B, BLOCK_A)
        return "edit_file", {"path": "block.txt", "dry_run": dry_run,
                             "edits": [{"old_text": old, "new_text": new}]}
    return call


LOOPS = {
    "search_text": search(0),
    "search_text context=3": search(3),
    "git_diff work tree": diff(),
    "git_diff HEAD~1..HEAD": diff(base="HEAD~1", target="HEAD"),
    "git_show a commit's file": lambda n, last, ws: ("git_show", {"commit": "HEAD",
                                                              "path": f"f{n % 8}.txt"}),
    "git_show a file at a commit": lambda n, last, ws: ("git_show", {"commit": "HEAD~1",
                                                                 "path": f"f{n % 8}.txt"}),
    "edit_file dry run": edit(True),
    "edit_file": edit(False),
    "fetch": lambda n, last, ws: ("fetch", {"id": f"ws/f{n % 8}.txt"}),
}


async def runaway(ws: Path, cfg: Path, loop: Any, tick: float) -> tuple[int, int, float]:
    """`CALLS` calls of one loop, `tick` seconds apart: the bytes let through, the refusals,
    the time elapsed. Every answer keeps the total within burst + rate x time."""
    clock = Clock()
    server = LoomServer(Registry(str(cfg), budget=Budget(clock)))
    through, refused = 0, 0
    last: dict[str, Any] = {}
    async with Client(server) as client:
        for n in range(CALLS):
            name, args = loop(n, last, ws)
            before = disk(ws)
            res = await client.call_tool(name, args)
            if res.is_error:
                text = text_of(res)
                assert REFUSAL.fullmatch(text), text
                assert res.structured_content is None and len(res.content) == 1
                assert disk(ws) == before
                refused += 1
            else:
                last = res.structured_content or {}
                through += content_of(name, args, last)
                if not last.get("next_cursor"):
                    last = {}  # from the start again
            assert through <= BURST + RATE * clock.now / 60, (n, through, clock.now)
            clock.now += tick
    return through, refused, clock.now


@pytest.mark.parametrize("tick", [0.0, 2.0], ids=["time stands still", "2 s apart"])
@pytest.mark.parametrize("kind", sorted(LOOPS))
def test_a_runaway_loop_gets_no_more_content_than_the_bucket_allows(
    tmp_path: Path, kind: str, tick: float
) -> None:
    ws = workspace(tmp_path)
    cfg = config(tmp_path, ws)
    through, refused, elapsed = asyncio.run(runaway(ws, cfg, LOOPS[kind], tick))
    allowed = BURST + RATE * elapsed / 60
    assert through <= allowed
    # The loop asks for more than the bucket holds: it is held, and runs again as it refills.
    if tick == 0.0:
        assert refused, (through, allowed)
    assert through > BURST / 4, through  # and it ran: some content came through
    if refused:
        log = (tmp_path / "audit.log").read_text()
        name = LOOPS[kind](0, {}, ws)[0]
        assert re.search(rf"DENY root=ws path=\S* op={name} rule=budget", log), log


def test_an_edit_whose_diff_the_bucket_cannot_pay_is_written_and_says_so(
    tmp_path: Path,
) -> None:
    """An edit pays its new content before it is written; the diff it answers is paid once
    made. When the bucket holds the first and not the second, the edit is written and its
    answer holds no diff (not a byte of content unpaid), and says why."""
    ws = workspace(tmp_path)

    async def go() -> tuple[Any, int]:
        budget = Budget(Clock())
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=budget))
        async with Client(server) as client:
            budget.charge("ws", BURST - len(BLOCK_B.encode()) - 100)
            res = await client.call_tool("edit_file", {"path": "block.txt", "edits": [
                {"old_text": BLOCK_A, "new_text": BLOCK_B}]})
        level = budget.levels()
        assert level is not None
        return res, level.available_bytes

    res, left = asyncio.run(go())
    got = res.structured_content or {}
    assert not res.is_error and got["written"], text_of(res)
    assert (ws / "block.txt").read_text() == BLOCK_B
    assert not got.get("diff") and got["diff_truncated"], got
    assert "the diff was left out: byte budget spent" in got["note"], got
    assert "the diff was left out: byte budget spent" in text_of(res)
    assert "omega" not in text_of(res) and "nothing was done" not in text_of(res)
    assert left == 100


FREE: list[tuple[str, dict[str, Any]]] = [
    ("search_text", {"query": "line", "output_mode": "files_with_matches"}),
    ("search_text", {"query": "line", "output_mode": "count"}),
    ("search_files", {"pattern": "*.txt"}),
    ("list_directory", {"recursive": True}),
    ("stat_path", {"path": "f1.txt"}),
    ("git_log", {}),
    ("git_show", {"commit": "HEAD"}),
    ("search", {"query": "version words"}),
    ("list_roots", {}),
]


@pytest.mark.parametrize(("name", "args"), FREE, ids=[f"{n} {sorted(a)}" for n, a in FREE])
def test_names_sizes_and_counts_are_free_on_an_empty_bucket(
    tmp_path: Path, name: str, args: dict[str, Any]
) -> None:
    ws = workspace(tmp_path)

    async def go() -> Any:
        budget = Budget(Clock())
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=budget))
        async with Client(server) as client:
            budget.charge("ws", BURST)
            return await client.call_tool(name, args)

    res = asyncio.run(go())
    assert not res.is_error, text_of(res)


# Over HTTP: a burst that one search page and a little more empties, refilling at one byte
# a minute (so the bound holds for an hour of test without reading a clock).
LIVE = "max_output_chars = 4096\n[budget]\nbytes_per_minute = 1\nburst_bytes = 20000\n"


async def test_a_search_paged_over_http_is_held_to_the_burst_and_refused_in_words(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    cfg = config(tmp_path, ws, extra=LIVE)
    through, refusals = 0, []
    with live_server(cfg) as srv:
        async with srv.session() as s:
            cursor = ""
            for _ in range(12):
                res = await s.call_tool("search_text", {"query": "line", "context": 2,
                                                        "cursor": cursor})
                if res.is_error:
                    refusals.append(text_of(res))
                    assert res.structured_content is None
                    continue
                got = res.structured_content or {}
                through += content_of("search_text", {}, got)
                cursor = got.get("next_cursor") or ""
            wt = await s.call_tool("git_diff", {})
            roots = await s.call_tool("list_roots", {})
    assert 0 < through <= 20_000 + 60, through
    assert refusals and all(REFUSAL.fullmatch(t) for t in refusals), refusals
    assert "(the server, " in refusals[0] and "refills at 1 bytes per minute" in refusals[0]
    assert wt.is_error and REFUSAL.fullmatch(text_of(wt)), text_of(wt)
    assert "a byte budget counts file content returned" in text_of(roots), text_of(roots)
    log = (tmp_path / "audit.log").read_text()
    said = r"rule=budget:\\x20byte\\x20budget\\x20spent"
    assert re.search(rf"DENY root=ws path=\S* op=search_text {said}", log), log
    assert re.search(rf"DENY root=ws path=\S* op=git_diff {said}", log), log
