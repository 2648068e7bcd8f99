"""Glob syntax: how a pattern is split, read into tokens and written as the reference regex."""

from __future__ import annotations

import re

import pytest

from app.errors import BadArgument
from app.fs.filters.syntax import ANY, LIT, ONE, STAR, tokens, translate, validate


@pytest.mark.parametrize(("pattern", "segments"), [
    ("*.py", ["*.py"]),
    ("src/**/x", ["src", "**", "x"]),
    ("./src/./x", ["src", "x"]),  # '.' segments name the start itself: dropped
    (".", ["*"]),  # nothing left: everything
])
def test_a_pattern_is_split_at_slashes(pattern: str, segments: list[str]) -> None:
    assert validate(pattern) == segments


@pytest.mark.parametrize(("pattern", "why"), [
    ("", "the pattern is empty"), ("   ", "the pattern is empty"),
    ("a\x00b", "contains a control character"), ("a\\b", "contains a backslash"),
    ("/etc/*", "absolute patterns are not accepted"), ("C:x", "absolute patterns"),
    ("a/../b", "'..' is not accepted"), ("a/", "empty segment"), ("x" * 1025, "longer than"),
])
def test_a_bad_pattern_is_refused_saying_why(pattern: str, why: str) -> None:
    with pytest.raises(BadArgument, match=re.escape(why)):
        validate(pattern)


@pytest.mark.parametrize(("segment", "kinds"), [
    ("a*b", [LIT, STAR, LIT]),
    ("**", [ANY]),
    ("a***", [LIT, ANY]),  # a run of stars inside a segment crosses folders too
    ("?[ab][!c]", [ONE, ONE, ONE]),
])
def test_a_segment_reads_as_tokens(segment: str, kinds: list[str]) -> None:
    assert [k for k, _ in tokens(segment, segment)] == kinds


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    ("*.py", ["a.py", ".py"], ["a/b.py", "a.pyc"]),  # a base name never holds '/'
    ("a/**", ["a/b", "a/b/c"], ["a", "b/a"]),
    ("**/x", ["x", "a/x", "a/b/x"], ["ax", "x/a"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["ab", "a/xb"]),
    ("[!a]?", ["bc", "]x"], ["ab", "/x"]),  # a negated class never matches '/'
])
def test_the_reference_regex_reads_the_semantics(pattern: str, yes: list[str],
                                                 no: list[str]) -> None:
    regex = re.compile(translate(pattern), re.DOTALL)
    assert [p for p in yes if not regex.fullmatch(p)] == []
    assert [p for p in no if regex.fullmatch(p)] == []
