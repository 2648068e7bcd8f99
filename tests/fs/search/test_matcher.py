"""The matcher interface, held by every kind of matcher a search can get.

Each kind (`text.matcher_for`: a literal with or without case, a literal holding a line
break, a regex) is checked against the same contract on generated texts: the prefilter
(`first`) never answers past the first matching line, nor "none" for a text with one;
starting at its answer changes no line found; `count_lines` counts what `lines` lists and
stops one past `most`. The searcher relies on nothing else.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.fs.search.literal import LiteralMatcher
from app.fs.search.matcher import Matcher
from app.fs.search.options import TextOptions
from app.fs.search.regex import RegexMatcher
from app.fs.search.text import matcher_for


def options(query: str, regex: bool, case_sensitive: bool) -> TextOptions:
    return TextOptions(query=query, regex=regex, case_sensitive=case_sensitive, limit=1,
                       cap=1 << 20, file_limit=1 << 20, budget=1 << 20)


KINDS = [
    # (query, regex, case_sensitive, the matcher it gets, literal (RE2 on the escaped text))
    ("ab", False, True, LiteralMatcher, None),
    ("a", False, True, LiteralMatcher, None),  # one byte: memchr, no SIMD scan
    ("ab", False, False, RegexMatcher, True),  # without case: RE2 folds as ripgrep's -i
    ("é", False, False, RegexMatcher, True),
    ("a\nb", False, True, LiteralMatcher, None),  # a line break: bytes, even without case
    ("a\nB", False, False, LiteralMatcher, None),
    ("a+b", True, True, RegexMatcher, False),
    ("a+b", True, False, RegexMatcher, False),
]


@pytest.mark.parametrize(("query", "regex", "case_sensitive", "kind", "literal"), KINDS)
def test_each_query_gets_its_kind_of_matcher(query: str, regex: bool, case_sensitive: bool,
                                             kind: type, literal: bool | None) -> None:
    m = matcher_for(options(query, regex, case_sensitive))
    assert type(m) is kind
    if literal is not None:
        assert isinstance(m, RegexMatcher) and m.query == query


QUERIES = [  # (query, regex): each kind, with and without case below
    ("ab", False), ("a", False), ("é", False), ("a\nb", False), ("b\na", False),
    ("a+b", True), (r"\bab\b", True), ("(?i)ab|xy", True), ("^a", True), ("b$", True),
    ("[a-c]é", True),
]
_texts = st.text(alphabet="abAB\nxyé É", max_size=80).map(str.encode)


def _check(m: Matcher, data: bytes) -> None:
    n = len(data)
    every = list(m.lines(data, n))
    hint = m.first(data)
    if hint < 0:
        assert every == []  # "none" only for a text without a match
        return
    # never past the first matching line (a literal with case: the first match itself)
    assert every == [] or data.count(b"\n", 0, hint) < every[0][0]
    if isinstance(m, LiteralMatcher) and m.case_sensitive:
        assert hint == every[0][3]
    assert list(m.lines(data, n, hint)) == every  # starting there loses no line
    assert m.count_lines(data, n, hint) == m.count_lines(data, n) == len(every)
    for most in (0, 1, 2):
        assert m.count_lines(data, n, hint, most) == min(len(every), most + 1)
    lines = data.split(b"\n")
    assert [line for line, *_ in every] == sorted({line for line, *_ in every})
    for line, start, end, pos in every:
        assert data[start:end] == lines[line - 1] and start <= pos <= end


@settings(max_examples=300, deadline=None)
@given(data=_texts, case=st.sampled_from(QUERIES), case_sensitive=st.booleans())
@example(data=b"x\nab\nab", case=("ab", False), case_sensitive=True)
@example(data=b"xa\nbya\nb", case=("a\nb", False), case_sensitive=False)
def test_every_matcher_keeps_the_interface_s_promises(
    data: bytes, case: Any, case_sensitive: bool,
) -> None:
    query, regex = case
    _check(matcher_for(options(query, regex, case_sensitive)), data)


@pytest.mark.parametrize(("m", "cut", "line"), [
    (LiteralMatcher("ab", True), 5, 2), (RegexMatcher("ab", False, literal=True), 5, 2),
    (RegexMatcher("a.", True), 5, 2), (LiteralMatcher("a\nb", True), 9, 3),
], ids=["literal", "literal without case", "regex", "literal with a line break"])
def test_a_prefix_of_the_text_is_searched_alone(m: Matcher, cut: int, line: int) -> None:
    # `n` cuts the text: a match that ends past it is not reported, one that ends at it is.
    data = b"xx\nab\na\nb\nab"
    assert list(m.lines(data, cut - 1)) == [] and m.count_lines(data, cut - 1) == 0
    assert [k for k, *_ in m.lines(data, cut)] == [line] and m.count_lines(data, cut) == 1
