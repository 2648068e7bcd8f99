"""ChatGPT deep research `search`/`fetch`: OpenAI's published shapes, the deny
rules, the budgets, over the real HTTP app with the MCP SDK client.

The schemas below transcribe OpenAI's published contract for the two tools
("Building MCP servers for ChatGPT and API integrations", platform docs):
search takes one query string and returns an object whose `results` is an
array of `{id, title, url}`; fetch takes one id string and returns
`{id, title, text, url, metadata}` where metadata is an optional key/value
object; each answer is one text content item holding that JSON.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.kit import RootOptions, roots_toml
from tests.live import call_tool, live_server, text_of

SEARCH_SCHEMA = {
    "type": "object",
    "required": ["results"],
    "properties": {
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "title", "url"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "title": {"type": "string"},
                    "url": {"type": "string"},
                },
            },
        }
    },
}
FETCH_SCHEMA = {
    "type": "object",
    "required": ["id", "title", "text", "url"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "title": {"type": "string"},
        "text": {"type": "string"},
        "url": {"type": "string"},
        "metadata": {"type": ["object", "null"]},
    },
}


def payload(res: Any) -> dict[str, Any]:
    """The answer as ChatGPT reads it: exactly one text item, equal to the structured content."""
    assert not res.is_error, res.content
    assert len(res.content) == 1 and res.content[0].type == "text"
    data = json.loads(text_of(res))
    assert data == res.structured_content
    return data


def ids(data: dict[str, Any]) -> list[str]:
    return [r["id"] for r in data["results"]]


@pytest.fixture
def sf(search_fetch_config: Path, tree: Path):
    # The shared tree has .env, .git/, node_modules/; add an allowed file with the same words.
    (tree / "notes.txt").write_text("SECRET=1 module.exports [core] hello\n")
    (tree / "environment.md").write_text("how the servers are set up\n")
    os.symlink(".env", tree / "env-link.txt")
    with live_server(search_fetch_config) as srv:
        yield srv


# -- surface -------------------------------------------------------------------


async def test_tools_exist_only_when_enabled(one_root_config: Callable[..., Path]) -> None:
    with live_server(one_root_config("reference")) as srv:
        async with srv.session() as s:
            names = {t.name for t in (await s.list_tools()).tools}
    assert not {"search", "fetch"} & names
    with live_server(one_root_config("reference", "search_fetch_tools = true")) as srv:
        async with srv.session() as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
    for name, param in (("search", "query"), ("fetch", "id")):
        t = tools[name]
        assert t.annotations is not None
        assert t.annotations.read_only_hint is True
        assert t.annotations.destructive_hint is False
        assert t.annotations.open_world_hint is False
        # One string parameter, as the connector calls it.
        assert t.input_schema["required"] == [param]
        assert t.input_schema["properties"][param]["type"] == "string"


# -- published shapes ----------------------------------------------------------


async def test_search_answers_the_published_shape(sf: Any) -> None:
    data = payload(await call_tool(sf, "search", query="print hello"))
    jsonschema.validate(data, SEARCH_SCHEMA)
    assert set(data) == {"results"}  # a complete answer is exactly the published shape
    assert data["results"][0] == {"id": "main/src/main.py", "title": "src/main.py", "url": ""}


async def test_fetch_answers_the_published_shape(sf: Any, tree: Path) -> None:
    data = payload(await call_tool(sf, "fetch", id="main/README.md"))
    jsonschema.validate(data, FETCH_SCHEMA)
    assert data["id"] == "main/README.md"
    assert data["title"] == "README.md"
    assert data["text"] == "# Title\nSome text\n"
    assert data["url"] == ""
    meta = data["metadata"]
    assert meta["root"] == "main" and meta["path"] == "README.md"
    assert meta["size"] == len("# Title\nSome text\n")
    assert meta["truncated"] is False and "note" not in meta
    assert str(tree) not in json.dumps(data)


async def test_every_search_id_can_be_fetched(sf: Any) -> None:
    data = payload(await call_tool(sf, "search", query="def print title"))
    assert set(ids(data)) == {"main/src/pkg/mod.py", "main/src/main.py", "main/README.md"}
    for doc_id in ids(data):
        doc = payload(await call_tool(sf, "fetch", id=doc_id))
        jsonschema.validate(doc, FETCH_SCHEMA)
        assert doc["id"] == doc_id


async def test_urls_follow_public_base_url(write_config: Callable[..., Path], tree: Path) -> None:
    (tree / "my notes.md").write_text("quarterly plan\n")
    cfg = write_config(roots_toml(
        ("main", tree, "reference"), audit_log=None,
        extra='search_fetch_tools = true\npublic_base_url = "https://files.example.org/loom/"',
    ))
    with live_server(cfg) as srv:
        found = payload(await call_tool(srv, "search", query="quarterly"))
        doc = payload(await call_tool(srv, "fetch", id="main/my notes.md"))
    assert found["results"] == [
        {
            "id": "main/my notes.md",
            "title": "my notes.md",
            "url": "https://files.example.org/loom/main/my%20notes.md",
        }
    ]
    assert doc["url"] == "https://files.example.org/loom/main/my%20notes.md"


# -- deny rules ----------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SECRET",  # the text of .env
        "env",  # the name .env (and env-link.txt, a link to it)
        "[core]",  # the text of .git/config
        "module.exports",  # the text of node_modules/x/index.js
    ],
)
async def test_search_never_returns_a_denied_file(sf: Any, query: str) -> None:
    found = ids(payload(await call_tool(sf, "search", query=query)))
    # The same words in an allowed file are found: paths and text really were searched.
    assert found == (["main/environment.md"] if query == "env" else ["main/notes.txt"])


BAD_ID = "expected 'root/relative/path' as returned by search"


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        # denied names, by the request and through an in-root link
        ("main/.env", "matches deny pattern '.env'"),
        ("main/.ENV", "matches deny pattern '.env'"),
        ("main/.git/config", "matches deny pattern '.git'"),
        ("main/node_modules/x/index.js", "matches deny pattern 'node_modules'"),
        ("main/env-link.txt", "matches deny pattern '.env'"),
        # confinement and syntax
        ("main/../outside.txt", "path escapes the root"),
        (
            "main//etc/passwd",
            "invalid path: absolute paths are not accepted; give a path relative to the root",
        ),
        # ids that name nothing
        ("nope/README.md", "unknown root 'nope'; known roots: main"),
        ("README.md", f"invalid id 'README.md': {BAD_ID}"),
        ("main/", f"invalid id 'main/': {BAD_ID}"),
        ("main/missing.txt", "no such file or directory: 'missing.txt'"),
        ("main/src", "not a regular file: 'src' is a directory"),
    ],
)
async def test_fetch_refuses(sf: Any, doc_id: str, message: str) -> None:
    res = await call_tool(sf, "fetch", id=doc_id)
    assert res.is_error
    assert text_of(res) == message


async def test_fetch_refuses_binary(sf: Any, tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    res = await call_tool(sf, "fetch", id="main/blob.bin")
    assert res.is_error
    assert text_of(res) == (
        "binary file: 'blob.bin' is not text (a NUL byte in its first 4 KiB)"
    )


async def test_search_rejects_an_empty_query(sf: Any) -> None:
    res = await call_tool(sf, "search", query="   ")
    assert res.is_error
    assert text_of(res) == "query is empty: give one or more words to look for"


# -- ranking -------------------------------------------------------------------


async def test_whole_phrase_ranks_first_then_nearest_words(sf: Any, tree: Path) -> None:
    (tree / "a.txt").write_text("world and then hello\n")
    (tree / "b.txt").write_text("say hello world\n")
    (tree / "c.txt").write_text("hello only\n")
    data = payload(await call_tool(sf, "search", query="Hello World"))
    assert ids(data)[:3] == ["main/b.txt", "main/a.txt", "main/c.txt"]


# -- budgets -------------------------------------------------------------------


WriteConfig = Callable[..., Path]


def budget_config(
    write_config: WriteConfig, tree: Path, extra: str, root_options: RootOptions | None = None
) -> Path:
    return write_config(roots_toml(("main", tree, "reference", root_options or {}),
                                   audit_log=None, extra=f"search_fetch_tools = true\n{extra}"))


async def test_fetch_reads_at_most_max_read_bytes(write_config: WriteConfig, tree: Path) -> None:
    (tree / "big.txt").write_text("".join(f"line {i:05}\n" for i in range(1000)))  # 11000 B
    cfg = budget_config(write_config, tree, "", {"max_read_bytes": 2000})
    with live_server(cfg) as srv:
        data = payload(await call_tool(srv, "fetch", id="main/big.txt"))
    jsonschema.validate(data, FETCH_SCHEMA)
    body, _, marker = data["text"].partition("\n[... truncated: ")
    assert body == "".join(f"line {i:05}\n" for i in range(1000))[:2000].removesuffix("\n")
    assert "max_read_bytes" in marker
    assert data["metadata"]["truncated"] is True
    assert data["metadata"]["note"] == (
        "only the first 2000 bytes of 11000 were read (the root's max_read_bytes)"
    )


async def test_fetch_answer_fits_max_output_chars(write_config: WriteConfig, tree: Path) -> None:
    text = "".join(f'ligne {i} "é"\n' for i in range(2000))  # escapes and non-ASCII
    (tree / "long.txt").write_text(text)
    cfg = budget_config(write_config, tree, "max_output_chars = 3000")
    with live_server(cfg) as srv:
        res = await call_tool(srv, "fetch", id="main/long.txt")
    data = payload(res)
    assert len(text_of(res)) <= 3000
    assert len(text_of(res)) > 2500  # cut to fit, not emptied
    assert text.startswith(data["text"].split("\n[... truncated: ")[0])
    assert data["text"].endswith("the text was cut to fit max_output_chars (3000)]")
    assert data["metadata"]["truncated"] is True


def needles_beyond_the_budget(write_config: WriteConfig, tree: Path) -> Path:
    """Five files of 108 bytes holding `needle`, one with it only in its name, and a
    `max_search_bytes` of 250."""
    for i in range(5):
        (tree / f"f{i}.txt").write_text("needle " + "x" * 100 + "\n")
    (tree / "needle-in-name.txt").write_text("nothing\n")
    return budget_config(write_config, tree, "max_search_bytes = 250")


async def test_the_index_covers_the_root_beyond_the_scan_budget(
    write_config: WriteConfig, tree: Path
) -> None:
    cfg = needles_beyond_the_budget(write_config, tree)
    with live_server(cfg) as srv:
        data = payload(await call_tool(srv, "search", query="needle"))
    jsonschema.validate(data, SEARCH_SCHEMA)
    assert set(data) == {"results"}  # complete: 5 x 108 B, more than the budget, all read
    assert set(ids(data)) == {f"main/f{i}.txt" for i in range(5)} | {"main/needle-in-name.txt"}


async def test_the_scan_says_when_the_content_budget_ran_out(
    write_config: WriteConfig, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.fs.index.fulltext import fts
    monkeypatch.setattr(fts, "_fts5", "this Python's SQLite has no FTS5 (no such module: fts5)")
    cfg = needles_beyond_the_budget(write_config, tree)
    with live_server(cfg) as srv:
        data = payload(await call_tool(srv, "search", query="needle"))
    jsonschema.validate(data, SEARCH_SCHEMA)
    assert data["truncated"] is True
    assert data["note"].startswith("this Python's SQLite has no FTS5")
    assert "max_search_bytes = 250" in data["note"]
    found = ids(data)
    assert "main/needle-in-name.txt" in found  # paths still match after the budget
    assert len([i for i in found if i.startswith("main/f")]) == 2  # 2 x 108 B fit in 250


async def test_search_says_when_matches_exceed_the_cap(
    write_config: WriteConfig, tree: Path
) -> None:
    for i in range(8):
        (tree / f"m{i}.txt").write_text("match\n" * (i + 1))
    cfg = budget_config(write_config, tree, "max_search_results = 3")
    with live_server(cfg) as srv:
        data = payload(await call_tool(srv, "search", query="match"))
    # The most occurrences first.
    assert ids(data) == ["main/m7.txt", "main/m6.txt", "main/m5.txt"]
    assert data["truncated"] is True
    assert data["note"].startswith("8 files matched; only the best 3 are listed")


async def test_search_answer_fits_max_output_chars(write_config: WriteConfig, tree: Path) -> None:
    for i in range(40):
        (tree / f"{'long-name-' * 5}{i:02}.txt").write_text("word\n")
    cfg = budget_config(write_config, tree, "max_output_chars = 1500")
    with live_server(cfg) as srv:
        res = await call_tool(srv, "search", query="word")
    data = payload(res)
    assert len(text_of(res)) <= 1500
    assert 0 < len(data["results"]) < 40
    assert data["truncated"] is True and "max_output_chars (1500)" in data["note"]


@pytest.mark.parametrize(
    ("raw", "encoding"),
    [
        ("Grüße aus Köln\n".encode("utf-16"), "utf-16-le"),  # BOM, full of NUL bytes
        ("Grüße aus Köln\n".encode("utf-8-sig"), "utf-8-sig"),
        ("Grüße aus Köln\n".encode("gb18030"), "gb18030"),  # no BOM, not UTF-8
    ],
)
async def test_text_in_other_encodings_is_searched_and_fetched(
    sf: Any, tree: Path, raw: bytes, encoding: str
) -> None:
    (tree / "greeting.txt").write_bytes(raw)
    assert ids(payload(await call_tool(sf, "search", query="KÖLN"))) == ["main/greeting.txt"]
    doc = payload(await call_tool(sf, "fetch", id="main/greeting.txt"))
    assert doc["text"] == "Grüße aus Köln\n"
    assert doc["metadata"]["encoding"] == encoding


async def test_search_reports_progress_when_asked(
    search_fetch_config: Path, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.fs.index.fulltext import fts
    monkeypatch.setattr(fts, "COMMIT_EVERY", 0.0)
    for i in range(600):
        (tree / f"n{i:03}.txt").write_text("nothing here\n")
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    with live_server(search_fetch_config) as srv:
        async with srv.session() as s:
            res = await s.call_tool("search", {"query": "zebra"}, progress_callback=on_progress)
    assert payload(res) == {"results": []}
    # The first build reports as it goes (every 256 entries at most this often).
    assert seen and seen[0][0] == 256
    assert re.fullmatch(r"indexing root 'main': 25\d files read, 256 examined", seen[0][1] or "")
    assert [d for d, _ in seen] == [256, 512]


# -- the index, over the real app ------------------------------------------------


def workspace_config(
    write_config: WriteConfig, tree: Path, root_options: RootOptions | None = None
) -> Path:
    return write_config(roots_toml(("main", tree, "workspace", root_options or {}),
                                   audit_log=None, extra="search_fetch_tools = true"))


async def test_changes_through_the_tools_are_seen_by_the_next_search(
    write_config: WriteConfig, tree: Path
) -> None:
    with live_server(workspace_config(write_config, tree)) as srv:
        async with srv.session() as s:

            async def search(q: str) -> list[str]:
                return ids(payload(await s.call_tool("search", {"query": q})))

            assert await search("okapi") == []
            await s.call_tool("write_file", {"path": "zoo/a.md", "content": "an okapi\n"})
            assert await search("okapi") == ["main/zoo/a.md"]
            await s.call_tool(
                "edit_file",
                {"path": "zoo/a.md", "edits": [{"old_text": "okapi", "new_text": "zebra"}]},
            )
            assert await search("okapi") == []
            assert await search("zebra") == ["main/zoo/a.md"]
            await s.call_tool("move_file", {"source": "zoo/a.md", "destination": "b.md"})
            assert await search("zebra") == ["main/b.md"]
            await s.call_tool("delete", {"path": "b.md"})
            assert await search("zebra") == []


async def test_a_deny_rule_added_by_reload_config_hides_indexed_files(
    write_config: WriteConfig, tree: Path
) -> None:
    (tree / "plan.txt").write_text("budget figures\n")
    (tree / "plan.md").write_text("budget notes\n")
    cfg = workspace_config(write_config, tree)
    with live_server(cfg) as srv:
        async with srv.session() as s:
            found = ids(payload(await s.call_tool("search", {"query": "budget"})))
            assert set(found) == {"main/plan.txt", "main/plan.md"}
            workspace_config(write_config, tree, {"deny": ["*.txt"]})
            assert not (await s.call_tool("reload_config", {})).is_error
            found = ids(payload(await s.call_tool("search", {"query": "budget"})))
            assert found == ["main/plan.md"]
            res = await s.call_tool("fetch", {"id": "main/plan.txt"})
            assert res.is_error and text_of(res) == "matches deny pattern '*.txt'"


async def test_parallel_searches_and_writes_agree_with_the_disk(
    write_config: WriteConfig, tree: Path
) -> None:
    """Eight searches at once while files come and go: each answer holds only files that
    exist and hold the word, and once the writers stop every file is found."""
    import anyio

    for i in range(30):
        (tree / f"d{i:02}.txt").write_text(f"lynx {i}\n")
    with live_server(workspace_config(write_config, tree)) as srv:
        answers: list[list[str]] = []

        async def searcher() -> None:
            async with srv.session() as s:
                for _ in range(4):
                    answers.append(ids(payload(await s.call_tool("search", {"query": "lynx"}))))

        async def writer() -> None:
            async with srv.session() as s:
                for i in range(30, 45):
                    await s.call_tool("write_file", {"path": f"d{i:02}.txt", "content": "lynx\n"})
                    await s.call_tool("delete", {"path": f"d{i - 30:02}.txt"})

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(searcher)
            tg.start_soon(writer)
        async with srv.session() as s:
            final = ids(payload(await s.call_tool("search", {"query": "lynx"})))
    assert sorted(final) == [f"main/d{i:02}.txt" for i in range(15, 45)]
    assert len(answers) == 32
    for found in answers:
        assert all(f.startswith("main/d") for f in found)
