"""The persistent index behind `search` (app/fs/index/fulltext/fts.py, app/corpus/deep_research.py).

Driven in process on a real root and a real registry (the HTTP path is covered
in tests/clients/test_search_fetch.py): freshness against an oracle over
generated sequences of changes, denied paths never returned however stale or
tampered the index is, where and how the index file lives, and the fallback to
the scan when the index cannot serve.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.corpus import deep_research as dr
from app.corpus import ranked
from app.fs.control import NoControl
from app.fs.index.fulltext import fts, prepare, tokens
from app.registry import Registry
from tests.fs.conftest import CancelAfter, Cancelled
from tests.kit import RootOptions, roots_toml

WriteConfig = Callable[..., Path]


def config_for(
    write_config: WriteConfig, root: Path, root_options: RootOptions | None = None, extra: str = ""
) -> Path:
    return write_config(roots_toml(("main", root, "reference", root_options or {}), audit_log=None,
                                   extra=f"search_fetch_tools = true\n{extra}"))


def found(reg: Registry, query: str) -> list[str]:
    return [r["id"] for r in dr.search(reg.current, query, NoControl())["results"]]


def index_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "state" / "index").glob("main-*.sqlite3"))


def stored_text(index: Path) -> dict[str, str]:
    """Each indexed path and its text as stored, its parts put back together."""
    out: dict[str, str] = {}
    with contextlib.closing(sqlite3.connect(index)) as con:
        for path, body in con.execute(
            f"SELECT files.path, d.body FROM (SELECT rowid AS r, {fts.FILE_OF_ROW} AS fid, body "
            "FROM docs) AS d JOIN files ON files.id = d.fid ORDER BY d.r"
        ):
            out[path] = out.get(path, "") + body
    return out


def settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on every file on disk is older than the racy margin."""
    later = time.time_ns() + fts.RACY_NS + 1
    monkeypatch.setattr(fts, "now_ns", lambda: later)


@pytest.fixture
def reg(write_config: WriteConfig, tree: Path) -> Registry:
    (tree / "notes.txt").write_text("SECRET=1 zanzibar\n")
    return Registry(str(config_for(write_config, tree)), audit=False)


# -- words ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("parse_http_response", "parse_http_response parse http response"),
        ("parseHTTPResponse", "parseHTTPResponse parse HTTP Response"),
        ("utf8Decoder2", "utf8Decoder2 utf 8 Decoder 2"),
        ("__init__", "__init__ init"),
        ("plain words stay", "plain words stay"),
        ("Title Case UPPER", "Title Case UPPER"),
        ("a.b(c_d)", "a.b(c_d c d)"),
        # Case changes beyond ASCII split as they do in ASCII.
        ("größeBerechnen", "größeBerechnen größe Berechnen"),
        ("Straße", "Straße"),  # one word (it was Stra, ße)
        ("ÉtéCamelÜBER", "ÉtéCamelÜBER Été Camel ÜBER"),
        ("ΑβγΔεζ", "ΑβγΔεζ Αβγ Δεζ"),
        ("naïveParser2", "naïveParser2 naïve Parser 2"),
        ("abc漢字", "abc漢字 abc 漢字"),  # letters without case: one part
        ("漢字", "漢字"),
        ("x١٢٣y", "x١٢٣y x ١٢٣ y"),  # Arabic-Indic digits are digits
    ],
)
def test_compound_identifiers_are_kept_whole_and_split(text: str, expanded: str) -> None:
    assert tokens.expand(text) == expanded


_LETTERS = "aZq_09xyABéÉßΔδ漢字١ǅ"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_LETTERS, min_size=1, max_size=24))
def test_the_split_by_classes_is_the_ascii_split_and_loses_nothing(word: str) -> None:
    """The split by character classes gives what `_PART` gives wherever `_PART` reads case
    right (a word of ASCII letters, or with no letter that has case), and every character
    but `_` is in exactly one part."""
    by_class = [word[m.start():m.end()]
                for m in tokens._CLASS_PART.finditer(word.translate(tokens._CLASSES))]
    assert "".join(tokens.parts(word)) in (word.replace("_", ""), word)
    assert "".join(by_class) == word.replace("_", "")
    if word.isascii() or word.lower() == word.upper():
        assert by_class == tokens._PART.findall(word)


@pytest.mark.parametrize(
    ("query", "hit"),
    [
        ("http response", "src/client.py"),  # the parts of parse_http_response
        ("parse_http_response", "src/client.py"),  # the whole identifier
        ("parseHttpResponse", "src/client.py"),  # the other spelling of the same parts
        ("HTTP", "src/client.py"),
        ("decoder", "src/codec.py"),  # a part of utf8Decoder
        ("köln", "src/codec.py"),  # case and diacritics folded: Köln
        ("koln", "src/codec.py"),
        ("größe berechnen", "src/maße.py"),  # the parts of größeBerechnen
        ("berechnen", "src/maße.py"),
    ],
)
def test_code_aware_words_find_the_file(reg: Registry, tree: Path, query: str, hit: str) -> None:
    (tree / "src" / "client.py").write_text("def parse_http_response(raw):\n    pass\n")
    (tree / "src" / "codec.py").write_text("class utf8Decoder:  # Köln\n    pass\n")
    (tree / "src" / "maße.py").write_text("def größeBerechnen(x):\n    pass\n")
    assert found(reg, query)[0] == f"main/{hit}"


def test_path_and_title_outrank_the_body(reg: Registry, tree: Path) -> None:
    (tree / "a.md").write_text("# Unrelated\n" + "invoices are mentioned here once.\n" * 1)
    (tree / "b.md").write_text("# Invoices\nsee the list\n")
    (tree / "invoices.txt").write_text("see the list\n")
    assert set(found(reg, "invoices")[:2]) == {"main/b.md", "main/invoices.txt"}


@pytest.mark.parametrize(
    ("query", "first", "also"),
    [
        ("invoices", "plural.md", "singular.md"),
        ("invoice", "singular.md", "plural.md"),
        ("invoiced", "past.md", "singular.md"),
    ],
)
def test_other_forms_of_a_word_are_found_after_the_same_form(
    reg: Registry, tree: Path, query: str, first: str, also: str
) -> None:
    (tree / "singular.md").write_text("one invoice here\n")
    (tree / "plural.md").write_text("two invoices here\n")
    (tree / "past.md").write_text("it was invoiced here\n")
    got = found(reg, query)
    assert got[0] == f"main/{first}"
    assert f"main/{also}" in got


def test_a_file_longer_than_a_part_is_found_by_a_word_of_any_part_once(
    reg: Registry, tree: Path, tmp_path: Path
) -> None:
    """A file is stored in parts of about PART_CHARS characters; each is searched, the file
    is listed once, by its best part, and a change drops every part."""
    filler = "ordinary words fill the page\n" * (3 * prepare.PART_CHARS // 29)
    (tree / "long.txt").write_text("walrus at the start\n" + filler + "narwhal at the end\n")
    (tree / "short.txt").write_text("a narwhal\n")
    assert found(reg, "walrus") == ["main/long.txt"]
    assert sorted(found(reg, "narwhal")) == ["main/long.txt", "main/short.txt"]
    (index,) = index_files(tmp_path)
    with contextlib.closing(sqlite3.connect(index)) as con:
        assert con.execute("SELECT count(*) FROM docs").fetchone()[0] >= 4  # parts + short
    assert stored_text(index)["long.txt"] == prepare.prepare((tree / "long.txt").read_text())
    (tree / "long.txt").write_text("a short file now\n")
    assert found(reg, "narwhal") == ["main/short.txt"]
    with contextlib.closing(sqlite3.connect(index)) as con:
        rows = con.execute("SELECT (SELECT count(*) FROM docs), count(*) FROM files").fetchone()
    assert rows[0] == rows[1]  # one row a file again


def test_a_word_prefix_is_found_after_the_whole_words(reg: Registry, tree: Path) -> None:
    (tree / "environment.md").write_text("how the servers are set up\n")
    (tree / "env.md").write_text("the env file\n")
    assert found(reg, "env") == ["main/env.md", "main/environment.md"]


# -- freshness -----------------------------------------------------------------

VOCAB = ["alpha", "beta", "gamma", "delta"]
NAMES = [f"f{i}.txt" for i in range(6)] + [f"sub/g{i}.txt" for i in range(3)]
op = st.one_of(
    st.tuples(
        st.just("write"), st.sampled_from(NAMES), st.lists(st.sampled_from(VOCAB), max_size=4)
    ),
    st.tuples(st.just("same_size"), st.sampled_from(NAMES), st.sampled_from(VOCAB)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("move"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("search"), st.sampled_from(VOCAB), st.none()),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(op, min_size=1, max_size=25))
@example(
    ops=[("write", "f0.txt", ["alpha"]), ("search", "alpha", None), ("delete", "f0.txt", None)]
)
@example(
    ops=[("write", "f0.txt", ["gamma"]), ("search", "gamma", None), ("move", "f0.txt", "f1.txt")]
)
@example(
    ops=[("write", "f0.txt", ["beta"]), ("search", "beta", None), ("same_size", "f0.txt", "alpha")]
)
def test_every_search_sees_the_disk_as_it_is(
    write_config: WriteConfig, tmp_path: Path, ops: list[tuple[str, Any, Any]]
) -> None:
    """Writes, same-size rewrites, deletes and moves made behind the server's back, then
    searches: each answer is exactly the files holding the word now (an oracle)."""
    root = tmp_path / "fresh"
    shutil.rmtree(root, ignore_errors=True)
    (root / "sub").mkdir(parents=True)
    shutil.rmtree(tmp_path / "state" / "index", ignore_errors=True)
    reg = Registry(str(config_for(write_config, root)), audit=False)
    model: dict[str, str] = {}
    for kind, a, b in [*ops, ("search", "alpha", None), ("search", "gamma", None)]:
        if kind == "write":
            model[a] = " ".join(b)
            (root / a).write_text(model[a])
        elif kind == "same_size" and a in model:
            # The same length, another word in the same place: only the content changes.
            text = model[a]
            model[a] = (b * (len(text) // len(b) + 1))[: len(text)] if text else ""
            (root / a).write_text(model[a])
        elif kind == "delete" and a in model:
            del model[a]
            (root / a).unlink()
        elif kind == "move" and a in model and a != b:
            model[b] = model.pop(a)
            os.replace(root / a, root / b)
        elif kind == "search":
            want = {f"main/{p}" for p, text in model.items() if a in text.split()}
            # A same-size rewrite may leave a prefix ("alphaalph"); those count as prefixes.
            got = set(found(reg, a))
            prefixed = {
                f"main/{p}"
                for p, text in model.items()
                if any(w.startswith(a) for w in text.split())
            }
            assert want <= got <= prefixed, (a, model)
            # And the index itself is what a fresh build of the disk would hold.
            (index,) = index_files(tmp_path)
            assert stored_text(index) == {p: prepare.prepare(text) for p, text in model.items()}


def test_a_file_younger_than_the_clock_tick_margin_is_read_again(
    reg: Registry, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two same-size writes within one timestamp tick leave (size, mtime, ctime, inode) as
    they were: a file that young is stored as stale, so the next search reads it again."""
    (tree / "young.txt").write_text("apple\n")
    found(reg, "apple")
    (index,) = index_files(tmp_path)

    def stored() -> tuple[int, int]:
        with contextlib.closing(sqlite3.connect(index)) as con:
            row = con.execute("SELECT size, mtime FROM files WHERE path = 'young.txt'").fetchone()
        return row

    assert stored() == (6, fts.STALE)
    settle(monkeypatch)
    assert found(reg, "apple") == ["main/young.txt"]  # read again, now old enough to trust
    assert stored() == (6, (tree / "young.txt").stat().st_mtime_ns)


def test_a_write_through_the_tools_is_seen_by_the_next_search(
    write_config: WriteConfig, tmp_path: Path
) -> None:
    from app.fs.change.write import write_file

    root = tmp_path / "ws"
    root.mkdir()
    cfg = write_config(roots_toml(("main", root, "workspace"), audit_log=None,
                                  extra="search_fetch_tools = true"))
    reg = Registry(str(cfg), audit=False)
    assert found(reg, "zebra") == []
    write_file(reg.current.root("main"), "new.md", "a zebra\n")
    assert found(reg, "zebra") == ["main/new.md"]


def test_a_stopped_build_resumes_at_the_next_search(
    reg: Registry, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(600):
        (tree / f"n{i:03}.txt").write_text(f"word{i} common\n")
    monkeypatch.setattr(ranked, "BUILD_SECONDS", 0.0)
    data = dr.search(reg.current, "common", NoControl())
    assert data["truncated"] is True
    assert "the index of root 'main' is still being built" in data["note"]
    monkeypatch.setattr(ranked, "BUILD_SECONDS", 60.0)
    data = dr.search(reg.current, "word599", NoControl())
    assert data["results"][0]["id"] == "main/n599.txt"
    assert "still being built" not in data.get("note", "")


# -- denied paths, however stale the index -------------------------------------


def test_a_rule_added_on_reload_hides_indexed_files_and_rebuilds(
    write_config: WriteConfig, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "plan.txt").write_text("budget figures\n")
    (tree / "plan.md").write_text("budget notes\n")
    settle(monkeypatch)
    cfg = config_for(write_config, tree)
    reg = Registry(str(cfg), audit=False)
    assert set(found(reg, "budget")) == {"main/plan.txt", "main/plan.md"}

    def identity() -> str:
        with contextlib.closing(sqlite3.connect(index_files(tmp_path)[0])) as con:
            return con.execute("SELECT value FROM meta WHERE key = 'identity'").fetchone()[0]

    before = identity()
    config_for(write_config, tree, {"deny": ["*.txt"]})
    reg.reload()
    assert found(reg, "budget") == ["main/plan.md"]
    with contextlib.closing(sqlite3.connect(index_files(tmp_path)[0])) as con:
        assert con.execute("SELECT count(*) FROM files WHERE path LIKE '%.txt'").fetchone() == (0,)
    assert identity() != before  # the rules are part of what the index is built for


def test_a_name_allowed_on_reload_is_found(
    write_config: WriteConfig, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settle(monkeypatch)
    reg = Registry(str(config_for(write_config, tree)), audit=False)
    assert found(reg, "secret") == []  # only .env holds it
    config_for(write_config, tree, {"allow": [".env"]})
    reg.reload()
    assert found(reg, "secret") == ["main/.env"]


def test_a_limit_changed_on_reload_rebuilds_the_index(
    write_config: WriteConfig, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file over max_search_file_bytes is indexed by its path only; raising the limit
    changes no file's signature, so only a rebuild can find its words."""
    (tree / "big.txt").write_text("walrus " * 100)
    settle(monkeypatch)  # no file is re-read for being young: only the rebuild can help
    reg = Registry(str(config_for(write_config, tree, extra="max_search_file_bytes = 100")))
    assert found(reg, "walrus") == []
    config_for(write_config, tree, extra="max_search_file_bytes = 100000")
    reg.reload()
    assert found(reg, "walrus") == ["main/big.txt"]


def stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on the index is never refreshed: only the re-check stands in the way."""
    monkeypatch.setattr(fts.RootIndex, "refresh", lambda self, *a, **k: fts.Refreshed())


def test_a_file_swapped_for_a_link_to_a_denied_file_is_not_returned(
    reg: Registry, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "src" / "pkg" / "conf.txt").write_text("SECRET lives here\n")
    assert set(found(reg, "secret")) == {"main/src/pkg/conf.txt", "main/notes.txt"}
    stale(monkeypatch)
    os.unlink(tree / "notes.txt")
    os.symlink(".env", tree / "notes.txt")  # a link to a denied file
    shutil.rmtree(tree / "src" / "pkg")
    os.symlink("..", tree / "src" / "pkg")  # a directory swapped for a link
    (tree / "src" / "pkg.d").mkdir()
    assert found(reg, "secret") == []


@pytest.mark.parametrize(
    "planted",
    [
        ".env",  # denied by name
        "src/../.env",
        "node_modules/x/index.js",  # under a denied directory
        "../outside.txt",  # out of the root
        "/etc/passwd",
        "env-link.txt",  # an in-root link to .env
        "src",  # a directory
        "missing.txt",
    ],
)
def test_a_planted_row_is_never_returned(
    reg: Registry, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: str
) -> None:
    (tmp_path / "outside.txt").write_text("SECRET\n")
    os.symlink(".env", tree / "env-link.txt")
    found(reg, "warm")
    with sqlite3.connect(index_files(tmp_path)[0]) as con:
        cur = con.execute("INSERT INTO files (path) VALUES (?)", (planted,))
        con.execute(
            "INSERT INTO docs (rowid, path, title, body) VALUES (?, '', '', 'secret')",
            (cur.lastrowid,),
        )
    stale(monkeypatch)
    assert found(reg, "secret") == ["main/notes.txt"]


# -- the index file ------------------------------------------------------------


def test_the_index_is_one_private_file_beside_the_audit_log(
    reg: Registry, tmp_path: Path, tree: Path
) -> None:
    found(reg, "zanzibar")
    where = tmp_path / "state" / "index"
    assert stat.S_IMODE(where.stat().st_mode) == 0o700
    (index,) = index_files(tmp_path)
    for p in [index, *index.parent.glob(index.name + "-*")]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert not list(tree.rglob("*.sqlite3*"))  # nothing inside the root


def test_the_default_state_directory_is_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    cfg = tmp_path / "roots.json"
    cfg.write_text(f'{{"search_fetch_tools": true, "roots": {{"main": "{tree}"}}}}')
    reg = Registry(str(cfg), audit=False)
    assert found(reg, "title") == ["main/README.md"]
    assert list((tmp_path / "xdg" / "loom-fs-mcp" / "index").glob("main-*.sqlite3"))


def _plant_foreign_database(p: Path) -> None:
    sqlite3.connect(p).execute("CREATE TABLE meta (k, v)").connection.commit()
    p.chmod(0o600)


@pytest.mark.parametrize(
    "plant",
    [
        pytest.param(
            lambda p, o: (p.write_bytes(b"not a database at all" * 100), p.chmod(0o600)),
            id="garbage",
        ),
        pytest.param(lambda p, o: (p.write_text(""), p.chmod(0o644)), id="readable-by-others"),
        pytest.param(lambda p, o: p.symlink_to(o), id="a-link"),
        pytest.param(lambda p, o: _plant_foreign_database(p), id="a-foreign-database"),
    ],
)
def test_a_planted_index_file_is_replaced_not_trusted(
    reg: Registry, tmp_path: Path, plant: Callable[[Path, Path], Any]
) -> None:
    name = fts.file_name("main", reg.current.root("main").real)
    where = tmp_path / "state" / "index"
    where.mkdir(parents=True, mode=0o700)
    other = tmp_path / "other.db"
    other.write_bytes(b"keep me")
    plant(where / name, other)
    data = dr.search(reg.current, "zanzibar", NoControl())
    assert [r["id"] for r in data["results"]] == ["main/notes.txt"]
    assert "note" not in data  # served by a new index, not by the fallback
    assert other.read_bytes() == b"keep me"
    p = where / name
    assert not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) == 0o600


def test_a_corrupted_index_is_rebuilt(reg: Registry, tmp_path: Path) -> None:
    assert found(reg, "zanzibar") == ["main/notes.txt"]
    fts.index_at(str(index_files(tmp_path)[0])).close()
    (index,) = index_files(tmp_path)
    raw = bytearray(index.read_bytes())
    raw[:100] = b"\xff" * 100  # the header: SQLite refuses the file
    index.write_bytes(bytes(raw))
    for p in index.parent.glob(index.name + "-*"):
        p.unlink()
    data = dr.search(reg.current, "zanzibar", NoControl())
    assert [r["id"] for r in data["results"]] == ["main/notes.txt"]
    assert "note" not in data  # rebuilt, not fallen back


# -- when the index cannot serve -----------------------------------------------


def fallback_cases() -> list[Any]:
    return [
        pytest.param("no-fts5", "this Python's SQLite has no FTS5", id="no-fts5"),
        pytest.param("dir-is-a-file", "the index directory is not a directory", id="dir-is-a-file"),
        pytest.param("disk-full", "database or disk is full", id="disk-full"),
        pytest.param("read-only", "attempt to write a readonly database", id="read-only"),
    ]


@pytest.mark.parametrize(("how", "why"), fallback_cases())
def test_search_falls_back_to_the_scan_with_a_note(
    reg: Registry, tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch, how: str, why: str
) -> None:
    if how == "no-fts5":
        monkeypatch.setattr(fts, "_fts5", "this Python's SQLite has no FTS5 (no such module: fts5)")
    elif how == "dir-is-a-file":
        (tmp_path / "state").mkdir(exist_ok=True)
        (tmp_path / "state" / "index").write_text("")
    elif how == "read-only":
        real_connect = sqlite3.connect

        def read_only(path: str, **k: Any) -> sqlite3.Connection:
            return real_connect(f"file:{path}?mode=ro", uri=True, **k)

        monkeypatch.setattr(fts.sqlite3, "connect", read_only)
    else:
        real_connect = sqlite3.connect

        def small(*a: Any, **k: Any) -> sqlite3.Connection:
            con = real_connect(*a, **k)
            con.execute("PRAGMA max_page_count = 8")  # a full disk, as SQLite sees one
            return con

        monkeypatch.setattr(fts.sqlite3, "connect", small)
        for i in range(50):
            (tree / f"pad{i}.txt").write_text(f"filler {i} " * 400)
    data = dr.search(reg.current, "zanzibar", NoControl())
    assert [r["id"] for r in data["results"]] == ["main/notes.txt"]
    assert why in data["note"].split(";")[0]
    assert "searched by scanning the files instead" in data["note"]
    assert "truncated" not in data  # nothing was left out
    assert str(tmp_path) not in data["note"]


def test_an_index_directory_inside_a_root_is_not_used(
    write_config: WriteConfig, tree: Path
) -> None:
    cfg = write_config(roots_toml(("main", tree, "reference"),
                                  audit_log=tree / "logs" / "audit.log",
                                  extra="search_fetch_tools = true"))
    reg = Registry(str(cfg), audit=False)
    data = dr.search(reg.current, "title", NoControl())
    assert [r["id"] for r in data["results"]] == ["main/README.md"]
    assert data["note"].startswith("the index directory would be inside root 'main'")
    assert not (tree / "logs" / "index").exists()


def test_a_name_that_is_not_utf8_is_left_out_and_the_rest_is_found(
    reg: Registry, tree: Path
) -> None:
    with open(os.path.join(os.fsencode(tree), b"bad\xff.txt"), "w") as f:
        f.write("quokka\n")
    (tree / "ok.txt").write_text("quokka\n")
    (tree / "mixed.txt").write_bytes(b"quokka \xed\xa0\x80 invalid bytes in the text\n")
    assert sorted(found(reg, "quokka")) == ["main/mixed.txt", "main/ok.txt"]


def test_a_cancelled_build_keeps_its_committed_batches(
    reg: Registry, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(1000):
        (tree / f"c{i:04}.txt").write_text(f"kiwi {i}\n")
    monkeypatch.setattr(fts, "COMMIT_EVERY", 0.0)  # a batch per 256 entries
    with pytest.raises(Cancelled):
        dr.search(reg.current, "kiwi", CancelAfter(2))
    with contextlib.closing(sqlite3.connect(index_files(tmp_path)[0])) as con:
        kept = con.execute("SELECT count(*) FROM files").fetchone()[0]
    assert 256 <= kept < 1000
    assert len(found(reg, "kiwi")) == dr.RESULTS  # and the next search finishes the job
    with contextlib.closing(sqlite3.connect(index_files(tmp_path)[0])) as con:
        assert con.execute("SELECT count(*) FROM files").fetchone()[0] > 1000


def test_a_search_waiting_for_another_build_can_be_cancelled(reg: Registry) -> None:
    found(reg, "warm")
    snap = reg.current
    where = ranked.index_dir(snap)
    idx = fts.index_at(os.path.join(where, fts.file_name("main", snap.root("main").real)))
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            dr.search(snap, "kiwi", CancelAfter(3))
        except BaseException as exc:
            outcome.append(exc)

    with idx.lock:  # another call's long first build
        worker = threading.Thread(target=waiter)
        worker.start()
        worker.join(5)
        stuck = worker.is_alive()
    worker.join()
    assert not stuck
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled)


def test_two_servers_sharing_one_index_file_stay_consistent(reg: Registry, tree: Path) -> None:
    """Two processes on one state directory: each connection sees the other's commits."""
    snap = reg.current
    root = snap.root("main")
    per_file = root.max_read_bytes
    path = os.path.join(ranked.index_dir(snap), fts.file_name("main", root.real))
    fts.ensure_dir(ranked.index_dir(snap))
    one, two = fts.RootIndex(path), fts.RootIndex(path)

    def refresh(idx: fts.RootIndex) -> None:
        idx.refresh(
            root,
            ranked.identity(snap, root, per_file),
            per_file,
            deadline=time.monotonic() + 60,
            check=lambda: None,
        )

    for i in range(6):
        (tree / f"s{i}.txt").write_text(f"shared {i}\n")
        refresh(one if i % 2 else two)
        (tree / f"s{i}.txt").write_text(f"shared {i} again\n")
        if i:
            (tree / f"s{i - 1}.txt").unlink()
    refresh(one)
    refresh(two)
    with contextlib.closing(sqlite3.connect(path)) as con:
        paths = {r[0] for r in con.execute("SELECT path FROM files")}
    assert {p for p in paths if re.fullmatch(r"s\d\.txt", p)} == {"s5.txt"}
    one.close()
    two.close()


@pytest.mark.parametrize(
    "query",
    [
        "a_" * 499,  # one identifier of 500 parts
        '"*:^-+()' * 100,  # FTS5 syntax only: the scan takes it literally
        'NEAR AND OR NOT "zanzibar',  # FTS5 keywords and an open quote are words here
        "é" * 1000,
        "aB1" * 333,
        " ".join(f"w{i}" for i in range(32)),  # the most distinct words allowed
    ],
)
def test_hostile_queries_answer_in_bounds(reg: Registry, query: str) -> None:
    t = time.monotonic()
    data = dr.search(reg.current, query, NoControl())
    assert time.monotonic() - t < 10
    assert len(data["results"]) <= dr.RESULTS
    assert all(r["id"].startswith("main/") for r in data["results"])
    if "zanzibar" in query:
        assert data["results"][0]["id"] == "main/notes.txt"
