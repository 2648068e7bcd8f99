"""The literal matcher: its bytes found as they are, or without case; each kind of literal
against a naive line-by-line reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.search.literal import LiteralMatcher

_texts = st.text(alphabet="aAbéÉ\nx", max_size=60)


def naive(text: str, query: str, fold: bool) -> list[int]:
    """The lines on which a match starts (a query with a line break spans lines)."""
    hay, needle = (text.lower(), query.lower()) if fold else (text, query)
    starts = {hay.count("\n", 0, i) + 1 for i in range(len(hay)) if hay.startswith(needle, i)}
    return sorted(starts)


@settings(max_examples=400, deadline=None)
@given(text=_texts, query=st.text(alphabet="aAbéÉ\nx", min_size=1, max_size=3),
       fold=st.booleans())
def test_the_lines_found_are_those_a_naive_scan_finds(text: str, query: str, fold: bool) -> None:
    m = LiteralMatcher(query, case_sensitive=not fold)
    data = text.encode()
    hint = m.first(data)
    got = [] if hint < 0 else [line for line, *_ in m.lines(data, len(data), hint)]
    assert got == naive(text, query, fold)
    assert m.count_lines(data, len(data), max(hint, 0)) == len(got)


@pytest.mark.parametrize(("query", "case_sensitive", "multiline", "lowered", "spelled"), [
    ("ab", True, False, False, False),
    ("a\nb", True, True, False, False),
    ("AB", False, False, True, False),  # ASCII without case: found in a lowered copy
    ("É\n", False, True, False, True),  # beyond ASCII: each character's case spellings
])
def test_each_literal_is_compiled_the_way_its_case_needs(
    query: str, case_sensitive: bool, multiline: bool, lowered: bool, spelled: bool,
) -> None:
    m = LiteralMatcher(query, case_sensitive)
    assert (m.multiline, m.lower, m.regex is not None) == (multiline, lowered, spelled)


def test_with_case_the_prefilter_is_the_match_and_without_case_it_cannot_tell() -> None:
    data = b"xx\nyy ab\n"
    assert LiteralMatcher("ab", True).first(data) == 6
    assert LiteralMatcher("zz", True).first(data) == -1
    assert LiteralMatcher("AB", False).first(data) == 0  # every file is walked
    assert LiteralMatcher("é", False).lines(b"\xc3\x89\n", 3).__next__()[0] == 1  # É
