"""The literal every match of a regex holds: in every match RE2 finds, on generated patterns.

A literal answered that some match lacks would lose that match's line (the prefilter would
pass over it): the tables of `test_regex.py` and `test_prefilter.py` name the shapes read;
here every answer is checked against RE2's own matches.
"""

from __future__ import annotations

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.search.required import required_alternatives, required_literal
from tests.fs.search.rgkit import safe_regex

_lines = st.text(alphabet="abfoxz12=_ .\tÉé(kKsS", max_size=40)


@settings(max_examples=400, deadline=None)
@given(pattern=safe_regex(), lines=st.lists(_lines, max_size=4))
def test_every_match_holds_the_required_literal(pattern: str, lines: list[str]) -> None:
    found = required_literal(pattern)
    if found is None:
        return
    literal, fold = found
    compiled = re2.compile(pattern)
    for line in lines:
        for m in compiled.finditer(line):
            text = m.group(0)
            assert (literal.casefold() in text.casefold()) if fold else (literal in text), (
                pattern, line, literal)


_words = st.sampled_from(["abc", "abd", "xyz", "x y", "a.c"])


@settings(max_examples=300, deadline=None)
@given(before=st.sampled_from(["", "q", r"\b", "va "]), words=st.lists(_words, min_size=2,
                                                                         max_size=3),
       lines=st.lists(st.text(alphabet="abcdxyz q.", max_size=30), max_size=4))
def test_every_match_holds_one_of_the_required_alternatives(before: str, words: list[str],
                                                            lines: list[str]) -> None:
    pattern = before + "(" + "|".join(re2.escape(w) for w in words) + ")"
    found = required_alternatives(pattern)
    if found is None:
        return
    compiled = re2.compile(pattern)
    for line in lines:
        for m in compiled.finditer(line):
            assert any(w in m.group(0) for w in found), (pattern, line, found)


def test_a_pattern_it_does_not_read_has_no_literal() -> None:
    # Unsure means none: a slower search, never a lost line.
    for pattern in (r"\x41bc", r"a(?i)b", r"\Qab\E", "a|b", "(?i)foo|bar"):
        assert required_literal(pattern) is None or required_alternatives(pattern) is None
