"""Lines of a text: which ones hold a match, how a matching line is previewed, and the context
around it, against plain definitions on generated texts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.search.lines import PREVIEW_CHARS, line_hits, preview, with_context

_texts = st.lists(st.sampled_from(["", "x", "xx", "a", "ab", "b a"]), max_size=30).map(
    lambda lines: "\n".join(lines).encode())


def _finder(data: bytes, needle: bytes):
    def find(pos: int) -> int:
        return data.find(needle, pos)
    return find


@settings(max_examples=300, deadline=None)
@given(data=_texts, needle=st.sampled_from([b"a", b"ab", b"x", b"\na"]))
def test_line_hits_lists_each_line_with_a_match_once(data: bytes, needle: bytes) -> None:
    find = _finder(data, needle)
    hits = list(line_hits(data, len(data), find, find(0)))
    lines = data.split(b"\n")
    starts = {data.count(b"\n", 0, i) + 1 for i in range(len(data)) if data.startswith(needle, i)}
    assert [line for line, *_ in hits] == sorted(starts)  # the line each match starts on
    for line, start, end, pos in hits:
        assert data[start:end] == lines[line - 1] and start <= pos <= end
        assert data.startswith(needle, pos)


@pytest.mark.parametrize(("line", "col", "shown"), [
    (b"  plain text  ", 2, "  plain text  "),  # verbatim: an edit's old_text
    (b"\tdef f():\t", 1, "\tdef f():\t"),
    (b"\xef\xbb\xbfwith a BOM\r", 0, "with a BOM"),  # BOM and CR line ending dropped
    (b"a\rb \r", 0, "a\rb "),  # only the line ending's CR
    (b"bad \xff byte", 4, "bad \ufffd byte"),  # undecodable: replaced, never raised
    (b"x" * 1000 + b"NEEDLE" + b"y" * 1000, 1000, None),  # long: cut around the match
])
def test_a_preview_is_the_line_verbatim_and_cut_around_its_match(line: bytes, col: int,
                                                               shown: str | None) -> None:
    got = preview(line, col)
    if shown is not None:
        assert got == shown
        return
    assert "NEEDLE" in got and got.startswith("...") and got.endswith("...")
    assert len(got) <= PREVIEW_CHARS + 6
    assert got[3:-3] in line.decode()  # a cut piece is the line's text, untrimmed


def _naive_context(lines: list[bytes], matched: list[int], context: int
                   ) -> list[tuple[int, list[str], list[str]]]:
    """As ripgrep prints: each line at most once; a match first, else the after-context of
    the match above it, else the before-context of the match below."""
    out = []
    shown = 0
    for k, line in enumerate(matched):
        nxt = matched[k + 1] if k + 1 < len(matched) else None
        before = list(range(max(shown + 1, line - context), line))
        last = min(len(lines), line + context)
        if nxt is not None:
            last = min(last, nxt - 1)
        after = list(range(line + 1, last + 1))
        shown = max(line, last)
        out.append((line, [lines[i - 1].decode() for i in before],
                    [lines[i - 1].decode() for i in after]))
    return out


@settings(max_examples=300, deadline=None)
@given(data=_texts, context=st.integers(1, 3))
def test_context_shows_each_line_once_around_the_matches(data: bytes, context: int) -> None:
    find = _finder(data, b"a")
    items = list(with_context(line_hits(data, len(data), find, find(0)), data, len(data),
                              context))
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the "line" after a final newline is not one
    matched = [int(i["line"]) for i in items]  # type: ignore[call-overload]
    want = _naive_context([w.strip() for w in lines], matched, context)
    assert [(i["line"], i["before"], i["after"]) for i in items] == want


def test_without_context_an_item_is_the_line_and_its_preview_alone() -> None:
    data = b"one\ntwo a\nthree\n"
    find = _finder(data, b"a")
    items = list(with_context(line_hits(data, len(data), find, find(0)), data, len(data), 0))
    assert items == [{"path": "", "line": 2, "preview": "two a"}]
