"""search_files' cursor: every page walked by it is the one-shot answer, even when files
come and go between pages; a resumed call matches no entry before its cursor; a cursor
that is not this search's is refused and changes nothing.

The one-shot answer is one call with a page large enough for everything; the pages are
walked with small limits (and small output caps) on generated trees (`rgkit.make_tree`,
ignore files included), and on trees edited between pages, where no entry may come twice
and every entry that was there throughout must come.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.control import NoControl
from app.fs.search import cursor, files
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root
from tests.fs.readkit import small_root
from tests.fs.search import cursorkit, rgkit


def _opts(pattern: str, **kw: Any) -> FilesOptions:
    args: dict[str, Any] = dict(limit=10_000, cap=1 << 22)
    args.update(kw)
    return FilesOptions(pattern=pattern, **args)


def _paths(root: Root, pattern: str, **kw: Any) -> list[str]:
    return [m.path for m in search_files(root, _opts(pattern, **kw), NoControl()).matches]


def _by_cursor(root: Root, pattern: str, between: Callable[[int], None] = lambda i: None,
               **kw: Any) -> tuple[list[str], int]:
    """Every page by cursor (`between(i)` run after page i): the paths, the calls made."""
    got: list[str] = []
    token = ""
    calls = 0
    while True:
        r = search_files(root, _opts(pattern, cursor=token, **kw), NoControl())
        calls += 1
        assert calls < 500, "the cursor does not move forward"
        assert r.offset == len(got)  # the page says where it starts in the whole
        got += [m.path for m in r.matches]
        if r.next_cursor is None:
            assert not r.has_more and r.next_offset is None
            return got, calls
        assert r.has_more and r.next_offset == len(got) and r.returned > 0
        between(calls - 1)
        token = r.next_cursor


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[Root]:
    roots = []
    for seed in (3, 77, 1234):
        tmp = tmp_path_factory.mktemp(f"fcur{seed}")
        roots.append(small_root(tmp, {}))
        rgkit.make_tree(tmp / "r", seed)
    return roots


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=st.integers(0, 2), limit=st.integers(1, 12),
       pattern=st.sampled_from(["*", "*.py", "**/*.txt", "*/*", "?o*", "src/**", "[a-m]*"]),
       no_ignore=st.booleans(), cap=st.sampled_from([1 << 22, 1 << 22, 900]))
def test_pages_walked_by_cursor_are_the_one_shot_answer(
    trees: list[Root], tree: int, limit: int, pattern: str, no_ignore: bool, cap: int,
) -> None:
    root = trees[tree]
    whole = _paths(root, pattern, no_ignore=no_ignore)
    got, calls = _by_cursor(root, pattern, limit=limit, no_ignore=no_ignore, cap=cap)
    assert got == whole
    if cap > 1000:  # whole pages: no call more than the pages need
        assert calls == max(1, -(-len(whole) // limit))


def _order(path: str) -> tuple[int, tuple[str, ...]]:
    return cursor.order(tuple(path.split("/")))


NAMES = ["a", "b", "a/c", "b/a", "a/c/d", "é"]
FILES = [f"{d}/{n}" for d in NAMES for n in ("x.py", "y.txt", "z", "é.py")]
EDIT = st.tuples(st.integers(0, 20), st.booleans(), st.sampled_from([*FILES, "n/x.py"]))


@settings(max_examples=80, deadline=None)
@given(initial=st.sets(st.sampled_from(FILES), max_size=20), edits=st.lists(EDIT, max_size=12),
       limit=st.integers(1, 6), pattern=st.sampled_from(["*", "*.py", "**/c/*", "?"]),
       path=st.sampled_from(["", "a"]))
def test_pages_by_cursor_over_a_changing_tree_give_each_entry_once(
    initial: set[str], edits: list[tuple[int, bool, str]], limit: int, pattern: str, path: str,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "r"
        (top / "a").mkdir(parents=True)
        root = small_root(Path(tmp), dict.fromkeys(initial, ""))
        before = set(_paths(root, pattern, path=path))
        seen = set(before)
        gone: set[str] = set()

        def between(i: int) -> None:
            for _, add, rel in (e for e in edits if e[0] == i):
                p = top / rel
                if add:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text("")
                elif p.exists():
                    p.unlink()
                    gone.add(rel)
            seen.update(_paths(root, pattern, path=path))

        got, _ = _by_cursor(root, pattern, between, limit=limit, path=path)
    assert len(got) == len(set(got)), "an entry came twice"
    assert [_order(p) for p in got] == sorted(_order(p) for p in got)  # walk order
    assert before - gone <= set(got), "an entry there throughout was not given"
    assert set(got) <= seen  # nothing that was never there


def test_a_resumed_call_matches_no_entry_before_its_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = small_root(tmp_path, {f"d{i}/f{j}.txt": "" for i in range(4) for j in range(10)})
    first = search_files(root, _opts("*.txt", limit=25), NoControl())
    assert first.next_cursor and first.matches[-1].path == "d2/f4.txt"
    compile_glob, names = files.compile_glob, []

    def counting(pattern: str) -> Any:
        glob = compile_glob(pattern)

        def match_name(name: str) -> object:
            names.append(name)
            return glob.match_name(name)

        return dataclasses.replace(glob, match_name=match_name)

    monkeypatch.setattr(files, "compile_glob", counting)
    second = search_files(root, _opts("*.txt", limit=25, cursor=first.next_cursor), NoControl())
    assert second.offset == 25 and [m.path for m in second.matches][:1] == ["d2/f5.txt"]
    assert len(names) == 15 and second.next_cursor is None  # d2/f5.txt .. d3/f9.txt
    assert second.examined_entries == 44  # every folder is still listed


def test_a_folder_gone_between_pages_is_passed_over(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a/x": "", "a/y": "", "b/z": "", "c/w": ""})
    first = search_files(root, _opts("*", limit=5), NoControl())  # a b c a/x a/y | ...
    assert first.next_cursor and [m.path for m in first.matches][-1] == "a/y"
    shutil.rmtree(tmp_path / "r" / "b")
    rest = search_files(root, _opts("*", cursor=first.next_cursor), NoControl())
    assert [m.path for m in rest.matches] == ["c/w"] and rest.offset == 5


def _a_cursor(root: Root, **kw: Any) -> str:
    r = search_files(root, _opts("*", limit=1, **kw), NoControl())
    assert r.next_cursor
    return r.next_cursor


@pytest.mark.parametrize("spoil", [
    lambda c: c.replace(".1.", ".9.", 1),  # the count before
    lambda c: c.replace(".0.", ".1.", 1),  # the entry given again or not
    *cursorkit.SPOILT,
])
def test_a_cursor_not_given_for_this_search_is_refused(tmp_path: Path, spoil: Any) -> None:
    root = small_root(tmp_path, {"a.txt": "", "b.txt": ""})
    bad = spoil(_a_cursor(root))
    with pytest.raises(BadArgument) as e:
        search_files(root, _opts("*", limit=1, cursor=bad), NoControl())
    assert str(e.value) == cursor.INVALID
    assert str(tmp_path) not in str(e.value)


@pytest.mark.parametrize("other", [
    dict(pattern="*.txt"), dict(pattern="*", path="d"), dict(pattern="*", exclude=["*.md"]),
    dict(pattern="*", no_ignore=True), dict(pattern="*", root="other"),
])
def test_a_cursor_of_another_search_is_refused(tmp_path: Path, other: dict[str, Any]) -> None:
    root = small_root(tmp_path, {"a.txt": "", "d/b.txt": ""})
    token = _a_cursor(root)
    pattern = other.pop("pattern")
    if other.pop("root", None):  # the same folder as another root
        root = Root(name="other", role="reference", permissions=["read"],
                          real=root.real, rules=root.rules, max_read_bytes=1 << 20)
    with pytest.raises(BadArgument, match="invalid cursor"):
        search_files(root, _opts(pattern, limit=1, cursor=token, **other), NoControl())


def test_a_cursor_of_the_other_search_tool_is_refused(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "hit\n", "b.txt": "hit\n"})
    mine = _a_cursor(root)
    text = search_text(root, TextOptions(query="hit", limit=1, cap=1 << 20,
                                         file_limit=1 << 20, budget=1 << 20), NoControl())
    assert text.next_cursor
    with pytest.raises(BadArgument, match="invalid cursor"):
        search_files(root, _opts("*", limit=1, cursor=text.next_cursor), NoControl())
    with pytest.raises(BadArgument, match="invalid cursor"):
        search_text(root, TextOptions(query="hit", limit=1, cap=1 << 20, file_limit=1 << 20,
                                      budget=1 << 20, cursor=mine), NoControl())
    assert _paths(root, "*", cursor=mine) == ["b.txt"]  # its own: fine


def test_cursor_and_offset_together_are_refused(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "", "b.txt": ""})
    with pytest.raises(BadArgument, match="cursor or offset, not both"):
        _opts("*", offset=1, cursor=_a_cursor(root))
