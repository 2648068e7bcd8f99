"""The matching levels of `app.fs.change.match` (docs/tools.md, "Matching levels"): each
slip is found at its level and no earlier one, with the replacement the file needs; a level
that finds two places refuses and names them; nothing is placed by similarity; the work is
linear in the file whatever its repetition."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.change.closest import closest
from app.fs.change.edit import Level
from app.fs.change.match import LEVELS, MAX_CANDIDATES, Ambiguous, Matcher, NoPlace

PY = "def f(x):\n    if x:\n        return 1\n    return 2\n"
TABS = PY.replace("    ", "\t")


def applied(text: str, old: str, new: str, **kw: object) -> tuple[str, str, int]:
    """(the edited text, the level, the line) of one placement."""
    place = Matcher(text, "f.py").place(old, new, **kw)  # type: ignore[arg-type]
    return text[: place.lo] + place.new + text[place.hi :], place.level, place.line


# (file, old_text, new_text, level, the file after)
LEVEL_CASES = [
    # exact: a substring anywhere, a CRLF file's "\r\n" for the agent's "\n"
    (PY, "return 1", "return 9", "exact", PY.replace("return 1", "return 9")),
    (PY.replace("\n", "\r\n"), "if x:\n        return 1\n", "if y:\n        return 1\n",
     "exact", PY.replace("if x", "if y").replace("\n", "\r\n")),
    # line endings and blank lines at the ends
    (PY, "\n\n    if x:\n        return 1\n\n", "\n\n    if y:\n        return 1\n\n",
     "line_endings", PY.replace("if x", "if y")),
    (PY, "    return 2\r\n", "    return 3\r\n", "line_endings", PY.replace("2", "3")),
    ("a\r\nb\nc\r\n", "b\r\n", "B\n", "line_endings", "a\r\nB\nc\r\n"),
    (PY, "    if x:\n        return 1\n\n\n", "    if x:\n        return 1\n\n\n    pass\n",
     "line_endings", PY.replace("return 1\n", "return 1\n\n\n    pass\n")),
    # trailing whitespace
    (PY, "    if x:  \n        return 1\t\n", "    if x:\n        return 5\n",
     "trailing_space", PY.replace("return 1", "return 5")),
    ("a  \nb\n", "a\nb", "c", "trailing_space", "c\n"),
    # indentation: moved by the one delta, relative indentation kept
    (PY, "if x:\n    return 1", "if x:\n    return 1\n    # done", "indentation",
     PY.replace("return 1\n", "return 1\n        # done\n")),
    (PY, " " * 12 + "if x:\n" + " " * 16 + "return 1", " " * 12 + "if y:\n" + " " * 16
     + "return 1", "indentation", PY.replace("if x", "if y")),
    # ... tabs against spaces, in the file's own character
    (TABS, "    if x:\n        return 1", "    if x:\n        return 5\n        pass",
     "indentation", TABS.replace("return 1\n", "return 5\n\t\tpass\n")),
    (PY, "\tif x:\n\t\treturn 1", "\tif x:\n\t\treturn 5", "indentation",
     PY.replace("return 1", "return 5")),
    # ... spaces at multiples of 8 (their step) where the copy's tab stood for 4
    ("        a = 1\n        if b:\n                c = 3\n", "\t\ta = 1\n\t\tif b:\n\t\t\t\tc = 3",
     "\t\ta = 2\n\t\tif b:\n\t\t\t\tc = 3", "indentation",
     "        a = 2\n        if b:\n                c = 3\n"),
    # typographic look-alikes, folded in the replacement when the file has none
    ('s = "hi" - x\n', "s = \u201chi\u201d \u2014 x", "s = \u201cho\u201d \u2014 x", "punctuation",
     's = "ho" - x\n'),
    ("wait...\nx = 'a'\n", "wait\u2026\nx = \u2018a\u2019", "wait\u2026\nx = \u2018b\u2019",
     "punctuation", "wait...\nx = 'b'\n"),
    ("a b\n", "a\u00a0b", "a\u00a0c", "punctuation", "a c\n"),
    ("q = \u201cx\u201d\n", 'q = "x"', 'q = "y"', "punctuation", 'q = "y"\n'),
    # this server's read prefixes, consecutive, on every line
    (PY, "2     if x:\n3         return 1", "2     if z:\n3         return 1", "line_numbers",
     PY.replace("if x", "if z")),
    (PY, " 2 |     if x:\n 3 |         return 1", "    if z:\n        return 1", "line_numbers",
     PY.replace("if x", "if z")),
    ("a\n\nb\n", "1 a\n2\n3 b", "1 a\n2\n3 c", "line_numbers", "a\n\nc\n"),
]


@pytest.mark.parametrize(("text", "old", "new", "level", "after"), LEVEL_CASES)
def test_each_slip_is_found_at_its_level_with_the_replacement_the_file_needs(
    text: str, old: str, new: str, level: str, after: str
) -> None:
    got, found, _line = applied(text, old, new)
    assert (found, got) == (level, after)


def test_the_answer_names_exactly_the_levels_the_matcher_knows() -> None:
    assert get_args(Level) == LEVELS


# (file, old_text): the same block twice, told apart only by what a level ignores
AMBIGUOUS = [
    ("x = 1\ny\nx = 1\n", "x = 1", "exact", [1, 3]),
    ("a\nb\n\na\nb\n", "a\nb\n\n\n", "line_endings", [1, 4]),
    ("a \nb\na\t\nb\n", "a\nb", "trailing_space", [1, 3]),
    ("def f():\n    a\n    b\nclass C:\n        a\n        b\n", "  a\n  b", "indentation",
     [2, 5]),
    ("s = 'x'\ns = 'x' \n", "s = \u2018x\u2019", "punctuation", [1, 2]),
    ("k\nk\n", "1 k", "line_numbers", [1, 2]),
]


@pytest.mark.parametrize(("text", "old", "level", "lines"), AMBIGUOUS)
def test_two_places_at_the_deciding_level_are_refused_by_their_lines(
    text: str, old: str, level: str, lines: list[int]
) -> None:
    with pytest.raises(Ambiguous) as info:
        Matcher(text, "f.py").place(old, "NEW")
    assert (info.value.level, info.value.lines) == (level, lines)
    assert "lines " + ", ".join(map(str, lines)) in info.value.message


def test_an_exact_place_wins_over_looser_ones() -> None:
    # "a\nb" is exact at line 3; lines 1-2 match it only with their trailing spaces ignored
    assert applied("a \nb\na\nb\n", "a\nb", "c")[1:] == ("exact", 3)


# (file, old_text): near misses no level may place
NOT_PLACED = [
    ("x\n  y\nx\n    y\n", "x\ny"),  # relative indentation differs from both
    (PY, "if x:\n    return 9"),  # a changed word
    (PY, "1 def f(x):\n3     if x:"),  # numbers that skip
    (PY, "    if x:\n\n        return 1"),  # a blank line inside
    (PY, "\n\n"),  # nothing but blank lines
]


@pytest.mark.parametrize(("text", "old"), NOT_PLACED)
def test_nothing_is_placed_by_similarity(text: str, old: str) -> None:
    with pytest.raises(NoPlace, match=r"old_text not found in 'f.py' \(0 occurrences\)"):
        Matcher(text, "f.py").place(old, "NEW")


def test_a_line_number_chooses_among_places_and_a_tie_refuses() -> None:
    text = "x\nx\nx\n"
    assert applied(text, "x", "y", near_line=3, whole_lines=True) == ("x\nx\ny\n", "exact", 3)
    with pytest.raises(Ambiguous):  # lines 1 and 3, both one away from 2
        Matcher("x\ny\nx\n", "f.py").place("x", "z", near_line=2, whole_lines=True)


def test_start_and_at_end_limit_where_a_place_may_be() -> None:
    text = "a\nb\na\nb\n"
    assert applied(text, "a\n", "c\n", start=2, whole_lines=True)[1:] == ("exact", 3)
    assert applied(text, "a\nb\n", "c\n", at_end=True)[1:] == ("exact", 3)
    with pytest.raises(NoPlace):
        Matcher(text, "f.py").place("a\n", "c\n", start=5, whole_lines=True)


def test_whole_lines_refuses_a_place_inside_a_line() -> None:
    with pytest.raises(NoPlace):
        Matcher("xab\n", "f.py").place("ab\n", "c\n", whole_lines=True)


def test_removed_lines_take_their_line_end_with_them() -> None:
    assert applied("a\nb\nc\n", "b  \n", "")[0] == "a\nc\n"
    assert applied("a\nb\nc", "c  \n", "")[0] == "a\nb"


# -- the closest block ----------------------------------------------------------------------


def test_the_closest_block_names_its_lines_and_the_difference() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    old = "line 40\nline 41\nline 4two\nline 43\n"
    got = closest(Matcher(text, "f.py"), old)
    assert got is not None
    assert got.startswith("closest block: lines 41-44 (75% similar)")
    assert "-line 4two\n+line 42" in got


def test_no_closest_block_when_no_line_of_old_text_is_in_the_file() -> None:
    assert closest(Matcher(PY, "f.py"), "nothing\nalike\n") is None


def test_the_closest_block_shows_a_short_diff_whatever_old_texts_size() -> None:
    text = "".join(f"v{i}\n" for i in range(20_000))
    old = "".join(f"w{i}\n" if i % 2 else f"v{i}\n" for i in range(2_000))
    got = closest(Matcher(text, "f.py"), old)
    assert got is not None and len(got.splitlines()) <= 20


# -- what it costs --------------------------------------------------------------------------


@pytest.mark.parametrize("level_old", [
    "x\n" * 1999 + "y\n",  # repeated lines, found at no level: a naive scan is n x m
    "  x\n" * 1999 + "  y\n",
])
def test_the_work_is_linear_in_the_file_whatever_its_repetition(level_old: str) -> None:
    text = "x\n" * 100_000
    matcher = Matcher(text, "f.py")
    with pytest.raises(NoPlace):
        matcher.place(level_old, "z")
    closest(matcher, level_old)
    assert matcher.work <= 10 * 100_000


# -- the property -----------------------------------------------------------------------


blocks = st.lists(st.sampled_from(["a", "  a", "\tb", "b ", "", "c\u2019", "c'"]),
                  min_size=1, max_size=12)


@settings(max_examples=400, deadline=None)
@given(lines=blocks, lo=st.integers(0, 11), n=st.integers(1, 4),
       slip=st.sampled_from(["none", "indent", "strip", "crlf", "quote", "numbers"]))
def test_an_edit_lands_at_the_one_place_it_names_or_changes_nothing(
    lines: list[str], lo: int, n: int, slip: str
) -> None:
    """Whatever the slip, a placed edit replaces lines the slipped copy stands for: its
    lines, compared as loosely as the level, are the file's at the place; never others."""
    text = "\n".join(lines) + "\n"
    lo = min(lo, len(lines) - 1)
    block = lines[lo : lo + n]
    copy = {
        "none": block,
        "indent": ["    " + x if x.strip() else x for x in block],
        "strip": [x.strip() for x in block],
        "crlf": [x + "\r" for x in block],
        "quote": [x.replace("'", "\u2019") for x in block],
        "numbers": [f"{lo + 1 + k} {x}" for k, x in enumerate(block)],
    }[slip]
    old = "\n".join(copy)
    if not old.strip():
        return
    matcher = Matcher(text, "f.py")
    try:
        place = matcher.place(old, "NEW")
    except (NoPlace, Ambiguous):
        return
    got = text[: place.lo] + place.new + text[place.hi :]
    assert got.count("NEW") == 1
    placed = text[place.lo : place.hi].split("\n")
    if place.level == "exact":
        assert text[place.lo : place.hi] == old
    else:
        want = [x for x in copy if x.strip()] if slip != "numbers" else None
        fold = str.maketrans("\u2019", "'")
        if want is not None:
            assert [x.strip().translate(fold) for x in placed if x.strip()] == [
                x.strip().translate(fold) for x in want]


# Places whose keys agree but whose check fails late, everywhere: a naive check costs
# lines x old_text lines (here 10^8, a server frozen for a minute).
def near_everywhere() -> tuple[str, str]:
    text = ("x\n" * 999 + "  x\n") * 100  # every window of 1,000 lines holds one indented line
    return text, "x \n" * 1000  # a trailing space: no exact place


def test_places_that_fail_their_check_late_everywhere_cost_a_bounded_work() -> None:
    text, old = near_everywhere()
    matcher = Matcher(text, "f.py")
    with pytest.raises(BadArgument):
        matcher.place(old, "z")
    assert matcher.work <= 10 * text.count("\n") + MAX_CANDIDATES * 2 * 1000


# -- against a naive oracle -----------------------------------------------------------------


def oracle(text: str, old: str) -> tuple[str, list[int]] | None:
    """(level, first lines of its places) at the first level with a place, by brute force:
    every offset for `exact`, every window of lines for the others (no tabs: a column is a
    character)."""
    starts = [i for i in range(len(text)) if text.startswith(old, i)]
    if starts:
        return "exact", [text.count("\n", 0, i) + 1 for i in starts]
    lines = [x.removesuffix("\r") for x in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    parts = [x.removesuffix("\r") for x in old.split("\n")]
    body = [i for i, x in enumerate(parts) if x.strip()]
    if not body:
        return None
    core = parts[body[0] : body[-1] + 1]
    folds = str.maketrans({"\u2019": "'", "\u00a0": " "})
    keys = [lambda s: s, str.rstrip, str.strip, lambda s: s.strip().translate(folds)]
    numbered = [x.split(" ", 1)[1] if x.split(" ", 1)[0] == str(n) and " " in x else None
                for n, x in enumerate(core, int(core[0].split(" ", 1)[0])
                                      if core[0].split(" ", 1)[0].isdigit() else 0)]
    for level, key in [*zip(LEVELS[1:5], keys, strict=True), ("line_numbers", keys[3])]:
        mine = core
        if level == "line_numbers":
            if None in numbered:
                continue
            mine = [x for x in numbered if x is not None]
        found = []
        for i in range(len(lines) - len(mine) + 1):
            window = lines[i : i + len(mine)]
            if [key(x) for x in window] != [key(x) for x in mine]:
                continue
            if level not in ("line_endings", "trailing_space"):
                shifts = {len(w) - len(w.lstrip()) - (len(m) - len(m.lstrip()))
                          for w, m in zip(window, mine, strict=True) if m.strip()}
                if len(shifts) > 1:
                    continue
            found.append(i + 1)
        if found:
            return level, found
    return None


text_lines = st.lists(st.sampled_from(["a", " a", "a ", "  b", "b", "c\u2019", "c'", "",
                                       "d\u00a0e", "d e"]), min_size=1, max_size=10)


@settings(max_examples=600, deadline=None)
@given(lines=text_lines, old_lines=st.lists(st.sampled_from(["a", " a", "a ", "b", "  b",
       "c\u2019", "c'", "", "d e"]), min_size=1, max_size=3), numbers=st.booleans(),
       start=st.integers(1, 10), crlf=st.booleans())
def test_the_matcher_agrees_with_a_naive_oracle(lines: list[str], old_lines: list[str],
                                                 numbers: bool, start: int, crlf: bool) -> None:
    text = "\n".join(lines) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    if numbers:
        old_lines = [f"{start + k} {x}" for k, x in enumerate(old_lines)]
    old = "\n".join(old_lines)
    if not old:
        return  # refused apart: "old_text is empty"
    want = oracle(text, old.replace("\n", "\r\n") if crlf else old)
    try:
        place = Matcher(text, "f").place(old, "N")
    except Ambiguous as exc:
        assert want is not None and len(want[1]) >= 2 and exc.level == want[0]
        return
    except NoPlace:
        assert want is None
        return
    assert want is not None and want == (place.level, [place.line])
