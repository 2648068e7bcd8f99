"""search_text: the byte matcher against a naive reference, the guards, the budget,
cancellation, progress and stable pages."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.control import NoControl
from app.fs.search import searcher
from app.fs.search.finders import MAX_FALSE_CANDIDATES, FirstOf
from app.fs.search.literal import LiteralMatcher
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root
from app.security.walk import Walker
from tests.fs.readkit import small_root


def run(root: Root, query: str, **kw: Any):
    args: dict[str, Any] = dict(path="", file_glob="*", case_sensitive=True, offset=0, limit=200,
                                cap=1 << 20, file_limit=root.max_read_bytes, budget=1 << 30,
                                control=NoControl())
    args.update(kw)
    control = args.pop("control")
    return search_text(root, TextOptions(query=query, **args), control)


# -- the matcher ------------------------------------------------------------------------

hay = st.binary(max_size=300).map(lambda b: bytes(x % 5 for x in b).translate(
    bytes.maketrans(b"\x00\x01\x02\x03\x04", b"ab\nAc")))
needles = st.text(alphabet="abAc", min_size=1, max_size=4)


def naive(data: bytes, needle: bytes, fold: bool) -> list[int]:
    lines = data.split(b"\n")
    if fold:
        return [i + 1 for i, line in enumerate(lines) if needle.lower() in line.lower()]
    return [i + 1 for i, line in enumerate(lines) if needle in line]


@settings(max_examples=500)
@given(data=hay, needle=needles, fold=st.booleans())
def test_matching_lines_are_those_of_a_naive_scan(data: bytes, needle: str, fold: bool) -> None:
    m = LiteralMatcher(needle, case_sensitive=not fold)
    got = [line for line, *_ in m.lines(data, len(data))]
    assert got == naive(data, needle.encode(), fold)
    for line, start, end, pos in m.lines(data, len(data)):
        assert data[start:end] == data.split(b"\n")[line - 1] and start <= pos < end + 1


def test_a_rare_byte_that_is_common_here_falls_back_to_a_whole_needle_search() -> None:
    first = FirstOf([b"qx"])  # anchors on a rare byte...
    data = b"q" * 1000 + b"qx\n"  # ...that is everywhere in this file
    assert first(data) == 1000
    assert first.false_candidates > MAX_FALSE_CANDIDATES
    for _ in range(40):  # a tree where it stays common: anchoring is switched off
        first(data)
    assert first.anchored is False and first(data) == 1000


def test_case_insensitive_search_folds_non_ascii_letters(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "Élan vital\n", "b.txt": "élan\nÉLAN\n", "c.txt": "elan"})
    r = run(root, "élan", case_sensitive=False)
    assert [(m.path, m.line) for m in r.matches] == [("a.txt", 1), ("b.txt", 1), ("b.txt", 2)]
    assert [m.path for m in run(root, "élan").matches] == ["b.txt"]


# -- guards, budget, results ----------------------------------------------------------


def test_guards_skip_and_count_and_the_note_says_so(tmp_path: Path) -> None:
    root = small_root(tmp_path, {
        "a.txt": "hit\n",
        "big.txt": "hit\n" * 3000,  # 12 KB, over the 8 KiB limit
        "bin.dat": b"hit\x00",
        "wide.txt": b"\xff\xfe" + "x\nhit\n".encode("utf-16-le"),
    }, max_read=8192)
    r = run(root, "hit")
    assert [(m.path, m.line) for m in r.matches] == [("a.txt", 1), ("wide.txt", 2)]
    assert (r.skipped_too_large, r.skipped_binary, r.examined_files) == (1, 1, 3)
    assert not r.truncated and r.note == "1 file(s) over 8192 bytes were not searched"


def test_the_byte_budget_stops_the_search_and_names_what_was_not_examined(
    tmp_path: Path,
) -> None:
    files = {f"d{i}/f{j}.txt": "x" * 99 + "\n" for i in range(3) for j in range(5)}
    files["d2/f4.txt"] = "hit\n"
    root = small_root(tmp_path, files)
    r = run(root, "hit", budget=1000)
    # A cursor goes on from the first file not examined (an offset would start again).
    assert r.truncated and r.matches == [] and r.has_more and r.next_offset is None
    assert r.next_cursor is not None
    assert r.scanned_bytes == 1000 and r.examined_files == 10
    assert r.note == (
        "stopped at the byte budget (max_search_bytes = 1000) after scanning 1000 bytes in "
        "10 files; 'd2/f0.txt' and the files after it (breadth-first order) were not examined: "
        "narrow the search with path=, file_glob= or exclude=; call again with "
        "cursor=next_cursor to go on from where it stopped")
    rest = run(root, "hit", budget=1000, cursor=r.next_cursor)
    assert not rest.truncated and [m.path for m in rest.matches] == ["d2/f4.txt"]
    assert rest.examined_files == 5 and not rest.has_more and rest.next_cursor is None
    narrowed = run(root, "hit", budget=1000, path="d2")
    assert not narrowed.truncated and [m.path for m in narrowed.matches] == ["d2/f4.txt"]


def test_previews_are_cut_around_the_match_on_long_lines(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "a" * 5000 + "NEEDLE" + "b" * 5000 + "\n"})
    (m,) = run(root, "NEEDLE").matches
    assert m.preview.startswith("...") and m.preview.endswith("...")
    assert "NEEDLE" in m.preview and len(m.preview) <= 210


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(1, 30))
def test_pages_walked_by_next_offset_equal_the_whole(tmp_path_factory: pytest.TempPathFactory,
                                                     limit: int) -> None:
    root = _paged_root(tmp_path_factory)
    whole = [(m.path, m.line) for m in run(root, "hit").matches]
    got: list[tuple[str, int]] = []
    offset = 0
    while True:
        r = run(root, "hit", offset=offset, limit=limit)
        got += [(m.path, m.line) for m in r.matches]
        if not r.has_more:
            break
        assert r.next_offset == offset + r.returned
        offset = r.next_offset
    assert got == whole and len(whole) == 60


_PAGED: dict[str, Root] = {}


def _paged_root(factory: pytest.TempPathFactory) -> Root:
    if "r" not in _PAGED:
        files = {f"p{i % 4}/f{i:02d}.txt": "hit\nmiss\nhit again\n" for i in range(30)}
        _PAGED["r"] = small_root(factory.mktemp("paged"), files)
    return _PAGED["r"]


# -- cancellation and progress --------------------------------------------------------


class Counting(NoControl):
    def __init__(self, stop_after: int | None = None) -> None:
        self.checks = 0
        self.stop_after = stop_after
        self.reports: list[tuple[float, float | None, str | None]] = []

    def check(self) -> None:
        self.checks += 1
        if self.stop_after is not None and self.checks > self.stop_after:
            raise RuntimeError("cancelled")

    def progress(self, done: float, total: float | None = None,
                 message: str | None = None) -> None:
        self.reports.append((done, total, message))


def test_a_cancelled_search_stops_soon(tmp_path: Path) -> None:
    root = small_root(tmp_path, {f"d{i}/f{j}.txt": "x\n" for i in range(10) for j in range(10)})
    opened: list[str] = []
    real_open = os.open

    def spy(name: str, *a: Any, **kw: Any) -> int:
        opened.append(name)
        return real_open(name, *a, **kw)

    ctl = Counting(stop_after=5)
    with pytest.raises(RuntimeError), pytest.MonkeyPatch.context() as mp:
        mp.setattr(searcher.os, "open", spy)
        run(root, "nothing", control=ctl)
    assert len([n for n in opened if n.startswith("f")]) <= 6  # of 100 files


def test_progress_is_reported_at_most_every_interval(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = small_root(tmp_path, {f"d{i}/f.txt": "x\n" for i in range(20)})
    ctl = Counting()
    run(root, "nothing", control=ctl)
    assert ctl.reports == []  # a short search: no progress
    monkeypatch.setattr(searcher, "PROGRESS_EVERY", 0.0)
    run(root, "nothing", control=ctl)
    done = [d for d, _, _ in ctl.reports]
    assert len(done) >= 10 and done == sorted(done)
    assert ctl.reports[-1][2] == f"{int(done[-1])} files searched, 0 matches"


class _Vanishing:
    """An entry whose type the listing did not give, gone before its lstat."""

    name = "b.txt"

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        raise FileNotFoundError(2, "gone")


def test_an_entry_gone_before_its_type_is_known_is_skipped_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = small_root(tmp_path, {"a.txt": "needle\n", "c.txt": "needle\n"})
    real_dirs = Walker.dirs

    def dirs(self: Any) -> Any:
        for d in real_dirs(self):
            gone = cast("os.DirEntry[str]", _Vanishing())  # a stand-in: name and is_file
            yield d._replace(entries=[d.entries[0], gone, *d.entries[1:]])

    monkeypatch.setattr(Walker, "dirs", dirs)
    r = run(root, "needle")
    assert [(m.path, m.line) for m in r.matches] == [("a.txt", 1), ("c.txt", 1)]
