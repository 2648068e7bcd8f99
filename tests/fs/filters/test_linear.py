"""The backtracking-free glob matcher: named edges of its blocks and gaps, each checked
against the reference regex (`syntax.translate`), and a cost that does not grow with the
number of wildcards. `test_glob.py` holds the exhaustive and generated comparisons."""

from __future__ import annotations

import re
import time

import pytest

from app.fs.filters.linear import linear_match
from app.fs.filters.syntax import translate

EDGES = [
    # (pattern, paths): gaps at the start, middle, end; adjacent stars joining a gap;
    # a block that must end where the name ends; a class and '?' in a chunk
    ("**/a*b*c", ["a1b2c", "x/aXbYc", "x/y/abc", "abcx", "x/ab/c"]),
    ("a*/**/b*c", ["a/b1c", "ax/y/bc", "a/bc/x", "b/a/bc"]),
    ("*a*/**", ["a/x", "xa/y/z", "xa", "b/a"]),
    ("a*b*/**/*c*d", ["ab/cd", "a1b2/x/y/1c2d", "ab/c/d", "ab/x/dc"]),
    ("**/*?[xy]*z", ["az", "1xz", "q/1y2z", "q/x/z", "xz"]),
    # no '/': asked of base names only, where a run of stars stays within the name
    ("*a***b*", ["ab", "xaybz", "ba", "aab"]),
    ("a/*a***b*", ["a/ab", "a/xa/b", "a/ba"]),
]


@pytest.mark.parametrize(("pattern", "paths"), EDGES)
def test_named_edges_answer_as_the_reference_regex(pattern: str, paths: list[str]) -> None:
    reference = re.compile(translate(pattern), re.DOTALL).fullmatch
    match = linear_match(pattern)
    assert {p: bool(match(p)) for p in paths} == {p: bool(reference(p)) for p in paths}


@pytest.mark.parametrize("stars", [4, 16, 64])
def test_a_pattern_of_many_wildcards_costs_what_a_few_do(stars: int) -> None:
    # A backtracking regex of `*a*a*...b` on a name of `a`s is exponential in the stars.
    match = linear_match("*a" * stars + "*b")
    name = "a" * 200
    t = time.process_time()
    for _ in range(20):
        assert not match(name)
    assert time.process_time() - t < 2.0
