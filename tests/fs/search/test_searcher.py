"""The searcher knows a query only through the `Matcher` interface: here it gets a stand-in
that records what it is asked, on a real root, and the guards and the sink are checked."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from app.fs.control import NoControl
from app.fs.filters.glob import compile_glob
from app.fs.search import searcher
from app.fs.search.lines import line_hits
from app.fs.search.matcher import LineHit, Matcher
from app.fs.search.options import TextOptions
from app.fs.search.searcher import Searcher
from app.fs.search.sink import LINE_COST, Sink
from app.fs.search.walk import candidates, open_walk
from tests.fs.readkit import small_root


class Recording:
    """A `Matcher` for the byte "!", which says what it was asked."""

    def __init__(self) -> None:
        self.firsts: list[bytes] = []
        self.walked: list[tuple[bytes, int]] = []

    def first(self, data: bytes) -> int:
        self.firsts.append(data)
        return data.find(b"!")

    def lines(self, buf: bytes | bytearray, n: int, hint: int = 0) -> Iterator[LineHit]:
        self.walked.append((bytes(buf), hint))
        return line_hits(buf, n, lambda pos: buf.find(b"!", pos, n), hint)

    def count_lines(self, data: bytes, n: int, hint: int = 0, most: int = -1) -> int:
        return sum(1 for _ in self.lines(data, n, hint))


def search(tmp_path: Path, files: Mapping[str, str | bytes], **kw: Any) -> tuple[Recording, Sink]:
    root = small_root(tmp_path, files)
    args: dict[str, Any] = dict(query="!", limit=100, cap=1 << 20, file_limit=1 << 20,
                                budget=1 << 20)
    args.update(kw)
    opts = TextOptions(**args)
    walk = open_walk(root, opts, "search_text")
    sink = Sink(opts, walk.name_of)
    matcher = Recording()
    checked: Matcher = matcher  # the stand-in holds the interface (mypy says so)
    Searcher(checked, sink, opts, NoControl()).run(candidates(walk, compile_glob("*")))
    return matcher, sink


def test_the_prefilter_is_asked_once_a_text_file_and_lines_only_where_it_says_yes(
    tmp_path: Path,
) -> None:
    m, sink = search(tmp_path, {"a.txt": "no\n", "b.txt": "x\ny!\n", "c.bin": b"!\0!"})
    assert m.firsts == [b"no\n", b"x\ny!\n"]  # the binary file never reaches the matcher
    assert m.walked == [(b"x\ny!\n", 3)]  # from where the prefilter saw the first match
    assert sink.hits == [{"path": "b.txt", "line": 2, "preview": "y!"}]
    assert (sink.examined, sink.binary, sink.scanned) == (3, 1, 3 + 5 + 3)


def test_a_wide_file_reaches_the_matcher_as_utf8(tmp_path: Path) -> None:
    m, sink = search(tmp_path, {"w.txt": b"\xff\xfe" + "é!\n".encode("utf-16-le")})
    assert m.firsts == ["é!\n".encode()]
    assert [h["line"] for h in sink.hits] == [1]


def test_the_budget_stops_at_the_first_file_that_does_not_fit(tmp_path: Path) -> None:
    files = {"a.txt": "!\n" * 10, "b.txt": "!\n" * 10}
    m, sink = search(tmp_path, files, budget=20 + 10 * LINE_COST + 5)
    assert sink.stopped_at == "b.txt" and sink.truncated
    assert len(m.firsts) == 1  # b.txt was never read into the matcher


def test_matching_lines_spend_the_budget_and_the_sink_says_where(tmp_path: Path) -> None:
    _, sink = search(tmp_path, {"a.txt": "!\n" * 100}, budget=200 + 4 * LINE_COST)
    assert sink.stopped_in == ("a.txt", 5) and len(sink.hits) == 5
    assert sink.spent > sink.budget


def test_files_over_the_limit_are_counted_not_read(tmp_path: Path) -> None:
    m, sink = search(tmp_path, {"big.txt": "!" * 70_000, "ok.txt": "!"}, file_limit=66_000)
    assert sink.too_large == 1 and m.firsts == [b"!"]


@pytest.mark.parametrize(("mode", "hits"), [
    ("files_with_matches", [{"path": "a.txt"}, {"path": "b.txt"}]),
    ("count", [{"path": "a.txt", "count": 2}, {"path": "b.txt", "count": 1}]),
])
def test_files_and_counts_are_tallied_into_the_sink(tmp_path: Path, mode: str,
                                                    hits: list[dict[str, object]]) -> None:
    _, sink = search(tmp_path, {"a.txt": "!\n!\n", "b.txt": "!", "c.txt": "."},
                     output_mode=mode)
    assert sink.hits == hits and sink.found == 2


def test_the_cpu_clock_stops_the_call_between_files(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(searcher, "MAX_CPU_S", 0.0)
    monkeypatch.setattr(searcher, "CLOCK_EVERY", 1)
    m, sink = search(tmp_path, {"a.txt": "!", "b.txt": "!"})
    assert sink.stopped_slow == ("b.txt", 0.0) and len(m.firsts) == 1


def test_a_full_page_stops_the_walk(tmp_path: Path) -> None:
    files = {f"f{i}.txt": "!\n" for i in range(10)}
    m, sink = search(tmp_path, files, limit=2)
    assert len(sink.hits) == 3 and len(m.firsts) == 3  # the page, and one more: has_more
    assert not sink.truncated
