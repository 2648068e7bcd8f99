"""Every read and search tool through the MCP SDK client, against the real app.

Happy paths, then each refusal with the contract's message, then the
properties that must hold across calls: denied names invisible at any depth,
pages that add up to the whole, results within max_output_chars.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fs.readkit import (
    DECODED,
    DENIED_FILES,
    ENCODED,
    MANY,
    MAX_READ,
    NEEDLE,
    config,
    make_tree,
    png_bytes,
    serve,
    wav_bytes,
)
from tests.kit import complete
from tests.live import LiveServer, call, text_of

READ_TOOLS = {"list_directory", "stat_path", "read_text_file", "read_multiple_files",
              "read_media_file", "search_files", "search_text"}


@pytest.fixture(scope="module")
def rtree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    return make_tree(tmp_path_factory)


@pytest.fixture(scope="module")
def rserver(rtree: tuple[Path, dict[str, Path]]) -> Iterator[LiveServer]:
    yield from serve(rtree)


# -- the surface ---------------------------------------------------------------------


async def test_read_tools_are_listed_read_only_and_idempotent(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) >= READ_TOOLS
    for name in READ_TOOLS:
        t = tools[name]
        assert t.description and len(t.description) > 60, name
        a = t.annotations
        assert a is not None and a.read_only_hint is True and a.idempotent_hint is True, name
        assert a.destructive_hint is False and a.open_world_hint is False, name
        assert t.output_schema is not None, name


# -- list_directory ----------------------------------------------------------------


async def test_list_directory_lists_sorted_typed_entries_without_denied_names(
    rserver: LiveServer, rtree: tuple[Path, dict[str, Path]]
) -> None:
    readme = (rtree[1]["main"] / "README.md").stat().st_size
    async with rserver.session() as s:
        err, r = await call(s, "list_directory")
        raw = (await s.call_tool("list_directory", {})).structured_content
    assert not err and raw is not None
    names = [e["name"] for e in r["entries"]]
    assert names == sorted(names)
    by = {e["name"]: e for e in r["entries"]}
    assert {".env", ".env.local", ".git", "node_modules", ".ssh", "DATA"} & set(by) == {"DATA"}
    assert by["README.md"]["type"] == "file" and by["README.md"]["size"] == readme
    assert by["src"]["type"] == "dir" and by["src"]["size"] is None
    for link in ("link_in", "link_file", "link_out", "link_secret", "loop_a"):
        assert by[link]["type"] == "symlink" and by[link]["size"] is None
    assert by["fifo"]["type"] == "other"
    # The structured entries are lean (docs/tools.md): no `name` (the path's last part), no
    # `modified` (stat_path has it), no `type` for a file, no `size` where there is none.
    lean = {e["path"]: e for e in raw["entries"]}
    assert lean["README.md"] == {"path": "README.md", "size": readme}
    assert lean["src"] == {"path": "src", "type": "dir"}
    assert r["root"] == "main" and r["path"] == "" and r["has_more"] is False
    assert r["returned"] == len(r["entries"]) and r["next_offset"] is None


async def test_recursive_listing_respects_max_depth_and_never_enters_links(
    rserver: LiveServer,
) -> None:
    async with rserver.session() as s:
        _, two = await call(s, "list_directory", path="src", recursive=True, max_depth=2)
        _, deep = await call(s, "list_directory", recursive=True, max_depth=64, limit=200,
                             path="src")
        _, top = await call(s, "list_directory", recursive=True, max_depth=3, limit=200)
    depth = {e["path"].count("/") for e in two["entries"]}
    assert depth == {1, 2}  # src/x and src/x/y: two levels below src
    assert "src/pkg/deep/er/still/leaf.py" in {e["path"] for e in deep["entries"]}
    paths = [e["path"] for e in top["entries"]]
    assert not [p for p in paths if p.startswith(("link_in/", "link_out/", "loop_a/"))]
    assert top["skipped_links"] >= 6
    # breadth-first: every depth-1 entry comes before any depth-2 entry
    depths = [p.count("/") for p in paths]
    assert depths == sorted(depths)


async def test_listing_through_an_in_root_link_keeps_the_requested_spelling(
    rserver: LiveServer,
) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "list_directory", path="link_in")
        err, _ = await call(s, "stat_path", path=r["entries"][0]["path"])
    assert r["path"] == "link_in"
    assert {e["path"] for e in r["entries"]} == {"link_in/app.py", "link_in/pkg"}
    assert not err


LIST_REFUSALS = [
    ({"path": "nope"}, "no such file or directory: 'nope'"),
    ({"path": "README.md"}, "not a directory: 'README.md'"),
    ({"path": ".git"}, "matches deny pattern '.git'"),
    ({"path": "src/pkg/.venv"}, "matches deny pattern '.venv'"),
    ({"path": "NODE_MODULES"}, "matches deny pattern 'node_modules'"),
    ({"path": "../outside"}, "path escapes the root"),
    ({"path": "link_out"}, "path escapes the root"),
    ({"path": "loop_a"}, "too many levels of symbolic links"),
    ({"path": "/etc"}, "invalid path: absolute paths are not accepted"),
    ({"root": "nope"}, "unknown root 'nope'; known roots: main, ws"),
]


@pytest.mark.parametrize(("args", "message"), LIST_REFUSALS)
async def test_list_directory_refusals(rserver: LiveServer, args: dict[str, Any],
                                       message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "list_directory", **args)
    assert err and message in text


# -- stat_path -----------------------------------------------------------------------


async def test_stat_path_describes_files_dirs_and_followed_links(
    rserver: LiveServer, rtree: tuple[Path, dict[str, Path]]
) -> None:
    main = rtree[1]["main"]
    async with rserver.session() as s:
        _, f = await call(s, "stat_path", path="README.md")
        _, d = await call(s, "stat_path", path="src")
        _, link = await call(s, "stat_path", path="link_file")
        _, big = await call(s, "stat_path", path="big/big.log")
        _, binary = await call(s, "stat_path", path="bin/blob.bin")
        _, wide = await call(s, "stat_path", path="enc/utf16le.txt")
    digest = hashlib.sha256((main / "README.md").read_bytes()).hexdigest()
    assert f == {**f, "path": "README.md", "type": "file", "size": len(
                 (main / "README.md").read_bytes()), "is_text": True,
                 "sha256": digest}
    assert f["mode"] == "0644" and f["modified"].endswith("Z")
    assert d["type"] == "dir" and d["size"] is None and d["sha256"] is None
    assert link["type"] == "file" and link["sha256"] == digest
    assert big["sha256"] is None and big["size"] > MAX_READ  # too large to hash in one call
    assert binary["is_text"] is False and wide["is_text"] is True


STAT_REFUSALS = [
    ({"path": "missing.txt"}, "no such file or directory: 'missing.txt'"),
    ({"path": ".env"}, "matches deny pattern '.env'"),
    ({"path": "link_secret"}, "matches deny pattern '.env'"),
    ({"path": "link_out"}, "path escapes the root"),
    ({"path": "../outside/secret.txt"}, "path escapes the root"),
    ({"path": "x", "root": "nope"}, "unknown root 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), STAT_REFUSALS)
async def test_stat_path_refusals(rserver: LiveServer, args: dict[str, Any], message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "stat_path", **args)
    assert err and message in text


# -- read_text_file ----------------------------------------------------------------


async def test_read_text_file_window_and_continuation(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        _, first = await call(s, "read_text_file", path="docs/guide.md", end_line=3)
        _, nxt = await call(s, "read_text_file", path="docs/guide.md",
                            start_line=first["next_start_line"], end_line=4)
        _, last = await call(s, "read_text_file", path="docs/guide.md", start_line=999,
                             end_line=2000)
    assert first["content"] == "1 | Guide\n2 | line 2\n3 | line 3"
    assert first["has_more"] and first["next_start_line"] == 4 and not first["eof_reached"]
    assert first["total_lines"] is None and first["encoding"] == "utf-8"
    assert nxt["content"] == "4 | line 4" and nxt["start_line"] == nxt["end_line"] == 4
    assert last["content"] == "999 | line 999\n1000 | line 1000"
    assert last["eof_reached"] and last["total_lines"] == 1000 and not last["has_more"]
    assert last["next_start_line"] is None and last["sha256"] == first["sha256"]


async def test_reading_past_eof_is_empty_and_says_so(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        err, r = await call(s, "read_text_file", path="README.md", start_line=10, end_line=20)
    assert not err
    assert r["content"] == "" and r["start_beyond_eof"] is True and r["end_line"] is None
    assert r["eof_reached"] is True and r["total_lines"] == 2 and r["has_more"] is False


async def test_tail_returns_the_last_lines_of_a_file_larger_than_the_budget(
    rserver: LiveServer,
) -> None:
    async with rserver.session() as s:
        _, small = await call(s, "read_text_file", path="docs/guide.md", tail=2)
        _, big = await call(s, "read_text_file", path="big/big.log", tail=3)
        _, head = await call(s, "read_text_file", path="big/big.log", end_line=2)
    assert small["content"] == "999 | line 999\n1000 | line 1000"
    assert small["total_lines"] == 1000 and small["start_line"] == 999
    # over max_read_bytes: served from the end, numbered from it, and said so
    assert big["content"] == "-3 | entry 019998\n-2 | entry 019999\n-1 | entry 020000"
    assert big["sha256"] is None and "count from the end" in big["note"]
    assert head["content"] == "1 | entry 000001\n2 | entry 000002" and head["has_more"]


@pytest.mark.parametrize("name", sorted(ENCODED))
async def test_each_encoding_is_decoded(rserver: LiveServer, name: str) -> None:
    async with rserver.session() as s:
        err, r = await call(s, "read_text_file", path=f"enc/{name}")
    assert not err, r
    assert r["encoding"] == ENCODED[name][0]
    assert r["content"] == "\n".join(f"{i} | {t}" for i, t in enumerate(DECODED[name], 1))


async def test_crlf_lines_lose_their_cr(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "read_text_file", path="docs/crlf.txt")
    assert r["content"] == "1 | one\n2 | two\n3 | three" and r["total_lines"] == 3


READ_REFUSALS = [
    ({"path": "bin/blob.bin"}, "'bin/blob.bin' is binary (a NUL byte in its first 4 KiB)"),
    ({"path": "big/big.log", "start_line": 15000, "end_line": 15001},
     "line 15000 of 'big/big.log' is beyond the first 65536 bytes (max_read_bytes of root "
     "'main') that one call may read; read the end of the file with tail=N"),
    ({"path": "docs/guide.md", "start_line": 5, "end_line": 1},
     "end_line (1) is before start_line (5)"),
    ({"path": ".env"}, "matches deny pattern '.env'"),
    ({"path": "DATA/.Env"}, "matches deny pattern '.env'"),
    ({"path": "src/pkg/.venv/lib/site.py"}, "matches deny pattern '.venv'"),
    ({"path": "link_secret"}, "matches deny pattern '.env'"),
    ({"path": "../outside/secret.txt"}, "path escapes the root"),
    ({"path": "link_out/secret.txt"}, "path escapes the root"),
    ({"path": "loop_a"}, "too many levels of symbolic links"),
    ({"path": "src"}, "not a regular file: 'src' is a directory"),
    ({"path": "fifo"}, "not a regular file"),
    ({"path": "nope.txt"}, "no such file or directory: 'nope.txt'"),
    ({"path": "README.md", "root": "nope"}, "unknown root 'nope'; known roots: main, ws"),
    ({"path": "C:/x"}, "invalid path: drive letters"),
]


@pytest.mark.parametrize(("args", "message"), READ_REFUSALS)
async def test_read_text_file_refusals(rserver: LiveServer, args: dict[str, Any],
                                       message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "read_text_file", **args)
    assert err and message in text


# -- read_multiple_files --------------------------------------------------------------


async def test_read_multiple_files_gives_per_file_results_and_errors(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        err, r = await call(s, "read_multiple_files",
                            paths=["README.md", ".env", "/etc/passwd", "enc/gb18030.txt",
                                   "bin/blob.bin", "nope"])
    assert not err
    res = r["results"]
    assert [x["index"] for x in res] == list(range(6))
    assert res[0]["file"]["content"] == "1 | # Project\n2 | A NEEDLE in the readme"
    assert res[1] == {"index": 1, "path": ".env", "error": "matches deny pattern '.env'",
                      "file": None}
    assert res[2]["path"] is None and res[2]["error"].startswith("invalid path: absolute")
    assert res[3]["file"]["encoding"] == "gb18030"
    assert "binary" in res[4]["error"] and "no such file" in res[5]["error"]
    assert r["returned"] == 2 and r["errors"] == 4


# -- read_media_file ------------------------------------------------------------------


async def test_read_media_file_returns_image_and_audio_blocks(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        png = await s.call_tool("read_media_file", {"path": "media/pic.png"})
        noext = await s.call_tool("read_media_file", {"path": "media/noext"})
        wav = await s.call_tool("read_media_file", {"path": "media/sound.wav"})
    assert not png.is_error and png.content[0].type == "image"
    assert png.content[0].mime_type == "image/png"
    assert base64.b64decode(png.content[0].data) == png_bytes()
    assert png.structured_content == {
        "path": "media/pic.png", "mime_type": "image/png", "kind": "image",
        "size": len(png_bytes()), "sha256": hashlib.sha256(png_bytes()).hexdigest()}
    assert noext.content[0].type == "image"  # recognised by its bytes, not its name
    assert wav.content[0].type == "audio" and wav.content[0].mime_type == "audio/wav"
    assert base64.b64decode(wav.content[0].data) == wav_bytes()


MEDIA_REFUSALS = [
    ({"path": "media/fake.png"}, "'media/fake.png' is not an image or audio file"),
    ({"path": "media/huge.png"}, "more than the 65536 bytes one call may read"),
    ({"path": ".env"}, "matches deny pattern '.env'"),
    ({"path": "link_out/secret.txt"}, "path escapes the root"),
    ({"path": "media"}, "not a regular file"),
]


@pytest.mark.parametrize(("args", "message"), MEDIA_REFUSALS)
async def test_read_media_file_refusals(rserver: LiveServer, args: dict[str, Any],
                                        message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "read_media_file", **args)
    assert err and message in text


# -- search_files ---------------------------------------------------------------------


async def test_search_files_finds_base_names_at_any_depth(
    rserver: LiveServer, rtree: tuple[Path, dict[str, Path]]
) -> None:
    app_size = (rtree[1]["main"] / "src/app.py").stat().st_size
    async with rserver.session() as s:
        _, r = await call(s, "search_files", pattern="*.py")
        _, strict = await call(s, "search_files", pattern="pkg/*.py", path="src")
        _, deep = await call(s, "search_files", pattern="**/still/*.py")
        _, under = await call(s, "search_files", pattern="*.py", path="src/pkg")
    assert [m["path"] for m in r["matches"]] == [
        "src/app.py", "src/pkg/mod.py", "src/pkg/util.py", "src/pkg/deep/er/still/leaf.py"]
    assert r["matches"][0] == {"path": "src/app.py", "type": "file", "size": app_size}
    assert not r["truncated"] and r["note"] is None and r["skipped_links"] >= 6
    assert [m["path"] for m in strict["matches"]] == ["src/pkg/mod.py", "src/pkg/util.py"]
    assert [m["path"] for m in deep["matches"]] == ["src/pkg/deep/er/still/leaf.py"]
    assert under["matches"][0]["path"] == "src/pkg/mod.py"  # root-relative, not path-relative


async def test_search_files_reports_directories_and_links_by_type(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "search_files", pattern="link_*")
        _, d = await call(s, "search_files", pattern="pkg")
    assert {m["path"]: m["type"] for m in r["matches"]} == {
        "link_file": "symlink", "link_in": "symlink", "link_out": "symlink",
        "link_secret": "symlink"}
    assert d["matches"] == [{"path": "src/pkg", "type": "dir", "size": None}]


SEARCH_FILES_REFUSALS = [
    ({"pattern": ""}, "invalid glob '': the pattern is empty"),
    ({"pattern": "/etc/*"}, "invalid glob: absolute patterns are not accepted"),
    ({"pattern": "../*.py"}, "invalid glob '../*.py': '..' is not accepted"),
    ({"pattern": "src/[ab.py"}, "invalid glob 'src/[ab.py': unclosed '['"),
    ({"pattern": "*.py", "path": "README.md"}, "not a directory: 'README.md'"),
    ({"pattern": "*.py", "path": "nope"}, "no such file or directory: 'nope'"),
    ({"pattern": "*", "path": ".git"}, "matches deny pattern '.git'"),
    ({"pattern": "*", "path": "link_out"}, "path escapes the root"),
    ({"pattern": "*", "root": "nope"}, "unknown root 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), SEARCH_FILES_REFUSALS)
async def test_search_files_refusals(rserver: LiveServer, args: dict[str, Any],
                                     message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "search_files", **args)
    assert err and message in text


# -- search_text ----------------------------------------------------------------------


async def test_search_text_finds_lines_with_previews_and_counts_its_skips(
    rserver: LiveServer,
) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "search_text", query="not-in-any-file")  # a full scan
        everything = await _all_pages(s, "search_text", "matches", query=NEEDLE, limit=200)
        _, lower = await call(s, "search_text", query="needle", case_sensitive=False,
                              path="src")
        _, exact = await call(s, "search_text", query="needle", path="src")
    found = {(m["path"], m["line"]) for m in everything}
    assert ("README.md", 2) in found and ("src/app.py", 4) in found
    assert ("docs/.env.example", 1) in found  # a template, not a secret
    assert ("enc/utf16-needle.txt", 2) in found  # UTF-16 is decoded, not skipped as binary
    # A NUL anywhere makes a file binary, as ripgrep finds it in a walk: left out whole.
    assert all(not p.startswith(("bin/blob", "bin/late-nul")) for p, _ in found)
    preview = next(m["preview"] for m in everything if m["path"] == "src/app.py")
    assert preview == "    return 'NEEDLE'"  # verbatim, indentation kept
    assert r["skipped_binary"] >= 1 and r["skipped_too_large"] == 4
    assert r["examined_files"] > MANY and r["scanned_bytes"] > 0 and not r["truncated"]
    assert "4 file(s) over 65536 bytes were not searched" in r["note"]
    assert {m["path"] for m in lower["matches"]} == {"src/app.py", "src/pkg/deep/er/still/leaf.py"}
    assert [m["path"] for m in exact["matches"]] == ["src/pkg/deep/er/still/leaf.py"]


async def test_search_text_file_glob_is_relative_to_path(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "search_text", query=NEEDLE, path="many", file_glob="f00?.txt")
        _, strict = await call(s, "search_text", query="X", path="src", file_glob="pkg/*.py")
    assert [m["path"] for m in r["matches"]] == [f"many/f00{i}.txt" for i in range(10)]
    assert [m["path"] for m in strict["matches"]] == ["src/pkg/mod.py"]


SEARCH_TEXT_REFUSALS = [
    ({"query": "x", "file_glob": "[x"}, "invalid glob '[x': unclosed '['"),
    ({"query": "x", "file_glob": "a//b"}, "empty segment"),
    ({"query": "x", "path": "docs/guide.md"}, "not a directory: 'docs/guide.md'"),
    ({"query": "x", "path": "gone"}, "no such file or directory: 'gone'"),
    ({"query": "x", "path": "node_modules"}, "matches deny pattern 'node_modules'"),
    ({"query": "x", "path": "../outside"}, "path escapes the root"),
    ({"query": "x", "root": "nope"}, "unknown root 'nope'"),
    ({"query": ""}, "query"),
]


@pytest.mark.parametrize(("args", "message"), SEARCH_TEXT_REFUSALS)
async def test_search_text_refusals(rserver: LiveServer, args: dict[str, Any],
                                    message: str) -> None:
    async with rserver.session() as s:
        err, text = await call(s, "search_text", **args)
    assert err and message in text


async def test_limit_above_max_search_results_is_clamped_and_shown(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        _, r = await call(s, "search_text", query=NEEDLE, limit=100_000)
        _, f = await call(s, "search_files", pattern="*.txt", limit=100_000)
        _, d = await call(s, "list_directory", path="many", limit=100_000)
    for res, key in ((r, "matches"), (f, "matches"), (d, "entries")):
        assert res["limit"] == 200 and res["returned"] == 200 and len(res[key]) == 200
        assert res["has_more"] and res["next_offset"] == 200


async def test_long_search_reports_progress_when_asked(
    rserver: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.fs.search import searcher

    monkeypatch.setattr(searcher, "PROGRESS_EVERY", 0.0)  # every directory counts as long
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with rserver.session() as s:
        res = await s.call_tool("search_text", {"query": "nothing-matches-this"},
                                progress_callback=on_progress)
        quiet = await s.call_tool("search_text", {"query": "nothing-matches-this"})
    assert not res.is_error and not quiet.is_error
    assert len(seen) >= 3
    done = [d for d, _, _ in seen]
    assert done == sorted(done) and "files searched" in (seen[-1][2] or "")


# -- properties across calls --------------------------------------------------------


def _denied_component(path: str) -> str | None:
    from app.security.deny import DenyRules

    rules = DenyRules()
    return rules.path(tuple(path.split("/")))


async def _all_pages(s: Any, tool: str, key: str, **args: Any) -> list[Any]:
    items: list[Any] = []
    offset = 0
    while True:
        err, r = await call(s, tool, offset=offset, **args)
        assert not err, r
        items += r[key]
        if not r["has_more"]:
            return items
        assert r["next_offset"] == offset + r["returned"] and r["returned"] > 0
        offset = r["next_offset"]


async def test_denied_names_never_appear_at_any_depth(rserver: LiveServer) -> None:
    async with rserver.session() as s:
        listed = await _all_pages(s, "list_directory", "entries", recursive=True,
                                  max_depth=64, limit=200)
        files = await _all_pages(s, "search_files", "matches", pattern="**", limit=200)
        named = []
        for pattern in (".env*", "*.pem", "id_*", "*.pyc", "config", "*.json", "**/.venv/**"):
            named += await _all_pages(s, "search_files", "matches", pattern=pattern)
        texts = await _all_pages(s, "search_text", "matches", query="SECRET", limit=200)
        needles = await _all_pages(s, "search_text", "matches", query=NEEDLE, limit=200)
    everything = [x["path"] for x in listed + files + named + texts + needles]
    assert len(listed) > MANY and [f["path"] for f in files] == [e["path"] for e in listed]
    leaks = [p for p in everything if _denied_component(p)]
    assert leaks == []
    assert texts == []  # every SECRET line lives in a denied file
    assert not {p for p in everything} & set(DENIED_FILES)
    assert {x["path"] for x in named} == {"docs/.env.example"}


async def test_pages_add_up_to_the_unpaginated_result(
    rserver: LiveServer, rtree: tuple[Path, dict[str, Path]]
) -> None:
    from app.fs.control import NoControl
    from app.fs.reading import listing
    from app.fs.search.files import search_files
    from app.fs.search.options import FilesOptions, TextOptions
    from app.fs.search.text import search_text
    from tests.kit import loaded_root

    root = loaded_root(config(rtree[0], rtree[1], name="direct.toml"))
    whole_list = listing.list_directory(
        root, "", recursive=True, max_depth=64, offset=0, limit=10**6, cap=10**8,
        control=NoControl())
    whole_files = search_files(root, FilesOptions(pattern="*", offset=0, limit=10**6,
                                                  cap=10**8), NoControl())
    whole_text = search_text(root, TextOptions(
        query=NEEDLE, file_glob="*", case_sensitive=True, offset=0, limit=10**6,
        cap=10**8, file_limit=MAX_READ, budget=1 << 30), NoControl())
    async with rserver.session() as s:
        listed = await _all_pages(s, "list_directory", "entries", recursive=True,
                                  max_depth=64, limit=37)
        files = await _all_pages(s, "search_files", "matches", pattern="*", limit=41)
        texts = await _all_pages(s, "search_text", "matches", query=NEEDLE, limit=19)
    # `modified` is left out of the structured content (docs/tools.md).
    assert listed == [{**e.model_dump(), "modified": None} for e in whole_list.entries]
    assert files == [m.model_dump() for m in whole_files.matches]
    assert whole_text.matches is not None
    assert texts == [m.model_dump() for m in whole_text.matches]
    assert len(texts) > MANY


# -- output bound ----------------------------------------------------------------------

SMALL_CAP = 3000


@pytest.fixture(scope="module")
def small_server(rtree: tuple[Path, dict[str, Path]]) -> Iterator[LiveServer]:
    yield from serve(rtree, extra=f"max_output_chars = {SMALL_CAP}", name="small.toml")


async def test_every_result_fits_max_output_chars_and_says_when_cut(
    small_server: LiveServer,
) -> None:
    async with small_server.session() as s:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_directory", {"path": "many", "limit": 200}),
            ("search_files", {"pattern": "*.txt", "limit": 200}),
            ("search_text", {"query": NEEDLE, "limit": 200}),
            ("read_text_file", {"path": "docs/guide.md", "end_line": 1000}),
            ("read_text_file", {"path": "big/oneline.txt"}),
            ("read_text_file", {"path": "big/oneline.txt", "tail": 2}),
            ("read_multiple_files", {"paths": ["docs/guide.md", "README.md", "big/big.log"]}),
        ]
        for tool, args in calls:
            res = await s.call_tool(tool, args)
            text = text_of(res)
            assert not res.is_error, (tool, text)
            assert len(text) <= SMALL_CAP, (tool, len(text))
            r = complete(tool, res.structured_content)
            if tool in ("list_directory", "search_files", "search_text"):
                assert r["has_more"] and r["returned"] < 200
                assert f"max_output_chars = {SMALL_CAP}" in r["note"]
            elif tool == "read_text_file" and "tail" not in args:
                assert r["has_more"] or "[... line cut" in r["content"]
        _, one = await call(s, "read_text_file", path="big/oneline.txt")
        _, after = await call(s, "read_text_file", path="big/long-then-short.txt")
    assert one["content"].startswith("1 | xxx") and one["content"].endswith(
        "[... line cut: longer than the output limit]")
    assert one["next_start_line"] == 2
    # a long line is never cut when it is not first: the window stops before it
    assert after["content"] == "1 | short" and after["next_start_line"] == 2


async def test_pages_of_a_cut_result_continue_exactly(small_server: LiveServer) -> None:
    async with small_server.session() as s:
        listed = await _all_pages(s, "list_directory", "entries", path="many", limit=200)
    assert [e["name"] for e in listed] == [f"f{i:03d}.txt" for i in range(MANY)]
