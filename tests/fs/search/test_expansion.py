"""Counted repetitions are written out before RE2 compiles them: a bound on that size.

A pattern whose `{n,m}` counts add up to more than `MAX_EXPANDED` items is
refused with a clear error before RE2 sees it (compiling `a{0,1000}` written 111
times took 37 s of CPU); every pattern under it compiles in a fraction of a
second, whatever its shape (generated).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.control import NoControl
from app.fs.search.expansion import MAX_EXPANDED, expanded_size
from app.fs.search.options import TextOptions
from app.fs.search.regex import RegexMatcher
from app.fs.search.text import search_text
from tests.fs.readkit import small_root


@pytest.mark.parametrize(("pattern", "size"), [
    ("abc", 3),
    ("a{0,1000}" * 4, 4000),
    ("(?:ab){3}", 6),
    ("(?i)a{5}", 5),  # a flags group is no item
    ("[{]{3}", 3),  # a `{` in a class is a character
    (r"\p{L}{10}", 10),
    (r"\x{41}{3}", 3),
    (r"\Qa{5}\E", 4),  # quoted: characters, not a count
    (r"\Qab", 2),
    ("x{,5}", 5),  # not a count in RE2: five characters
    ("(?P<n>ab){2}", 4),
    ("(a|bc){2}", 6),  # alternatives added up, never below RE2's size
    ("((a){10}){10}", 100),
    ("[[:alpha:]{]{2}", 2),
    ("a{3,}", 3),
    (r"\{5}", 3),  # an escaped `{` opens no count
    ("(a{10}", 10),  # unclosed: RE2 refuses it anyway
])
def test_the_written_out_size_of_a_pattern(pattern: str, size: int) -> None:
    assert expanded_size(pattern) == size


HEAVY = [
    "a{0,1000}" * 111,
    "[ab]{0,1000}" * 83,
    "(?:a|b){0,1000}" * 66,
    "(?i)" + "k{0,1000}" * 110,
    "(?:a{0,100}){10}" * 5,
    "a{0,1000}" * 4 + "b{2}",
]


@pytest.mark.parametrize("pattern", HEAVY, ids=lambda p: p[:24])
def test_a_pattern_too_large_written_out_is_refused_before_it_compiles(
    tmp_path: Path, pattern: str,
) -> None:
    root = small_root(tmp_path, {"a.txt": "aaa\n"})
    t = time.process_time()
    with pytest.raises(BadArgument, match=r"^invalid regex: its counted repetitions"):
        search_text(root, TextOptions(query=pattern, file_glob="*", case_sensitive=True,
                                      offset=0, limit=5, cap=1 << 16, file_limit=1 << 20,
                                      budget=1 << 24, regex=True), NoControl())
    assert time.process_time() - t < 1.0  # compiling the first of them took 37 s
    # The same text searched as a literal is plain text: no count to write out.
    r = search_text(root, TextOptions(query=pattern, file_glob="*", case_sensitive=True,
                                      offset=0, limit=5, cap=1 << 16, file_limit=1 << 20,
                                      budget=1 << 24), NoControl())
    assert r.returned == 0


@pytest.mark.parametrize("pattern", [
    r"\d{1,3}(\.\d{1,3}){3}", "[0-9a-f]{40}", "foo.{0,200}bar", "a{0,1000}" * 4, r"\w{2,}",
    "(?:ab|cd){0,1000}", "(?:ab|cd){0,500}|x{0,1000}",
])
def test_patterns_of_usual_counts_still_run(pattern: str) -> None:
    RegexMatcher(pattern, True)


_ATOMS = ["a", ".", r"\w", "[^/]", "(?:ab|c)", "(?i)k", r"\d", "[a-z0-9_]"]
_COUNTS = ["{0,%d}", "{1,%d}", "{%d}", "{%d,}", "?", "*", ""]
# Runs of one atom under one count, since RE2 merges adjacent repeats of an atom and
# writes the merged count out (the 37 s case: `a{0,1000}` 111 times); a few runs a pattern.
_run = st.tuples(
    st.sampled_from(_ATOMS), st.sampled_from(_COUNTS),
    st.one_of(st.sampled_from([1000, 500]), st.integers(1, 1000)), st.integers(1, 120),
).map(lambda r: (r[0] + (r[1] % r[2] if "%" in r[1] else r[1])) * r[3])
_patterns = st.lists(_run, min_size=1, max_size=4).map(lambda runs: "".join(runs)[:1000])


@settings(max_examples=60, deadline=None)
@given(pattern=_patterns)
def test_every_pattern_either_is_refused_or_compiles_in_a_fraction_of_a_second(
    pattern: str,
) -> None:
    t = time.process_time()
    try:
        RegexMatcher(pattern, True)
    except BadArgument:
        return
    assert time.process_time() - t < 1.0, (expanded_size(pattern), MAX_EXPANDED)
