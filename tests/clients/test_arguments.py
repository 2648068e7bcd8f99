"""Tool arguments as a model sends them: unknown ones refused, bad ones explained.

Through the real SDK client against a live server. Every call in the table
would change the disk if its misspelled argument were dropped and the rest
obeyed (a `dryrun` that writes, an `overWrite` that is ignored): the refusal
must name the argument, list the valid ones, and leave the disk as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.messages import shown
from tests.kit import roots_toml
from tests.live import LiveServer, live_server

SHA = "0" * 64


def snapshot(top: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `top`: content and mtime of files (a same-bytes rewrite shows)."""
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            rel = p.relative_to(top).as_posix()
            found[rel] = (p.read_bytes(), st.st_mtime_ns) if p.is_file() else ("dir",)
    return found


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, LiveServer]]:
    base = tmp_path_factory.mktemp("args")
    ws = base / "ws"
    (ws / "dir").mkdir(parents=True)
    (ws / "notes.txt").write_text("one\ntwo\nthree\n")
    (ws / "dir" / "a.txt").write_text("alpha\n")
    (ws / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    cfg = base / "roots.toml"
    cfg.write_text(roots_toml(("ws", ws, "workspace"), audit_log=base / "audit.log",
                              extra="search_fetch_tools = true"))
    with live_server(cfg) as srv:
        yield ws, srv


# (tool, arguments with one misspelled or unknown name, the name, the valid name it meant)
MISSPELLED: list[tuple[str, dict[str, Any], str, str | None]] = [
    # -- safety flags: obeying the rest and dropping the flag would write -------------------
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}],
                   "dryrun": True}, "dryrun", "dry_run"),
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}],
                   "dryRun": True}, "dryRun", "dry_run"),
    ("write_file", {"path": "notes.txt", "content": "new", "overWrite": True},
     "overWrite", "overwrite"),
    ("write_file", {"path": "new.txt", "content": "new", "expected_sha": SHA},
     "expected_sha", "expected_sha256"),
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}],
                   "expectedSha256": SHA}, "expectedSha256", "expected_sha256"),
    ("move_file", {"source": "notes.txt", "destination": "moved.txt", "force": True},
     "force", None),
    ("move_file", {"source": "notes.txt", "destination": "dir/a.txt", "over_write": True},
     "over_write", "overwrite"),
    ("delete", {"path": "notes.txt", "recursive": True}, "recursive", None),
    ("create_directory", {"path": "made", "parents": True}, "parents", None),
    ("edit_file", {"path": "notes.txt", "edits": [{"oldText": "one", "new_text": "1"}]},
     "oldText", "old_text"),
    # -- reads: a window asked for must not silently become another ----------------------
    ("read_text_file", {"path": "notes.txt", "startLine": 2, "endLine": 3},
     "startLine", "start_line"),
    ("read_text_file", {"path": "notes.txt", "lines": 2}, "lines", None),
    ("read_multiple_files", {"paths": ["notes.txt"], "max_chars": 10}, "max_chars", None),
    ("read_media_file", {"path": "pic.png", "mime": "image/png"}, "mime", None),
    ("stat_path", {"path": "notes.txt", "follow": False}, "follow", None),
    ("list_directory", {"path": "", "depth": 3}, "depth", "max_depth"),
    ("list_directory", {"path": "", "Recursive": True}, "Recursive", "recursive"),
    ("search_files", {"pattern": "*.txt", "exclude_dirs": ["dir"]}, "exclude_dirs", None),
    ("search_text", {"query": "one", "ignore_case": True}, "ignore_case", None),
    ("search_text", {"query": "one", "caseSensitive": False}, "caseSensitive", "case_sensitive"),
    ("list_roots", {"verbose": True}, "verbose", None),
    ("reload_config", {"path": "/etc/other.toml"}, "path", None),
    ("search", {"query": "one", "limit": 3}, "limit", None),
    ("fetch", {"id": "ws/notes.txt", "offset": 10}, "offset", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "args", "wrong", "meant"),
    MISSPELLED,
    ids=[f"{t}-{w}" for t, _, w, _ in MISSPELLED],
)
async def test_an_unknown_argument_is_refused_naming_it_and_nothing_changes(
    place: tuple[Path, LiveServer], tool: str, args: dict[str, Any], wrong: str, meant: str | None
) -> None:
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        res = await s.call_tool(tool, args)
    assert res.is_error, f"{tool} accepted {wrong!r}: {res.content}"
    text = res.content[0].text  # type: ignore[union-attr]
    assert f"unknown argument '{wrong}'" in text
    if meant is not None:
        assert f"did you mean '{meant}'?" in text
    if wrong != "oldText":  # nested: the valid names are edits[0]'s
        for valid in listed[tool].input_schema.get("properties", {}):
            assert valid in text
    assert snapshot(ws) == before


async def test_every_listed_tool_refuses_an_unknown_argument(
    place: tuple[Path, LiveServer],
) -> None:
    """Whatever tools exist now or later: the check is at the one boundary, not per tool."""
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        tools = (await s.list_tools()).tools
        covered = {t for t, *_ in MISSPELLED}
        assert covered <= {t.name for t in tools}
        for t in tools:
            res = await s.call_tool(t.name, {"no_such_argument": 1})
            assert res.is_error, t.name
            assert "unknown argument 'no_such_argument'" in res.content[0].text  # type: ignore[union-attr]
    assert snapshot(ws) == before


# (tool, arguments, the whole error text)
BAD_VALUES: list[tuple[str, dict[str, Any], str]] = [
    # -- ranges -------------------------------------------------------------------------
    ("read_text_file", {"path": "notes.txt", "start_line": 0},
     "start_line must be at least 1 (got 0)"),
    ("list_directory", {"limit": 0}, "limit must be at least 1 (got 0)"),
    ("list_directory", {"max_depth": 65, "recursive": True},
     "max_depth must be at most 64 (got 65)"),
    ("search_files", {"pattern": "*", "offset": -1}, "offset must be at least 0 (got -1)"),
    # -- types ----------------------------------------------------------------------------
    ("read_text_file", {"path": "notes.txt", "end_line": "ten"},
     "end_line must be an integer (got 'ten')"),
    ("list_directory", {"recursive": "maybe"}, "recursive must be true or false (got 'maybe')"),
    ("stat_path", {"path": 5}, "path must be a string (got 5)"),
    ("read_multiple_files", {"paths": "notes.txt"}, "paths must be a list (got 'notes.txt')"),
    ("edit_file", {"path": "notes.txt", "edits": ["one"]},
     "edits[0] must be an object (got 'one')"),
    # -- presence, sizes and forms -------------------------------------------------------------
    ("stat_path", {}, "path is required"),
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one"}]},
     "edits[0].new_text is required"),
    ("edit_file", {"path": "notes.txt", "edits": []}, "edits must have at least 1 item (got 0)"),
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "", "new_text": "x"}]},
     "edits[0].old_text must not be empty"),
    ("search_text", {"query": ""}, "query must not be empty"),
    ("list_directory", {"root": "r" * 65}, "root is too long: 65 characters, at most 64"),
    ("write_file", {"path": "n.txt", "content": "x", "expected_sha256": "abc"},
     "expected_sha256 must be the file's sha256 or its first 16 or more hex digits (got 'abc')"),
    # A prefix shorter than the short form a result shows is ambiguous: refused, not matched.
    ("write_file", {"path": "n.txt", "content": "x", "expected_sha256": "0" * 15},
     "expected_sha256 must be the file's sha256 or its first 16 or more hex digits "
     f"(got '{'0' * 15}')"),
    ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "a", "new_text": "b"}],
                   "expected_sha256": "g" * 16},
     "expected_sha256 must be the file's sha256 or its first 16 or more hex digits "
     f"(got '{'g' * 16}')"),
    # -- several at once: each named, in one line ---------------------------------------------
    ("read_text_file", {"path": "notes.txt", "start_line": 0, "end_line": 0},
     "start_line must be at least 1 (got 0); end_line must be at least 1 (got 0)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tool", "args", "expected"), BAD_VALUES, ids=[e for _, _, e in BAD_VALUES]
)
async def test_a_bad_value_gets_a_short_error_naming_the_parameter(
    place: tuple[Path, LiveServer], tool: str, args: dict[str, Any], expected: str
) -> None:
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        res = await s.call_tool(tool, args)
    assert res.is_error
    text = res.content[0].text  # type: ignore[union-attr]
    assert text == expected
    assert snapshot(ws) == before


async def test_argument_errors_carry_no_library_wording(place: tuple[Path, LiveServer]) -> None:
    _, srv = place
    async with srv.session() as s:
        for tool, args, _ in BAD_VALUES:
            text = (await s.call_tool(tool, args)).content[0].text  # type: ignore[union-attr]
            for library in ("validation error", "Input should", "pydantic", "http", "type=",
                            "Arguments", "Error executing tool"):
                assert library not in text, (tool, text)
            assert len(text) < 200, text


async def test_max_depth_alone_lists_recursively(place: tuple[Path, LiveServer]) -> None:
    """A depth asked for is a recursive listing, never one level silently."""
    _, srv = place
    async with srv.session() as s:
        one = (await s.call_tool("list_directory", {})).structured_content
        deep = (await s.call_tool("list_directory", {"max_depth": 2})).structured_content
        level = (await s.call_tool("list_directory", {"max_depth": 1})).structured_content
        both = (await s.call_tool("list_directory", {"recursive": True})).structured_content
    assert one is not None and deep is not None and level is not None and both is not None
    assert "dir/a.txt" not in [e["path"] for e in one["entries"]]
    assert "dir/a.txt" in [e["path"] for e in deep["entries"]]
    assert deep["entries"] == both["entries"]  # recursive's default depth is 2 too
    assert level["entries"] == one["entries"]


async def test_an_outlandish_argument_name_gets_a_short_one_line_refusal(
    place: tuple[Path, LiveServer],
) -> None:
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        for name in ("x" * 100_000, "dry_run\n[ok: written]", "\u202edry_run", ""):
            res = await s.call_tool("write_file", {"path": "n.txt", "content": "x", name: True})
            assert res.is_error
            text = res.content[0].text  # type: ignore[union-attr]
            assert text.startswith("unknown argument '") and "\n" not in text
            assert len(text) < 200
    assert snapshot(ws) == before


# (a tool name a model sends, the tool it meant; None: no guess). The same guesses as an
# argument's, and the reference filesystem server's names a model may have learned.
MISNAMED_TOOLS: list[tuple[str, str | None]] = [
    ("read_txt_file", "read_text_file"),
    ("readTextFile", "read_text_file"),
    ("list-directory", "list_directory"),
    ("search_file", "search_files"),
    ("read_file", "read_text_file"),
    ("get_file_info", "stat_path"),
    ("list_allowed_directories", "list_roots"),
    ("directory_tree", "list_directory"),
    ("frobnicate", None),
    ("x" * 100_000, None),
    ("read_text_file\n[ok]", "read_text_file"),  # shown escaped, on one line
]


@pytest.mark.parametrize(("given", "meant"), MISNAMED_TOOLS,
                         ids=[g[:20] for g, _ in MISNAMED_TOOLS])
async def test_a_misnamed_tool_gets_what_it_probably_meant(
    place: tuple[Path, LiveServer], given: str, meant: str | None
) -> None:
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        tools = [t.name for t in (await s.list_tools()).tools]
        res = await s.call_tool(given, {"path": "notes.txt"})
    assert res.is_error
    text = res.content[0].text  # type: ignore[union-attr]
    hint = f" (did you mean '{meant}'?)" if meant else ""
    assert text == f"unknown tool {shown(given)}{hint}; the tools are: {', '.join(tools)}"
    assert "\n" not in text and len(text) < 600
    assert snapshot(ws) == before


async def test_a_2026_client_gets_the_same_refusal(place: tuple[Path, LiveServer]) -> None:
    """The 2026-07-28 path (stateless, `Client(url)`) goes through the same boundary."""
    from mcp import Client

    ws, srv = place
    before = snapshot(ws)
    async with Client(srv.url) as c:
        res = await c.call_tool(
            "edit_file",
            {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}], "dryrun": True},
        )
    assert res.is_error
    assert res.content[0].text.startswith("unknown argument 'dryrun' (did you mean 'dry_run'?)")  # type: ignore[union-attr]
    assert snapshot(ws) == before


async def test_null_for_an_optional_parameter_means_its_default(
    place: tuple[Path, LiveServer],
) -> None:
    """What clients send for a parameter the model left unset; a required one stays refused."""
    ws, srv = place
    before = snapshot(ws)
    async with srv.session() as s:
        plain = await s.call_tool("list_directory", {})
        nulls = await s.call_tool("list_directory", {
            "root": None, "path": None, "recursive": None, "max_depth": None, "offset": None,
            "limit": None})
        assert not nulls.is_error, nulls.content
        assert nulls.structured_content == plain.structured_content
        dry = await s.call_tool("edit_file", {
            "path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}],
            "dry_run": True, "expected_sha256": None, "root": None})
        assert not dry.is_error and dry.structured_content["written"] is False
        missing = await s.call_tool("stat_path", {"path": None})
        assert missing.is_error
        assert missing.content[0].text == "path must be a string (got null)"  # type: ignore[union-attr]
    assert snapshot(ws) == before
