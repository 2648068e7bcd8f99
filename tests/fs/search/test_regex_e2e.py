"""search_text's and search_files' new arguments through the MCP SDK client, against the
real app under uvicorn: passed through, bounded at the edge, answered as structured content."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fs.readkit import small_root
from tests.live import LiveServer, call, live_server

TREE = {
    ".gitignore": "*.log\nbuild/\n",
    "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
    "src/util.py": "def helper(x):\n    return x * 2\n",
    "src/app.log": "def logged\n",
    "build/gen.py": "def generated():\n    pass\n",
    "vendor/lib.py": "def vendored():\n    pass\n",
    "README.md": "Run main() to start.\n",
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("regex-e2e")
    small_root(base, TREE)
    with live_server(base / "cfg" / "roots.toml") as s:
        yield s


async def test_regex_context_and_modes_through_the_server(srv: LiveServer) -> None:
    async with srv.session() as s:
        err, r = await call(s, "search_text", query=r"^def \w+\(", regex=True)
        assert not err and [(m["path"], m["line"]) for m in r["matches"]] == [
            ("src/app.py", 3), ("src/util.py", 1), ("vendor/lib.py", 1)]
        assert r["note"] == ("ignore files (.gitignore, .ignore) hid 1 file(s) and "
                             "1 director(ies); no_ignore=true searches them too")
        err, r = await call(s, "search_text", query="(?i)RETURN", regex=True, context=1,
                            exclude=["vendor"])
        assert not err and r["matches"] == [
            {"path": "src/app.py", "line": 4, "preview": "    return os.getcwd()",
             "before": ["def main():"], "after": []},
            {"path": "src/util.py", "line": 2, "preview": "    return x * 2",
             "before": ["def helper(x):"], "after": []},
        ]
        err, r = await call(s, "search_text", query="def", output_mode="files_with_matches",
                            no_ignore=True)
        assert not err and r["files"] == [
            "build/gen.py", "src/app.log", "src/app.py", "src/util.py", "vendor/lib.py"]
        assert "matches" not in r and r["note"] is None
        err, r = await call(s, "search_text", query="main", output_mode="count")
        assert not err and r["counts"] == [{"path": "README.md", "count": 1},
                                           {"path": "src/app.py", "count": 1}]
        err, r = await call(s, "search_files", pattern="*.py", exclude=["src/**"])
        assert not err and [m["path"] for m in r["matches"]] == ["vendor/lib.py"]
        err, r = await call(s, "search_files", pattern="*.py", no_ignore=True)
        assert not err and [m["path"] for m in r["matches"]] == [
            "build/gen.py", "src/app.py", "src/util.py", "vendor/lib.py"]


@pytest.mark.parametrize(("args", "message"), [
    ({"query": "(a)\\1", "regex": True}, "backreferences"),
    ({"query": "a(?=b)", "regex": True}, "lookahead"),
    ({"query": "x", "context": 11}, "context"),
    ({"query": "x", "output_mode": "lines"}, "output_mode"),
    ({"query": "x", "exclude": ["/abs"]}, "absolute"),
    ({"query": "x", "exclude": "notalist"}, "exclude"),
    ({"query": "x", "cursor": "not-a-cursor"}, "invalid cursor"),
    ({"query": "x", "cursor": "c" * 9000}, "cursor"),
])
async def test_bad_new_arguments_are_refused_at_the_edge(srv: LiveServer, args: dict[str, Any],
                                                         message: str) -> None:
    async with srv.session() as s:
        err, text = await call(s, "search_text", **args)
    assert err and message in text, text


async def test_the_schema_types_the_new_arguments_and_the_edge_bounds_them(
    srv: LiveServer,
) -> None:
    """Types and modes are published; ranges are not (docs/tools.md#arguments): the edge
    enforces them and the refusal names the limit."""
    async with srv.session() as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        props = tools["search_text"].input_schema["properties"]
        assert props["context"]["type"] == "integer" and "maximum" not in props["context"]
        assert props["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
        assert props["exclude"]["type"] == "array" and props["regex"]["type"] == "boolean"
        assert "no_ignore" in tools["search_files"].input_schema["properties"]
        assert props["cursor"]["description"] == "A previous next_cursor."  # one line
        assert tools["search_files"].input_schema["properties"]["cursor"] == props["cursor"]
        assert await call(s, "search_text", query="x", context=11) == (
            True, "context must be at most 10 (got 11)")
        assert await call(s, "search_text", query="x", context=-1) == (
            True, "context must be at least 0 (got -1)")
        assert await call(s, "search_text", query="x", exclude=["a"] * 65) == (
            True, "exclude must have at most 64 items (got 65)")


@pytest.mark.parametrize(("tool", "args", "count", "other"), [
    ("search_text", {"query": "def", "no_ignore": True}, 5, ("search_text", {"query": "main"})),
    ("search_files", {"pattern": "*", "no_ignore": True}, 10,
     ("search_files", {"pattern": "*.py"})),
    ("search_files", {"pattern": "*"}, 7, ("search_text", {"query": "def"})),
])
async def test_pages_by_cursor_through_the_server(
    srv: LiveServer, tool: str, args: dict[str, Any], count: int,
    other: tuple[str, dict[str, Any]],
) -> None:
    async with srv.session() as s:
        err, whole = await call(s, tool, **args)
        assert not err and whole.get("next_cursor") is None and len(whole["matches"]) == count
        got: list[Any] = []
        args = {**args, "limit": 2}
        while True:
            err, r = await call(s, tool, **args)
            assert not err and r["offset"] == len(got)
            got += r["matches"]
            if not r["has_more"]:
                break
            args["cursor"] = r["next_cursor"]
        assert got == whole["matches"]
        err, text = await call(s, other[0], **other[1], cursor=args["cursor"])
        assert err and "invalid cursor" in text  # another search's


@pytest.mark.parametrize("query, regex", [("DEF", False), (r"(?i)\bdef\b", True),
                                          ("Return X", False)])
async def test_searches_without_case_answer_alike_without_hyperscan(
    srv: LiveServer, monkeypatch: pytest.MonkeyPatch, query: str, regex: bool,
) -> None:
    # A machine with no hyperscan wheel (not x86-64 Linux): a folded literal falls back
    # to memchr and RE2; through the server it must answer what the SIMD path answers.
    from app.fs.search import regex as regex_mod

    async with srv.session() as s:
        args = dict(query=query, regex=regex, case_sensitive=False, no_ignore=True)
        err, fast = await call(s, "search_text", **args)
        monkeypatch.setattr(regex_mod, "hyperscan", None)
        err2, slow = await call(s, "search_text", **args)
    assert not err and not err2 and fast["matches"] and slow == fast
