"""The prefilters of search_text say where a match may start, never later than the first one.

`FirstOf` (a SIMD multi-string scan, listing a window's matches at a time) must agree with
`bytes.find` wherever its windows fall and in whatever order it is asked; the case
spellings of a folded literal must be found in every text RE2 matches without case. A
prefilter that answered later than the first match would lose lines, so these are
generated cases against the plain definitions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest
import re2
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.fs.search import finders
from app.fs.search import regex as regex_mod
from app.fs.search.finders import Caseless, FirstOf, hyperscan
from app.fs.search.literal import LiteralMatcher
from app.fs.search.regex import RegexMatcher, _folded_piece
from app.fs.search.required import required_alternatives

if TYPE_CHECKING:
    from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12

_pieces = st.sampled_from([b"ab", b"a", b"b", b"\n", b"xy", b" "])
_bytes = st.binary(max_size=300) | st.lists(_pieces, max_size=120).map(b"".join)
_needles = st.lists(st.sampled_from([b"ab", b"aab", b"b\na", b"xyx", b"bb", b"abab", b"babx"]),
                    min_size=1, max_size=3)  # babx: holds ab, which ends before it does


@settings(max_examples=400, deadline=None)
@given(data=_bytes, needles=_needles, positions=st.lists(st.integers(0, 60), min_size=1,
                                                         max_size=6),
       window=st.sampled_from([1, 2, 3, 7]), anchor=st.booleans())
@example(data=b"xbabx", needles=[b"ab", b"babx"], positions=[0], window=7,
         anchor=False)  # ab ends first, babx starts first
@example(data=b"aaab", needles=[b"aab", b"ab"], positions=[0, 1, 2], window=7,
         anchor=False)  # asked inside a listed match
@example(data=b"xxbabx", needles=[b"ab", b"babx"], positions=[0], window=1,
         anchor=False)  # babx cut at the window's edge
@example(data=b"bbb", needles=[b"bb"], positions=[0, 1], window=7,
         anchor=False)  # an overlap that starts on the listed match's last byte
@example(data=b"ababab", needles=[b"abab", b"bab"], positions=[0, 1], window=7,
         anchor=False)  # two overlaps: the first of them
def test_first_of_finds_what_find_finds_wherever_its_windows_fall(
    data: bytes, needles: list[bytes], positions: list[int], window: int, anchor: bool,
) -> None:
    # One matcher answers several calls on the same text, from the matches it listed:
    # in order (a file's lines) and not (a new search in it), each as a fresh find.
    old = finders.LISTED
    finders.LISTED = window  # small windows: they cut through matches
    try:
        first = FirstOf(needles)
    finally:
        finders.LISTED = old
    first.anchored &= anchor  # one needle: its rare byte first, or the scan alone
    for pos in [*sorted(positions), *positions]:
        starts = [i for i in (data.find(x, pos) for x in needles) if i >= 0]
        assert first(data, pos) == (min(starts) if starts else -1), pos


def test_first_of_counts_the_lines_from_where_it_is_asked() -> None:
    # Counting reuses the list of the call that found the first match: lines before
    # `pos` are in it, and not counted; nor is a line twice, however many matches it has.
    first = FirstOf([b"ab", b"xyz"])
    text = b"ab\nab ab\nzz\nxyz ab\n" + b"ab\n" * 3
    assert first(text) == 0
    assert first.count_lines(text, 0) == 6
    assert first.count_lines(text, 9) == 4
    assert first.count_lines(text, 0, most=2) == 3


def test_first_of_lists_a_window_at_a_time() -> None:
    # A text dense with the needle: one scan answers many calls, and no scan lists more
    # than LISTED matches (a bound on what one call holds in memory).
    first = FirstOf([b"ab", b"xyz"])  # two needles: the scan, no rare-byte anchor
    scans: list[int] = []
    scan = first._scan

    def counted(haystack: Buffer, overlapping: bool = False) -> list[tuple[int, int, int]]:
        scans.append(len(memoryview(haystack)))
        return scan(haystack, overlapping)

    first._scan = counted
    text = b"ab\n" * 200_000
    at, lines = first(text, 0), 0
    while at >= 0:
        lines += 1
        at = first(text, at + 3)
    assert lines == 200_000
    assert first.window == finders.LISTED * 2 and max(scans) <= first.window + 2
    assert len(scans) < 200_000 / 1000


@settings(max_examples=300, deadline=None)
@given(data=_bytes, needle=st.sampled_from([b"ab", b"aab", b"abab", b"xyx"]),
       pos=st.integers(0, 40))
@example(data=b"x" * 9 + b"xyx", needle=b"xyx", pos=0)  # the match right after the 9th miss
def test_a_literal_whose_anchor_byte_is_common_is_still_found_first(
    data: bytes, needle: bytes, pos: int,
) -> None:
    m = LiteralMatcher(needle.decode(), True)
    for _ in range(3):  # past MAX_FALSE_CANDIDATES the matcher stops anchoring: both ways
        assert m.find(data, pos) == data.find(needle, pos)


_letters = "abdeKkSsé _.tO"


@settings(max_examples=500, deadline=None)
@given(lit=st.text(alphabet=_letters, min_size=1, max_size=12),
       flips=st.lists(st.booleans(), max_size=12), before=st.text(alphabet=_letters + "\n"),
       kelvin=st.booleans())
@pytest.mark.skipif(hyperscan is None, reason="no hyperscan wheel for this machine")
def test_a_folded_literal_holds_its_ascii_piece_in_some_case(
    lit: str, flips: list[bool], before: str, kelvin: bool,
) -> None:
    piece = _folded_piece(lit.encode())
    if piece is None:
        return
    # A text RE2 matches without case: the literal in mixed case, K and S maybe spelled
    # by their non-ASCII case partners (KELVIN SIGN, LONG S).
    shown = "".join(c.swapcase() if i < len(flips) and flips[i] else c for i, c in enumerate(lit))
    if kelvin:
        shown = shown.replace("k", "\u212a").replace("s", "\u017f")
    text = (before + shown + before).encode()
    m = re2.search(b"(?i)" + re2.escape(lit.encode()), text)
    assert m is not None
    first = Caseless(piece)(text)
    assert 0 <= first < m.end()


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="aAbB\nx", max_size=200), piece=st.sampled_from(["ab", "aba", "bAb"]),
       positions=st.lists(st.integers(0, 60), min_size=1, max_size=6),
       window=st.sampled_from([1, 2, 5]), dense=st.booleans())
@example(text="xxab", piece="ab", positions=[0], window=1, dense=True)  # at a window's edge
@pytest.mark.skipif(hyperscan is None, reason="no hyperscan wheel for this machine")
def test_caseless_finds_the_first_spelling_wherever_it_is_asked(
    text: str, piece: str, positions: list[int], window: int, dense: bool,
) -> None:
    # A text's first call stops at its first match; the next ones answer from a
    # listed window (small here: matches straddle its edges, and overlap: "aba").
    data, want = text.encode(), piece.encode().lower()
    old = finders.LISTED, finders.SCANS_TO_FIRST
    finders.LISTED = window
    finders.SCANS_TO_FIRST = 1 if dense else 8  # dense: the listing from the 2nd call on
    try:
        first = Caseless(piece.encode())
        lowered = data.lower()
        for pos in [*sorted(positions), *positions]:
            assert first(data, pos) == lowered.find(want, pos), pos
    finally:
        finders.LISTED, finders.SCANS_TO_FIRST = old


@pytest.mark.skipif(hyperscan is None, reason="no hyperscan wheel for this machine")
def test_caseless_stops_listing_a_text_whose_matches_overlap_densely() -> None:
    # `aaa` in lines of `a`: a match at every byte, each a Python call if listed. One
    # listing shows it; the text's next calls scan to their first match instead.
    first = Caseless(b"AAA")
    scan, scratch = first._every
    listings: list[int] = []

    def listed(view: Any, *a: Any) -> None:
        listings.append(len(view))
        return scan(view, *a)

    # The inferred type of `_every` keeps the stub's AnyStr unbound: no function matches it.
    first._every = (listed, scratch)  # type: ignore[assignment]
    data = (b"a" * 50 + b"\n") * 2000  # several windows of LISTED bytes
    starts = [i * 51 for i in range(2000)]
    assert [first(data, pos) for pos in starts] == starts
    assert len(listings) == 1


def test_a_case_insensitive_literal_is_found_by_its_spellings(tmp_path: object) -> None:
    m = RegexMatcher("Deprecated Since", False, literal=True)
    text = b"x\n" * 5000 + b"it is DEPRECATED since 2.0\n"
    hint = m.first(text)
    assert hint >= 0 and text.rfind(b"\n", 0, hint) + 1 == 10000
    assert m.count_lines(text, len(text), hint) == 1
    assert m.first(b"x\n" * 5000) == -1


_PATTERNS = [r"\bab\b", r"(?i)xyx", r"a+bab", "bxy", "(?i)ab.?x", r"[a-z]+xyx\b",
             r"\bab (xy|ba)\b", "aab|xyx", r"b(?:aab|xyx)+", r"ab (xy|ba)?a", "x(ab|ba)|yy"]


@settings(max_examples=300, deadline=None)
@given(data=_bytes, pattern=st.sampled_from(_PATTERNS), literal=st.booleans(),
       fold=st.booleans())
@example(data=b"ab a\nab xya\n", pattern=r"ab (xy|ba)?a", literal=False, fold=False)
@example(data=b"yy\nxab\n", pattern="x(ab|ba)|yy", literal=False, fold=False)
@example(data=b"ab xyab\nab xy\n", pattern=r"\bab (xy|ba)\b", literal=False, fold=False)
@example(data=b"ab xyab\n" * 20 + b"ab xy\nab ba\n", pattern=r"\bab (xy|ba)\b", literal=False,
         fold=False)  # more lines with the words but no match than RE2 is run on one by one
def test_lines_that_match_are_those_re2_matches_line_by_line(
    data: bytes, pattern: str, literal: bool, fold: bool,
) -> None:
    # After each matching line RE2 restarts at the next occurrence of the required
    # literal: no line between them may be skipped that RE2 alone would match.
    m = RegexMatcher(pattern, not fold, literal=literal)
    flags = ("" if not fold else "(?i)")
    one = re2.compile((flags + (re2.escape(pattern) if literal else pattern)).encode())
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the "line" after a final newline is not one
    want = [i + 1 for i, line in enumerate(lines) if one.search(line)]
    hint = m.first(data)
    got = [] if hint < 0 else [line for line, *_ in m.lines(data, len(data), hint)]
    assert got == want
    assert (0 if hint < 0 else m.count_lines(data, len(data), hint)) == len(want)


@pytest.mark.parametrize(("pattern", "words"), [
    (r"\bvalue (error|path)\b", ["value error", "value path"]),
    ("foo|bar", ["foo", "bar"]),
    (r"x(?:abc|def)+y", ["xabc", "xdef"]),
    (r"\w+ (abc|de)", [" abc", " de"]),
    # None: a group that may be absent, two groups, a bar elsewhere, flags, escapes,
    # classes, a word under 3 bytes, a named group.
    (r"value (error|path)?", None), (r"(abc|def)(ghi|jkl)", None), (r"(abc|def)|ghi", None),
    (r"(?i)foo|bar", None), (r"foo\|bar", None), (r"[|]abc|def", None), ("fo|b", None),
    (r"(?P<n>abc|def)", None), (r"v (e.r|pqr)", None), (r"abc\.d|efg", None),
])
def test_the_words_one_of_which_every_match_holds(pattern: str, words: list[str] | None) -> None:
    assert required_alternatives(pattern) == words


@pytest.mark.parametrize("make, line, lines", [
    (lambda: LiteralMatcher("ab", True), b"ab\n", 50_000),
    (lambda: RegexMatcher(r"\bvalue (error|path)\b", True), b"value error\n", 50_000),
    # Each match overlaps the next (across the line break): where the scan skipped
    # overlaps, listing the window again per line was quadratic (345 s for 100,000 lines).
    (lambda: LiteralMatcher("a\na", True), b"a\n", 49_999),
], ids=["literal", "alternation", "overlapping literal with a line break"])
def test_a_text_dense_with_the_literal_costs_time_linear_in_its_length(
    make: Any, line: bytes, lines: int,
) -> None:
    # Each line's search for the next match answers from a window listed once: listing
    # a whole window again per line was quadratic (6.8 s of CPU for 30 KB of "ab" lines).
    m = make()
    if isinstance(m, LiteralMatcher):
        assert isinstance(m.find, FirstOf)
        m.find.anchored = False  # as after a tree where its anchor byte was common
    data = line * 50_000
    t0 = time.process_time()
    count = m.count_lines(data, len(data), m.first(data))
    assert count == lines
    assert time.process_time() - t0 < 2.0


def _lines_found(pattern: str, literal: bool, data: bytes) -> list[int]:
    m = RegexMatcher(pattern, False, literal=literal)
    hint = m.first(data)
    return [] if hint < 0 else [line for line, *_ in m.lines(data, len(data), hint)]


@settings(max_examples=300, deadline=None)
@given(data=_bytes, pattern=st.sampled_from([*_PATTERNS, "xyx", "ab xy", "AAB", "bxy\u00e9"]),
       literal=st.booleans())
@example(data=b"q\nAb XY\n", pattern="ab xy", literal=True)
def test_without_hyperscan_a_search_without_case_finds_the_same_lines(
    data: bytes, pattern: str, literal: bool,
) -> None:
    """Where no `hyperscan` wheel installs, folded literals fall back to memchr of both cases
    of a rare byte and RE2 on the bare literal: the lines found are RE2's, line by line."""
    one = re2.compile(b"(?i)" + (re2.escape(pattern.encode()) if literal else pattern.encode()))
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    want = [i + 1 for i, line in enumerate(lines) if one.search(line)]
    saved = regex_mod.hyperscan
    regex_mod.hyperscan = None  # type: ignore[assignment]  # typed as the module: None is no wheel
    try:
        assert _lines_found(pattern, literal, data) == want
    finally:
        regex_mod.hyperscan = saved
    if hyperscan is not None:
        assert _lines_found(pattern, literal, data) == want


def test_without_hyperscan_a_folded_literal_gets_the_memchr_prefilter() -> None:
    saved = regex_mod.hyperscan
    regex_mod.hyperscan = None  # type: ignore[assignment]  # typed as the module: None is no wheel
    try:
        m = RegexMatcher("Deprecated Since", False, literal=True)
    finally:
        regex_mod.hyperscan = saved
    assert m.prefilter is not None and not isinstance(m.prefilter, Caseless)
    text = b"x\n" * 5000 + b"it is DEPRECATED since 2.0\n"
    assert m.prefilter(b"x\n" * 5000) == -1  # neither case of its rare byte: no match
    assert m.count_lines(text, len(text), m.first(text)) == 1
