"""search_text's cursor: every page walked by it is exactly the one-shot answer, a resumed
call reads no file before its cursor, and a cursor that is not this search's is refused.

The one-shot answer is one call with a page and a budget large enough for everything; the
pages are walked with small limits and small byte budgets (a budget stop is resumed too),
in every output mode, with and without context, on generated trees (`rgkit.make_tree`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.control import NoControl
from app.fs.search import cursor
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root
from tests.fs.readkit import small_root
from tests.fs.search import cursorkit, rgkit


def _opts(root: Root, query: str, **kw: Any) -> TextOptions:
    args: dict[str, Any] = dict(limit=10_000, cap=1 << 22, file_limit=root.max_read_bytes,
                                budget=1 << 30, regex=True)
    args.update(kw)
    return TextOptions(query=query, **args)


def _items(r: Any) -> list[Any]:
    data = r.model_dump(mode="json")
    return data.get("matches") or data.get("files") or data.get("counts") or []


def _by_cursor(root: Root, query: str, **kw: Any) -> tuple[list[Any], int, int]:
    """Every page by cursor: the items, the files the calls examined, the calls made."""
    items: list[Any] = []
    examined = calls = 0
    token = ""
    while True:
        r = search_text(root, _opts(root, query, cursor=token, **kw), NoControl())
        calls += 1
        assert calls < 500, "the cursor does not move forward"
        assert r.offset == len(items)  # the page says where it starts in the whole
        items += _items(r)
        examined += r.examined_files
        if r.next_cursor is None:
            assert not r.truncated or r.examined_files == 0
            return items, examined, calls
        assert r.has_more
        token = r.next_cursor


@pytest.fixture(scope="module")
def cursor_tree(tmp_path_factory: pytest.TempPathFactory) -> Root:
    tmp = tmp_path_factory.mktemp("cur")
    root = small_root(tmp, {}, max_read=1 << 20)
    rgkit.make_tree(tmp / "r", 77)
    return root


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.sampled_from(["foo", "x*", r"\w+", "(?i)bar|zz", "^$", r"\bé", "a"]),
       mode=st.sampled_from(["content", "files_with_matches", "count"]),
       context=st.sampled_from([0, 0, 1, 3]), limit=st.integers(1, 40),
       budget=st.sampled_from([1 << 30, 150_000, 90_000]))  # each over the largest file
def test_pages_walked_by_cursor_are_the_one_shot_answer(
    cursor_tree: Root, query: str, mode: str, context: int, limit: int, budget: int,
) -> None:
    kw = dict(output_mode=mode, context=context)
    whole = search_text(cursor_tree, _opts(cursor_tree, query, **kw), NoControl())
    assert not whole.truncated and not whole.has_more and whole.next_cursor is None
    got, examined, calls = _by_cursor(cursor_tree, query, limit=limit, budget=budget, **kw)
    assert got == _items(whole)
    # A resumed call reads no file before its cursor: at most the cursor's file again.
    assert examined <= whole.examined_files + calls - 1


def test_a_resumed_call_opens_no_file_before_its_cursor(tmp_path: Path) -> None:
    files = {f"d{i}/f{j}.txt": "hit\n" for i in range(4) for j in range(10)}
    root = small_root(tmp_path, files)
    first = search_text(root, _opts(root, "hit", limit=25), NoControl())
    assert first.examined_files == 26 and first.next_cursor  # 25 and the one that says more
    second = search_text(root, _opts(root, "hit", limit=25, cursor=first.next_cursor),
                         NoControl())
    assert second.offset == 25 and second.examined_files == 15  # d2/f5.txt .. d3/f9.txt
    assert [m.path for m in second.matches or []][:1] == ["d2/f5.txt"]
    assert second.next_cursor is None


def test_a_file_gone_between_pages_is_passed_over(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a/x.txt": "hit\nhit\n", "a/y.txt": "hit\n", "b/z.txt": "hit\n"})
    first = search_text(root, _opts(root, "hit", limit=1), NoControl())
    (tmp_path / "r" / "a" / "x.txt").unlink()
    rest, _, _ = _by_cursor(root, "hit", limit=1)
    assert [m["path"] for m in rest] == ["a/y.txt", "b/z.txt"]
    again = search_text(root, _opts(root, "hit", limit=5, cursor=first.next_cursor), NoControl())
    assert [m.path for m in again.matches or []] == ["a/y.txt", "b/z.txt"]


def _a_cursor(root: Root) -> str:
    r = search_text(root, _opts(root, "hit", limit=1), NoControl())
    assert r.next_cursor
    return r.next_cursor


@pytest.mark.parametrize("spoil", [
    lambda c: "",
    lambda c: c.replace(".1.", ".9.", 1),  # the count shown
    *cursorkit.SPOILT,
])
def test_a_cursor_not_given_for_this_search_is_refused(tmp_path: Path, spoil: Any) -> None:
    root = small_root(tmp_path, {"a.txt": "hit\nhit\n", "b.txt": "hit\n"})
    bad = spoil(_a_cursor(root))
    if not bad:
        return  # no cursor: the first page (not an error)
    with pytest.raises(BadArgument) as e:
        search_text(root, _opts(root, "hit", limit=1, cursor=bad), NoControl())
    assert str(e.value) == cursor.INVALID
    assert str(tmp_path) not in str(e.value)


@pytest.mark.parametrize("other", [
    dict(query="hi"), dict(query="hit", output_mode="count"), dict(query="hit", context=1),
    dict(query="hit", case_sensitive=False), dict(query="hit", path="d"),
    dict(query="hit", exclude=["*.md"]), dict(query="hit", no_ignore=True),
    dict(query="hit", regex=False),
])
def test_a_cursor_of_another_search_is_refused(tmp_path: Path, other: dict[str, Any]) -> None:
    root = small_root(tmp_path, {"a.txt": "hit\nhit\n", "d/b.txt": "hit\n"})
    token = _a_cursor(root)
    query = other.pop("query")
    with pytest.raises(BadArgument, match="invalid cursor"):
        search_text(root, _opts(root, query, limit=1, cursor=token, **other), NoControl())
    search_text(root, _opts(root, "hit", limit=5, cursor=token), NoControl())  # its own: fine


def test_cursor_and_offset_together_are_refused(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "hit\nhit\n"})
    with pytest.raises(BadArgument, match="cursor or offset, not both"):
        _opts(root, "hit", offset=1, cursor=_a_cursor(root))
