"""`outline` and `read_text_file(symbol=...)` through the MCP SDK client, on real files.

In process (`Client(LoomServer)`) for the contract's cases; once over Streamable HTTP
against the live app. A folder is walked as every walk: denied names and ignored files are
not outlined, links not followed, pages by `limit` files add up to the whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from app.registry import Registry
from app.server import LoomServer
from tests.kit import TomlValue, complete, config_file, roots_toml
from tests.live import call, live_server, text_of

CLASS = '''import os


class Store:
    """Keeps things."""

    def get(self, key):
        return key

    # Sets one.
    @staticmethod
    def put(key, value):
        pass


def get():
    return None
'''


@pytest.fixture
def code_tree(tmp_path: Path) -> Path:
    top = tmp_path / "top"
    (top / "pkg" / "sub").mkdir(parents=True)
    (top / "store.py").write_text(CLASS)
    (top / "twice.py").write_text("def f():\n    pass\n\n\ndef f():\n    pass\n")
    (top / "pkg" / "a.js").write_text("function a() {}\nclass B { m() {} }\n")
    (top / "pkg" / "sub" / "c.go").write_text("package sub\n\nfunc C() {}\n")
    (top / "pkg" / "notes.txt").write_text("not code\n")
    (top / "pkg" / "secret.py").write_text("def leaked(): pass\n")
    (top / "pkg" / "built.py").write_text("def generated(): pass\n")
    (top / ".gitignore").write_text("built.py\n")
    (top / "bin.py").write_bytes(b"def f():\0\n")
    (top / "README.md").write_text("# Title\n\n## Part\n")
    (top / "big.py").write_text("x = 1\n" * 4000)
    (top / "outside").symlink_to(tmp_path)
    (tmp_path / "elsewhere.py").write_text("def outside(): pass\n")
    return top


@pytest.fixture
def cfg(tmp_path: Path, code_tree: Path) -> Path:
    opts: dict[str, TomlValue] = {"deny": ["secret.py"], "max_read_bytes": 16_000}
    return config_file(tmp_path, roots_toml(("r", code_tree, "reference", opts), audit_log=None))


async def tool(cfg: Path, name: str, **args: Any) -> tuple[bool, Any, str]:
    async with Client(LoomServer(Registry(str(cfg)))) as client:
        res = await client.call_tool(name, args)
    text = text_of(res)
    if res.is_error:
        return True, text, text
    return False, complete(name, res.structured_content), text


async def test_a_files_outline_has_each_symbol_with_its_lines_and_children(cfg: Path) -> None:
    err, out, text = await tool(cfg, "outline", path="store.py")
    assert not err and out["language"] == "python"
    top = [(s["name"], s["kind"], s["start_line"], s["end_line"]) for s in out["symbols"]]
    assert top == [("Store", "class", 4, 13), ("get", "function", 16, 17)]
    assert [(c["name"], c["start_line"]) for c in out["symbols"][0]["children"]] == [
        ("get", 7), ("put", 10)]
    assert "4-13 class Store:\n  7-8 def get(self, key):\n  10-13 def put(key, value):" in text


async def test_depth_one_leaves_out_the_children(cfg: Path) -> None:
    _, out, _ = await tool(cfg, "outline", path="store.py", depth=1)
    assert all(not s["children"] for s in out["symbols"])


@pytest.mark.parametrize(("path", "refusal"), [
    ("bin.py", "binary"),
    ("big.py", "an outline parses files of at most 16000 bytes"),
    ("pkg/secret.py", "deny pattern"),
    ("outside/elsewhere.py", "escapes the root"),
])
async def test_a_file_a_read_refuses_is_refused(cfg: Path, path: str, refusal: str) -> None:
    err, text, _ = await tool(cfg, "outline", path=path)
    assert err and refusal in text.lower(), text


async def test_a_file_in_no_known_language_answers_null_and_a_note(cfg: Path) -> None:
    err, out, _ = await tool(cfg, "outline", path="pkg/notes.txt")
    assert not err and out["language"] is None and out["symbols"] == [] and out["note"]


async def test_a_folders_outline_is_walked_as_every_walk(cfg: Path) -> None:
    err, out, text = await tool(cfg, "outline", path="")
    assert not err, out
    paths = [f["path"] for f in out["files"]]
    # breadth-first, names sorted; no denied, ignored, unknown-language or linked file
    assert paths == ["README.md", "big.py", "bin.py", "store.py", "twice.py", "pkg/a.js",
                     "pkg/sub/c.go"]
    by = {f["path"]: f for f in out["files"]}
    assert [s["name"] for s in by["pkg/a.js"]["symbols"]] == ["a", "B"]
    assert by["pkg/a.js"]["symbols"][1]["children"] == []  # top-level symbols only
    assert "binary" in by["bin.py"]["note"] and "16000" in by["big.py"]["note"]
    assert "pkg/a.js (javascript)\n  1-1 function a() {}" in text


async def test_folder_pages_by_limit_add_up_to_the_whole(cfg: Path) -> None:
    _, whole, _ = await tool(cfg, "outline", path="")
    seen: list[str] = []
    cursor = ""
    for _ in range(10):
        err, page, _ = await tool(cfg, "outline", path="", limit=2, cursor=cursor)
        assert not err, page
        seen += [f["path"] for f in page["files"]]
        if not page["has_more"]:
            break
        assert page["next_cursor"] and "continue with next_cursor" in page["note"]
        cursor = page["next_cursor"]
    assert seen == [f["path"] for f in whole["files"]]


async def test_a_cursor_of_another_call_is_refused(cfg: Path) -> None:
    _, page, _ = await tool(cfg, "outline", path="", limit=1)
    err, text, _ = await tool(cfg, "outline", path="pkg", cursor=page["next_cursor"])
    assert err and "another outline call" in text


async def test_read_symbol_answers_exactly_its_lines_with_decorators_and_comments(
    cfg: Path,
) -> None:
    err, out, _ = await tool(cfg, "read_text_file", path="store.py", symbol="Store.put")
    assert not err, out
    assert (out["start_line"], out["end_line"], out["has_more"]) == (10, 13, False)
    assert out["content"].splitlines()[0] == "10 |     # Sets one."
    assert out["content"].splitlines()[-1] == "13 |         pass"
    assert "method Store.put, lines 10-13" in out["note"]


async def test_read_symbol_pages_inside_the_symbol(cfg: Path) -> None:
    _, first, _ = await tool(cfg, "read_text_file", path="store.py", symbol="Store",
                             end_line=6)
    assert (first["end_line"], first["has_more"], first["next_start_line"]) == (6, True, 7)
    _, rest, _ = await tool(cfg, "read_text_file", path="store.py", symbol="Store",
                            start_line=7)
    assert (rest["start_line"], rest["end_line"], rest["has_more"]) == (7, 13, False)


@pytest.mark.parametrize(("symbol", "said"), [
    ("f", "symbol 'f' is ambiguous in 'twice.py': function f (lines 1-2), "
          "function f (lines 5-6)"),
    ("Store.nope", "symbol 'Store.nope' not found in 'twice.py'; candidates: function f "
                   "(lines 1-2), function f (lines 5-6)"),
])
async def test_an_ambiguous_or_missing_symbol_is_refused_with_the_candidates(
    cfg: Path, symbol: str, said: str
) -> None:
    err, text, _ = await tool(cfg, "read_text_file", path="twice.py", symbol=symbol)
    assert err and said in text, text


@pytest.mark.parametrize(("symbol", "lines"), [
    ("get", (16, 17)),  # the dotted name as outline gives it: the top-level one
    ("Store.get", (7, 8)),
    ("put", (10, 13)),  # a last part alone names the one symbol that ends so
])
async def test_a_symbol_is_found_by_its_dotted_name(
    cfg: Path, symbol: str, lines: tuple[int, int]
) -> None:
    err, out, _ = await tool(cfg, "read_text_file", path="store.py", symbol=symbol)
    assert not err and (out["start_line"], out["end_line"]) == lines


async def test_tail_with_symbol_is_refused(cfg: Path) -> None:
    err, text, _ = await tool(cfg, "read_text_file", path="store.py", symbol="get", tail=3)
    assert err and "symbol or tail, not both" in text


async def test_a_markdown_outline_nests_headings(cfg: Path) -> None:
    _, out, _ = await tool(cfg, "outline", path="README.md")
    assert [(s["name"], [c["name"] for c in s["children"]]) for s in out["symbols"]] == [
        ("Title", ["Part"])]


async def test_outline_and_symbol_reads_over_http_against_the_live_app(cfg: Path) -> None:
    with live_server(cfg) as srv:
        err, out = await call(srv, "outline", path="pkg")
        assert not err and [f["path"] for f in out["files"]] == ["pkg/a.js", "pkg/sub/c.go"]
        err, got = await call(srv, "read_text_file", path="pkg/a.js", symbol="B.m")
        assert not err and got["content"] == "2 | class B { m() {} }"


def test_start_up_imports_no_grammar_and_starts_no_worker() -> None:
    probe = ("import sys, app.server, app.startup; "
             "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True, cwd=Path(__file__).parents[3])
    assert out.stdout.strip() == "[]"


@pytest.fixture
def small_cap(tmp_path: Path) -> Path:
    top = tmp_path / "many"
    top.mkdir()
    (top / "many.py").write_text("".join(f"def f{i}():\n    pass\n\n\n" for i in range(600)))
    return config_file(tmp_path, roots_toml(("r", top, "reference"), audit_log=None,
                                            extra="max_output_chars = 6000"))


async def test_a_files_symbols_past_the_output_limit_page_by_cursor(small_cap: Path) -> None:
    names: list[str] = []
    cursor = ""
    for _ in range(100):
        err, page, text = await tool(small_cap, "outline", path="many.py", cursor=cursor)
        assert not err and len(text) <= 6000
        names += [s["name"] for s in page["symbols"]]
        if not page["has_more"]:
            break
        assert "on the next page" in page["note"]
        cursor = page["next_cursor"]
    assert names == [f"f{i}" for i in range(600)]


async def test_a_folder_page_one_file_cannot_fill_is_cut_and_says_so(small_cap: Path) -> None:
    err, out, text = await tool(small_cap, "outline", path="")
    assert not err and len(text) <= 6000
    only = out["files"][0]
    assert 0 < len(only["symbols"]) < 600 and "left out" in only["note"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
async def test_a_file_with_a_bom_outlines_on_the_same_lines(
    tmp_path: Path, encoding: str
) -> None:
    top = tmp_path / "enc"
    top.mkdir()
    (top / "m.py").write_bytes("# ü\n\ndef größe():\n    pass\n".encode(encoding))
    cfg = config_file(tmp_path, roots_toml(("r", top, "reference"), audit_log=None))
    err, out, _ = await tool(cfg, "outline", path="m.py")
    assert not err, out
    assert [(s["name"], s["start_line"], s["end_line"]) for s in out["symbols"]] == [
        ("größe", 3, 4)]
    err, got, _ = await tool(cfg, "read_text_file", path="m.py", symbol="größe")
    assert not err and got["content"].splitlines()[0] == "3 | def größe():"
