"""The byte budget through the tools (docs/configuration.md#budget).

A hypothesis sequence of real tool calls (reads, media, fetch, git_show, search_text's lines,
git_diff, writes, edits and their diffs, copies) on a server whose budget runs on a fake
clock: the content any tool returns and what was written never exceed burst + rate x time,
and every refusal left the disk as it was and returned no content. Then over HTTP (a live
uvicorn): the refusal's words, its audit line, `list_roots`' budget fields, a reload that
does not refill, and the config's refusals.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from mcp import Client

from app.budget import Budget, Level
from app.config import load
from app.errors import ConfigError
from app.registry import Registry
from app.server import LoomServer
from tests.fs.history.conftest import git_env
from tests.fs.readkit import png_bytes
from tests.kit import roots_toml
from tests.live import live_server, text_of

RATE, BURST = 60_000, 24_000  # 1000 bytes a second; a call reserves at most 16 KiB
PADDING = 7000  # pic.png: about 7 KiB
LIMITS = "max_output_chars = 4096\nsearch_fetch_tools = true\n"
BUDGET = f"[budget]\nbytes_per_minute = {RATE}\nburst_bytes = {BURST}\n"
TEXT = "".join(f"line {i}: {'é' * (i % 7)} some words\n" for i in range(300))
REFUSAL = re.compile(
    r"byte budget spent: [\d.]+ (bytes|KiB) over the last [\w ]+ \((the server|root '\w+'), "
    r"[\d.]+ (bytes|KiB) left\); refills at [\d.]+ (bytes|KiB) per minute; a call of this "
    r"size \([\d.]+ (bytes|KiB)\) can run in about [\w ]+; nothing was done"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def workspace(base: Path) -> Path:
    ws = base / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(TEXT)
    (ws / "pic.png").write_bytes(png_bytes() + b"\0" * PADDING)
    env = git_env(base)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(ws), *args], env=env, check=True, capture_output=True)

    git("init", "-q")
    for message, text in (("zero", TEXT.replace("some", "any")), ("one", TEXT)):
        (ws / "a.txt").write_text(text)
        git("add", "a.txt")
        git("commit", "-q", "-m", message)
    return ws


def config(base: Path, ws: Path, extra: str = LIMITS + BUDGET, **root: Any) -> Path:
    path = base / "roots.toml"
    opts = {"max_read_bytes": 16384, **root}
    path.write_text(roots_toml(("ws", ws, "workspace", opts), audit_log=base / "audit.log",
                               extra=extra))
    return path


def disk(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes()
            for p in sorted(ws.rglob("*")) if p.is_file() and ".git" not in p.parts}


def utf8(text: str | None) -> int:
    return len(text.encode("utf-8")) if text else 0


CALLS: dict[str, Any] = {
    "read": lambda n: ("read_text_file", {"path": "a.txt", "start_line": 1 + n % 200}),
    "many": lambda n: ("read_multiple_files", {"paths": ["a.txt", f"w{n % 3}.txt"]}),
    "media": lambda n: ("read_media_file", {"path": "pic.png"}),
    "fetch": lambda n: ("fetch", {"id": "ws/a.txt"}),
    "show": lambda n: ("git_show", {"commit": "HEAD", "path": "a.txt"}),
    "search": lambda n: ("search_text", {"query": "line", "context": n % 4, "offset": n % 60}),
    "diff": lambda n: ("git_diff", {"base": "HEAD~1", "target": "HEAD"} if n % 2 else {}),
    "dry": lambda n: ("edit_file", {"path": "a.txt", "dry_run": True, "edits": [
        {"old_text": f"line {n % 300}:", "new_text": f"LINE {n % 300}:"}]}),
    "write": lambda n: ("write_file", {"path": f"w{n % 3}.txt", "content": "é" * (n * 40),
                                       "overwrite": True}),
    "edit": lambda n: ("edit_file", {"path": "a.txt", "edits": [
        {"old_text": f"line {n % 300}:", "new_text": f"LINE {n % 300}:" + "x" * n}]}),
    "copy": lambda n: ("copy_file", {"source": "pic.png" if n % 2 else "a.txt",
                                     "destination": f"c{n % 3}", "overwrite": True}),
}


def passed(name: str, args: dict[str, Any], got: dict[str, Any]) -> int:
    """What an answer let through, measured from outside: content returned, bytes written."""
    if name in ("read_text_file",):
        return utf8(got["content"])
    if name == "read_multiple_files":
        return sum(utf8(r["file"]["content"]) for r in got["results"] if r.get("file"))
    if name == "read_media_file":
        return int(got["size"])
    if name == "fetch":
        return utf8(got["text"])
    if name == "git_show":
        return utf8(got["file"]["content"])
    if name == "search_text":
        return sum(utf8(m["preview"]) + sum(map(utf8, m.get("before") or []))
                   + sum(map(utf8, m.get("after") or [])) for m in got.get("matches") or [])
    if name == "git_diff":
        return sum(utf8(f.get("diff")) for f in got["files"])
    if name == "write_file":
        return utf8(args["content"])
    if name == "copy_file":
        return int(got["bytes"])
    return utf8(got.get("diff")) + (int(got["size"]) if got.get("written") else 0)  # edit_file


# Calls more often than waits, so the bucket runs dry in most sequences.
step_st = st.one_of(
    st.tuples(st.sampled_from(sorted(CALLS)), st.integers(min_value=0, max_value=300)),
    st.tuples(st.just("wait"), st.floats(min_value=0, max_value=10)),
    st.tuples(st.sampled_from(sorted(CALLS)), st.integers(min_value=0, max_value=300)),
)


async def drive(ws: Path, cfg: Path, steps: list[tuple[str, Any]]) -> int:
    clock = Clock()
    server = LoomServer(Registry(str(cfg), budget=Budget(clock)))
    through, refusals = 0, 0
    async with Client(server) as client:
        for kind, arg in steps:
            if kind == "wait":
                clock.now += arg
                continue
            name, args = CALLS[kind](arg)
            before = disk(ws)
            res = await client.call_tool(name, args)
            if res.is_error:
                text = text_of(res)
                if not text.startswith("byte budget"):
                    # the call's own refusal (a file not there yet, an edit that no longer
                    # matches): nothing was let through either
                    assert disk(ws) == before, text
                    continue
                refusals += 1
                assert REFUSAL.fullmatch(text), text
                assert res.structured_content is None and len(res.content) == 1
                assert disk(ws) == before  # not a byte written
                continue
            through += passed(name, args, res.structured_content or {})
            assert through <= BURST + RATE * clock.now / 60, (through, clock.now)
    return refusals


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step_st, min_size=1, max_size=14))
# Loops the draw may miss: a search paged on and on, diffs and dry runs over and over.
@example(steps=[("search", n) for n in range(3, 60, 4)])  # context 3, offsets 3 to 59
@example(steps=[("diff", 1)] * 12)  # HEAD~1..HEAD
@example(steps=[("dry", n) for n in range(12)] + [("wait", 5.0), ("dry", 0)])
def test_no_sequence_of_calls_gets_past_the_budget_and_a_refusal_changes_nothing(
    steps: list[tuple[str, Any]],
) -> None:
    base = Path(tempfile.mkdtemp(prefix="loom-budget-"))
    try:
        ws = workspace(base)
        refused = asyncio.run(drive(ws, config(base, ws), steps))
        event("some call refused" if refused else "no call refused")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_burst_of_reads_is_refused_then_runs_after_the_refill(tmp_path: Path) -> None:
    """The sequence the property test may not draw: enough reads to empty the bucket."""
    ws = workspace(tmp_path)
    steps: list[tuple[str, Any]] = [("fetch", 0)] * 10 + [("wait", 20.0), ("fetch", 0)]
    assert asyncio.run(drive(ws, config(tmp_path, ws), steps)) >= 1


def test_a_folder_copy_stops_between_files_when_the_budget_is_spent(tmp_path: Path) -> None:
    """Five files of 7,000 bytes against a burst of 24,000: three are copied whole, then the
    copy stops and says why; a single file larger than what is left is refused whole."""
    ws = workspace(tmp_path)
    (ws / "dir").mkdir()
    for i in range(5):
        (ws / "dir" / f"f{i}.bin").write_bytes(bytes([i]) * 7000)
    (ws / "big.bin").write_bytes(b"b" * 9000)

    async def go() -> tuple[Any, Any]:
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=Budget(Clock())))
        async with Client(server) as client:
            folder = await client.call_tool("copy_file", {"source": "dir", "destination": "out"})
            single = await client.call_tool("copy_file", {"source": "big.bin",
                                                          "destination": "big2.bin"})
            return folder, single

    folder, single = asyncio.run(go())
    got = folder.structured_content or {}
    assert not folder.is_error and got["files"] == 3 and got["bytes"] == 21000, got
    assert got["truncated"] and "byte budget spent" in got["note"], got
    copied = sorted(p.name for p in (ws / "out").iterdir())
    assert len(copied) == 3 and all((ws / "out" / n).read_bytes() == (ws / "dir" / n).read_bytes()
                                    for n in copied)
    assert single.is_error and text_of(single).startswith("byte budget spent: ")
    assert not (ws / "big2.bin").exists()


# Over HTTP: a bucket that two media reads empty, refilling at one byte a second (a text
# answer reserves 16 KiB: 4 bytes a character of at least 4096 characters).
LIVE_BUDGET = "max_output_chars = 1000\n[budget]\nbytes_per_minute = 60\nburst_bytes = 17000\n"


async def test_a_refusal_over_http_says_why_when_and_is_audited(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    cfg = config(tmp_path, ws, extra=LIVE_BUDGET, max_read_bytes=8192)
    with live_server(cfg) as srv:
        async with srv.session() as s:
            for _ in range(2):  # 14 KiB of 17
                first = await s.call_tool("read_media_file", {"path": "pic.png"})
                assert not first.is_error
            again = await s.call_tool("read_text_file", {"path": "a.txt"})
            write = await s.call_tool("write_file", {"path": "new.txt", "content": "x" * 3000})
            roots = await s.call_tool("list_roots", {})
    assert again.is_error and REFUSAL.fullmatch(text_of(again)), text_of(again)
    assert "(the server, " in text_of(again) and "refills at 60 bytes per minute" in text_of(again)
    assert write.is_error and text_of(write).startswith("byte budget spent: ")
    assert not (ws / "new.txt").exists()
    budget = (roots.structured_content or {})["budget"]
    assert set(budget) == {"bytes_per_minute", "burst_bytes", "available_bytes"}
    assert budget["bytes_per_minute"] == 60 and budget["burst_bytes"] == 17000
    assert budget["available_bytes"] < 8192
    assert "byte budget (the server's)" in text_of(roots)
    log = (tmp_path / "audit.log").read_text()
    said = r"rule=budget:\\x20byte\\x20budget\\x20spent"  # the log escapes spaces
    assert re.search(rf"DENY root=ws path=a\.txt op=read_text_file {said}", log), log
    assert re.search(rf"DENY root=ws path=new\.txt op=write_file {said}", log), log


async def test_list_roots_shows_a_roots_own_budget_and_a_reload_does_not_refill(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    own = {"budget": {"bytes_per_minute": 60, "burst_bytes": 17000}}
    cfg = tmp_path / "roots.toml"
    cfg.write_text(
        roots_toml(("ws", ws, "workspace", {"max_read_bytes": 8192}),
                   audit_log=tmp_path / "audit.log", extra="max_output_chars = 1000\n")
        + "budget = { bytes_per_minute = 60, burst_bytes = 17000 }\n"
    )
    with live_server(cfg) as srv:
        async with srv.session() as s:
            listed = await s.call_tool("list_roots", {})
            await s.call_tool("read_media_file", {"path": "pic.png"})
            reloaded = await s.call_tool("reload_config", {})
            after = await s.call_tool("list_roots", {})
    (root,) = (listed.structured_content or {})["roots"]
    assert "budget" not in (listed.structured_content or {})  # none: left out (lean)
    assert root["budget"] == {**own["budget"], "available_bytes": 17000}
    assert not reloaded.is_error
    (root,) = (after.structured_content or {})["roots"]
    assert root["budget"]["available_bytes"] <= 17000 - len(png_bytes()) - PADDING + 5


# Config refusals: a root looser than the server, a burst no call could fit in, bad values.
BAD_BUDGETS = [
    (BUDGET, {"budget": {"bytes_per_minute": RATE + 1, "burst_bytes": 20_000}},
     "root 'ws': budget.bytes_per_minute (60001) is above the server's"),
    (BUDGET, {"budget": {"bytes_per_minute": 600, "burst_bytes": BURST + 1}},
     "root 'ws': budget.burst_bytes (24001) is above the server's"),
    ("[budget]\nbytes_per_minute = 600\nburst_bytes = 16000\n", {},
     "root 'ws': the server's budget.burst_bytes (16000) is below the largest call on this "
     "root (16384 bytes"),
    ("", {"budget": {"bytes_per_minute": 600, "burst_bytes": 100}},
     "root 'ws': budget.burst_bytes (100) is below the largest call on this root (16384 bytes: "
     "its max_read_bytes)"),
    ("max_output_chars = 8192\n[budget]\nbytes_per_minute = 600\nburst_bytes = 30000\n",
     {}, "(32768 bytes: a text answer of max_output_chars, at 4 bytes a character)"),
    ("[budget]\nbytes_per_minute = 0\nburst_bytes = 16384\n", {},
     "budget.bytes_per_minute must be greater than 0"),
    ("[budget]\nburst_bytes = 16384\n", {}, "budget.bytes_per_minute is required"),
    ("[budget]\nbytes_per_minute = 1\nburst_bytes = 16384\nper_call = 1\n", {},
     "budget.per_call is not a known field"),
]


@pytest.mark.parametrize(("top", "root", "said"), BAD_BUDGETS)
def test_an_inconsistent_budget_stops_the_load(
    tmp_path: Path, top: str, root: dict[str, Any], said: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "roots.toml"
    top = top if "max_output_chars" in top else LIMITS + top
    text = roots_toml(("ws", ws, "workspace", {"max_read_bytes": 16384}),
                      audit_log=tmp_path / "audit.log", extra=top)
    if root:
        b = root["budget"]
        text += f"budget = {{ bytes_per_minute = {b['bytes_per_minute']}, " \
                f"burst_bytes = {b['burst_bytes']} }}\n"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as refused:
        load(cfg)
    assert said in refused.value.message


def test_a_reload_that_fails_leaves_the_budget_as_it_was(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    cfg = config(tmp_path, ws)
    clock = Clock()
    registry = Registry(str(cfg), budget=Budget(clock))
    registry.budget.charge("ws", 10_000)
    before = registry.budget.levels()
    cfg.write_text(cfg.read_text().replace(f"burst_bytes = {BURST}", "burst_bytes = 100"))
    with pytest.raises(ConfigError, match="below the largest call"):
        registry.reload()
    assert registry.budget.levels() == before
    cfg.write_text(cfg.read_text().replace("burst_bytes = 100", "burst_bytes = 20000"))
    registry.reload()  # a lower burst: at most it, never refilled
    assert registry.budget.levels() == Level(RATE, 20_000, BURST - 10_000)


async def test_reads_at_once_never_spend_more_than_the_burst(tmp_path: Path) -> None:
    """Reads run concurrently in worker threads: with time standing still, what a dozen at
    once return together stays within the burst, and those refused return nothing."""
    ws = workspace(tmp_path)
    server = LoomServer(Registry(str(config(tmp_path, ws)), budget=Budget(Clock())))
    async with Client(server) as client:
        answers = await asyncio.gather(
            *(client.call_tool("read_media_file", {"path": "pic.png"}) for _ in range(6)),
            *(client.call_tool("fetch", {"id": "ws/a.txt"}) for _ in range(6)),
        )
    paid = [a for a in answers if not a.is_error]
    refused = [a for a in answers if a.is_error]
    assert paid and refused
    assert all(REFUSAL.fullmatch(text_of(a)) and a.structured_content is None for a in refused)
    through = sum(int((a.structured_content or {}).get("size", 0))
                  + utf8((a.structured_content or {}).get("text")) for a in paid)
    assert through <= BURST


def test_an_edit_pays_its_new_size_not_the_roots_largest_file(tmp_path: Path) -> None:
    """With less than max_read_bytes (16 KiB) left in the bucket, a small edit runs and
    costs its new content's bytes and its diff's; an edit that cannot be paid writes nothing."""
    ws = workspace(tmp_path)
    (ws / "small.txt").write_text("hello\n")
    (ws / "big.txt").write_text("start " + "x" * 12000 + "\n")

    async def go() -> tuple[Any, int, int, Any]:
        budget = Budget(Clock())
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=budget))
        async with Client(server) as client:
            for _ in range(2):  # about 14 KiB of the 24,000 spent
                assert not (await client.call_tool("read_media_file", {"path": "pic.png"})
                            ).is_error
            left = level(budget)
            small = await client.call_tool("edit_file", {"path": "small.txt", "edits": [
                {"old_text": "hello", "new_text": "HELLO"}]})
            after = level(budget)
            big = await client.call_tool("edit_file", {"path": "big.txt", "edits": [
                {"old_text": "start", "new_text": "begin"}]})
            return small, left, after, big

    def level(budget: Budget) -> int:
        got = budget.levels()
        assert got is not None
        return got.available_bytes

    small, left, after, big = asyncio.run(go())
    assert left < 16384 and not small.is_error, text_of(small)
    diff = (small.structured_content or {})["diff"]
    assert "+HELLO" in diff and left - after == 6 + utf8(diff)  # the new content and its diff
    assert (ws / "small.txt").read_text() == "HELLO\n"
    assert big.is_error and text_of(big).startswith("byte budget spent: ")
    assert (ws / "big.txt").read_text() == "start " + "x" * 12000 + "\n"


def test_a_patch_pays_what_it_writes_and_its_diff_or_writes_nothing(tmp_path: Path) -> None:
    """A patch of two files costs both new contents and its diff; one whose second file
    (about 12 KiB) the bucket cannot pay is refused before its first write: neither changes."""
    ws = workspace(tmp_path)
    (ws / "p1.txt").write_text("one\n")
    (ws / "p2.txt").write_text("two\n")
    (ws / "big.txt").write_text("start\n")
    small = ("*** Begin Patch\n*** Update File: p1.txt\n@@\n-one\n+ONE\n"
             "*** Update File: p2.txt\n@@\n-two\n+TWO\n*** End Patch\n")
    large = ("*** Begin Patch\n*** Update File: p1.txt\n@@\n-ONE\n+1\n"
             "*** Update File: big.txt\n@@\n-start\n+begin " + "y" * 12000 + "\n*** End Patch\n")

    async def go() -> tuple[Any, int, int, Any]:
        budget = Budget(Clock())
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=budget))
        async with Client(server) as client:
            for _ in range(2):  # about 14 KiB of the 24,000 spent
                assert not (await client.call_tool("read_media_file", {"path": "pic.png"})
                            ).is_error
            left = level(budget)
            first = await client.call_tool("apply_patch", {"patch": small})
            after = level(budget)
            second = await client.call_tool("apply_patch", {"patch": large})
            return first, left, after, second

    def level(budget: Budget) -> int:
        got = budget.levels()
        assert got is not None
        return got.available_bytes

    first, left, after, second = asyncio.run(go())
    assert not first.is_error, text_of(first)
    diff = (first.structured_content or {})["diff"]
    assert left - after == 4 + 4 + utf8(diff)  # both new contents and the diff
    assert (ws / "p1.txt").read_text() == "ONE\n" and (ws / "p2.txt").read_text() == "TWO\n"
    assert second.is_error and text_of(second).startswith("byte budget spent: ")
    assert (ws / "p1.txt").read_text() == "ONE\n" and (ws / "big.txt").read_text() == "start\n"


def test_a_media_file_pays_its_size_not_the_roots_largest_file(tmp_path: Path) -> None:
    """With less than max_read_bytes (16 KiB) left, an image of about 7 KiB is returned and
    costs its size; the next one, which the bucket cannot pay, is refused whole."""
    ws = workspace(tmp_path)

    async def go() -> tuple[list[Any], list[int]]:
        budget = Budget(Clock())
        server = LoomServer(Registry(str(config(tmp_path, ws)), budget=budget))
        got, levels = [], []
        async with Client(server) as client:
            for _ in range(4):
                got.append(await client.call_tool("read_media_file", {"path": "pic.png"}))
                level = budget.levels()
                assert level is not None
                levels.append(level.available_bytes)
        return got, levels

    got, levels = asyncio.run(go())
    size = (ws / "pic.png").stat().st_size
    assert [r.is_error for r in got] == [False, False, False, True], levels
    assert levels[0] == BURST - size and levels[1] < 16384  # the third read ran on less
    assert levels[2] == BURST - 3 * size == levels[3]
    assert text_of(got[3]).startswith("byte budget spent: ")
