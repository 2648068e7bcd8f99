"""The sink: what a search spent, whether it stopped short, and what its notes say, each
path spelled as the caller spelled the search's folder."""

from __future__ import annotations

import pytest

from app.fs.search.options import TextOptions
from app.fs.search.sink import LINE_COST, Sink


def sink(**kw: object) -> Sink:
    opts = TextOptions(query="x", offset=2, limit=5, cap=1000, file_limit=4096, budget=1000)
    s = Sink(opts, lambda p: "shown/" + p)
    for key, value in kw.items():
        setattr(s, key, value)
    return s


def test_a_new_sink_has_spent_nothing_and_wants_one_past_the_page() -> None:
    s = sink()
    assert (s.spent, s.found, s.hits, s.truncated, s.notes()) == (0, 0, [], False, [])
    assert (s.offset, s.want, s.mode) == (2, 8, "content")


def test_spent_is_bytes_read_and_lines_charged() -> None:
    assert sink(scanned=300, charged=2 * LINE_COST).spent == 300 + 2 * LINE_COST


NOTES = [
    # (what the sink holds, what the note says, whether the search stopped short)
    (dict(stopped_at="d/b.txt", scanned=900, examined=3),
     "stopped at the byte budget (max_search_bytes = 1000) after scanning 900 bytes in 3 "
     "files; 'shown/d/b.txt' and the files after it (breadth-first order) were not examined",
     True),
    (dict(stopped_in=("d/a.txt", 12)),
     f"each matching line counting {LINE_COST} bytes, more with context) at line 12 of "
     "'shown/d/a.txt'; the rest of it and the files after it", True),
    (dict(stopped_slow=("d/c.txt", 3.0), scanned=10, examined=1),
     "stopped after 3 s of CPU, having scanned 10 bytes in 1 files", True),
    (dict(too_large=2), "2 file(s) over 4096 bytes were not searched", False),
]


@pytest.mark.parametrize(("held", "says", "short"), NOTES)
def test_each_stop_is_noted_with_the_path_as_shown(held: dict[str, object], says: str,
                                                   short: bool) -> None:
    s = sink(**held)
    assert len(s.notes()) == 1 and says in s.notes()[0]
    assert s.truncated is short


def test_the_notes_come_in_a_fixed_order() -> None:
    s = sink(stopped_in=("a", 1), stopped_at="b", too_large=1, stopped_slow=("c", 1.0))
    notes = s.notes()
    assert [n.split(" ")[:3] for n in notes] == [
        ["stopped", "at", "the"], ["stopped", "at", "the"], ["stopped", "after", "1"],
        ["1", "file(s)", "over"]]
    assert "byte budget" in notes[0] and "matching line" in notes[1]
