"""The matching levels of `app.fs.change.match` (docs/tools.md, "Matching levels"): each
slip is found at its level and no earlier one, with the replacement the file needs; a level
that finds two places refuses and names them; nothing is placed by similarity; the work is
linear in the file whatever its repetition."""

from __future__ import annotations

import contextlib
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


# -- what each level writes back ------------------------------------------------------------

# (file, old_text, new_text, the file after): indentation re-rendered in the file's character
REINDENTED = [
    # a tab file and a copy indented by 2 (the spaces' step is the tab's width)
    (TABS, "  if x:\n    return 1", "  if x:\n    return 5\n    pass",
     TABS.replace("return 1\n", "return 5\n\t\tpass\n")),
    # a 2-space file and a tab copy: the tab stood for 2
    ("a:\n  b:\n    c\n", "\tb:\n\t\tc", "\tb:\n\t\td", "a:\n  b:\n    d\n"),
    # a copy's tab that stood for 8 where the file's spaces step by 2
    ("  x\n          y\n", "\tx\n\t\ty", "\tx\n\t\tz", "  x\n          z\n"),
    # a column between two tab stops: tabs, then the rest in spaces
    (TABS, "    if x:\n        return 1", "    if x:\n      return 5",
     TABS.replace("\t\treturn 1", "\t  return 5")),
    # both sides indent with tabs: a tab is 8 columns wide, so 8 spaces are one tab
    ("\tif x:\n\t\ty\n", "if x:\n\ty", "if x:\n        z", "\tif x:\n\t\tz\n"),
    # neither side indents with tabs: a tab in new_text is 4 columns
    (PY, "if x:\n    return 1", "if x:\n\treturn 5", PY.replace("return 1", "return 5")),
    # a delta of one column moves every line by one
    ("x\n  a\n  b\n", " a\n b", " c\n  d", "x\n  c\n   d\n"),
    # the matched lines' own character, not the first indented line of the file's
    ("\tA\nb:\n    c\n", "  b:\n      c", "  b:\n      d", "\tA\nb:\n    d\n"),
    # matched lines without indentation: the file's character; a line at column 0 stays there
    ("\tz\na\nb\n", "  a\n  b", "  a\n      c", "\tz\na\n\tc\n"),
    # a file that indents no line: moved all the same, in new_text's own character
    ("a\nb\n", "  a\n  b", "  a\n  c", "a\nc\n"),
    ("a\nb\n", "\ta\n\tb", "\ta\n\t\tc", "a\n\tc\n"),
]


@pytest.mark.parametrize(("text", "old", "new", "after"), REINDENTED)
def test_an_indentation_place_rewrites_new_text_by_the_delta_in_the_files_character(
    text: str, old: str, new: str, after: str
) -> None:
    assert applied(text, old, new)[:2] == (after, "indentation")


# (file, old_text, new_text, the file after, level): the replacement's line ends and blank lines
WRITTEN_BACK = [
    # a CRLF file at a loose level: every new line ends in CR LF
    (PY.replace("\n", "\r\n"), "    if x:  \n        return 1",
     "    if y:\n        return 1\n        pass",
     PY.replace("if x", "if y").replace("return 1\n", "return 1\n        pass\n")
     .replace("\n", "\r\n"), "trailing_space"),
    # a mixed file: the matched line's own line end, whatever new_text types
    ("a\nb\r\nc\n", "b  ", "x\ny", "a\nx\r\ny\r\nc\n", "trailing_space"),
    ("a\nb\nc\n", "b  ", "x\r\ny", "a\nx\ny\nc\n", "trailing_space"),
    ("a\nb\nc\n", "b  ", "xy\r\r\nz", "a\nxy\nz\nc\n", "trailing_space"),  # a stray CR too
    # new_text's extra blank lines at its ends are kept
    ("a\nb\nc\n", "b ", "\nb", "a\n\nb\nc\n", "trailing_space"),
    ("a\nb\nc\n", "b ", "b\n\n", "a\nb\n\n\nc\n", "trailing_space"),
    # lines removed, with their line end; a line emptied keeps its own
    ("a\nb\nc\n", "b ", "", "a\n\nc\n", "trailing_space"),
    ("a\nb\n", "a  \n", "", "b\n", "trailing_space"),
    ("a\nb", "b  \n", "", "a", "trailing_space"),
    ("a", "a  \n", "", "", "trailing_space"),
    # every line of the file removed: nothing left, not a lone line end
    ("a\n", "a \n", "", "", "trailing_space"),
    ("a\r\n", "a \n", "", "", "trailing_space"),
    # line numbers stripped from new_text too, its line ends counted as typed
    (PY, "2     if x:\n3         return 1\n", "2     if z:\n3         return 1\n",
     PY.replace("if x", "if z"), "line_numbers"),
    (PY, "2     if x:\n3         return 1", "2     if z:\n3         return 1\n",
     PY.replace("if x", "if z").replace("return 1\n", "return 1\n\n"), "line_numbers"),
    # look-alikes folded by class: only the classes old_text has and the matched lines lack
    ("s = \u201ca\u201d - b\n", "s = \u201ca\u201d \u2014 b", "s = \u201cc\u201d \u2014 b",
     "s = \u201cc\u201d - b\n", "punctuation"),
    ('s = "hi"\n', "s = \u201chi\u201d", "s = \u201cho\u201d \u2014 ok", 's = "ho" \u2014 ok\n',
     "punctuation"),
]


@pytest.mark.parametrize(("text", "old", "new", "after", "level"), WRITTEN_BACK)
def test_the_replacement_takes_the_files_line_ends_and_new_texts_blank_lines(
    text: str, old: str, new: str, after: str, level: str
) -> None:
    assert applied(text, old, new)[:2] == (after, level)


# (file, old_text, new_text, keywords, the file after, level, line)
EXACT_CASES = [
    # a file without any line end, or mixed ones, takes new_text's "\n" as typed
    ("abc", "b", "x\ny", {}, "ax\nyc", "exact", 1),
    ("a\r\nb\n", "b", "x\ny", {}, "a\r\nx\ny\n", "exact", 2),
    # ... unless the caller says the file is CRLF
    ("a\nb\n", "b", "x\ny", {"crlf": True}, "a\nx\r\ny\n", "exact", 2),
    # a leading blank line counts
    ("\nx\n", "x", "y", {}, "\ny\n", "exact", 2),
    # whole lines: a place ending at the text's end or before a line end; never inside a line
    ("a\nb", "b", "c", {"whole_lines": True}, "a\nc", "exact", 2),
    ("a\nb\r\n", "b", "c", {"whole_lines": True}, "a\nc\r\n", "exact", 2),
    # at_end: the place ends the text, or only its final line end follows
    ("b\na\nb\n", "a\nb", "c", {"at_end": True}, "b\nc\n", "exact", 2),
    ("b\r\na\r\nb\r\n", "a\nb", "c", {"at_end": True}, "b\r\nc\r\n", "exact", 2),
    # a line number with one place only
    ("a\nb\n", "b", "c", {"near_line": 1}, "a\nc\n", "exact", 2),
    # a line number at a loose level chooses among all the places, not the first two
    ("a \n" * 5, "a\n", "c\n", {"near_line": 5}, "a \n" * 4 + "c\n", "trailing_space", 5),
    ("a \n" * MAX_CANDIDATES, "a\n", "c\n", {"near_line": MAX_CANDIDATES},
     "a \n" * (MAX_CANDIDATES - 1) + "c\n", "trailing_space", MAX_CANDIDATES),
    # at_end and start at a loose level
    ("a \nb\na \nb\n", "a\nb", "c", {"at_end": True}, "a \nb\nc\n", "trailing_space", 3),
    ("a \nb\na \nb\n", "a\nb", "c", {"start": 2}, "a \nb\nc\n", "trailing_space", 3),
]


@pytest.mark.parametrize(("text", "old", "new", "kw", "after", "level", "line"), EXACT_CASES)
def test_line_ends_line_bounds_and_line_numbers_decide_the_place(
    text: str, old: str, new: str, kw: dict[str, object], after: str, level: str, line: int
) -> None:
    kw = dict(kw)  # the table's own stays as it is for the next run
    crlf = kw.pop("crlf", None)
    place = Matcher(text, "f.py", crlf=crlf).place(old, new, **kw)  # type: ignore[arg-type]
    got = text[: place.lo] + place.new + text[place.hi :]
    assert (got, place.level, place.line) == (after, level, line)


# (file, old_text, keywords): nothing placed
REFUSED_PLACES = [
    ("xa\n", "a\n", {"whole_lines": True}),  # inside a line, its end at the text's end
    ("a\nbc\n", "a\nb", {"whole_lines": True}),  # ends inside a line
    ("aX\n", "a", {"whole_lines": True}),
]


@pytest.mark.parametrize(("text", "old", "kw"), REFUSED_PLACES)
def test_a_place_inside_a_line_is_no_whole_line_place(
    text: str, old: str, kw: dict[str, object]
) -> None:
    with pytest.raises(NoPlace):
        Matcher(text, "f.py").place(old, "c", **kw)  # type: ignore[arg-type]


# -- what a refusal says --------------------------------------------------------------------


def lines_text(n: int) -> str:
    return ", ".join(map(str, range(1, min(n, 10) + 1))) + (", ..." if n > 10 else "")


@pytest.mark.parametrize("n", [2, 10, 11, 12, 300])
def test_an_exact_ambiguity_counts_every_place_and_names_the_first_ten(n: int) -> None:
    with pytest.raises(Ambiguous) as info:
        Matcher("x\n" * n, "f.py").place("x", "y")
    assert info.value.message == (
        f"old_text occurs {n} times in 'f.py'; it must occur exactly once (include more "
        f"surrounding lines to make it unique): lines {lines_text(n)}")
    assert info.value.lines == list(range(1, min(n, 11) + 1))


@pytest.mark.parametrize(("text", "old", "kw", "message"), [
    ("aaa\n", "aa", {}, "old_text occurs 2 times in 'f.py'"),  # overlapping places count
    ("x\nx\nax\n", "x\n", {"whole_lines": True}, "old_text occurs 2 times in 'f.py'"),
    ("x\nx\nax\n", "x\n", {}, "old_text occurs 3 times in 'f.py'"),
])
def test_an_exact_ambiguity_counts_the_places_it_may_take(
    text: str, old: str, kw: dict[str, object], message: str
) -> None:
    with pytest.raises(Ambiguous) as info:
        Matcher(text, "f.py").place(old, "y", **kw)  # type: ignore[arg-type]
    assert info.value.message.startswith(message + ";")


def test_an_exact_ambiguity_counts_from_start_only() -> None:
    with pytest.raises(Ambiguous, match=r"occurs 2 times in 'f\.py'.*: lines 2, 3$"):
        Matcher("x\nx\nx\n", "f.py").place("x", "y", start=2)


@pytest.mark.parametrize("n", [2, 10, 11, 12, 300])
def test_a_loose_ambiguity_names_the_level_and_the_first_ten_places(n: int) -> None:
    with pytest.raises(Ambiguous) as info:
        Matcher("x \n" * n, "f.py").place("x\n", "y")
    shown = min(n, 11)
    assert info.value.message == (
        f"old_text matches {shown}{'+' if shown > 10 else ''} places in 'f.py' when compared "
        f"by trailing space (lines {lines_text(shown)}); it must match one (include more "
        "surrounding lines to make it unique)")
    assert (info.value.level, info.value.lines) == ("trailing_space", list(range(1, shown + 1)))


@pytest.mark.parametrize(("text", "old", "kw", "level"), [
    ("x\ny\n" * 13, "x\n", {"whole_lines": True}, "exact"),
    ("x \ny\n" * 13, "x\n", {}, "trailing_space"),
])
def test_a_tie_between_line_numbers_names_every_place(
    text: str, old: str, kw: dict[str, object], level: str
) -> None:
    with pytest.raises(Ambiguous) as info:
        Matcher(text, "f.py").place(old, "y", near_line=4, **kw)  # type: ignore[arg-type]
    assert (info.value.level, info.value.lines) == (level, list(range(1, 26, 2)))


@pytest.mark.parametrize(("text", "old", "kw", "level"), [
    ("ax\n" * 300, "x\n", {"whole_lines": True}, "exact"),
    # a line number chooses among every place: past the cap it cannot, and says so
    ("x \n" * 300, "x\n", {"near_line": 300}, "trailing space"),
    ("x\n" * 300, "x\n", {"near_line": 300, "whole_lines": True}, "exact"),
])
def test_past_the_candidate_cap_the_call_is_refused_by_level(
    text: str, old: str, kw: dict[str, object], level: str
) -> None:
    with pytest.raises(NoPlace) as info:
        Matcher(text, "f.py").place(old, "y", **kw)  # type: ignore[arg-type]
    assert info.value.message == (
        f"old_text's lines occur at more than {MAX_CANDIDATES} places in 'f.py' when compared "
        f"by {level}; include more surrounding lines, copied as they are")


def test_the_candidate_cap_counts_the_places_checked() -> None:
    text = "ax\n" * (MAX_CANDIDATES - 1) + "x\n"  # the last of MAX_CANDIDATES candidates fits
    assert applied(text, "x\n", "y\n", whole_lines=True)[1:] == ("exact", MAX_CANDIDATES)
    with pytest.raises(NoPlace, match="more than"):
        Matcher("ax\n" + text, "f.py").place("x\n", "y\n", whole_lines=True)


def test_an_empty_old_text_is_refused_by_name() -> None:
    with pytest.raises(BadArgument) as info:
        Matcher(PY, "f.py").place("", "x")
    assert info.value.message == "old_text is empty"


# -- what the work counts -------------------------------------------------------------------

# (file, old_text, the work): lines split, keyed once per level, and compared per candidate
WORK = [
    ("a\nb\nc\n", "b", 1),  # one exact candidate
    ("x\nx\nx\n", "x", 2 + 3),  # two to find the ambiguity, three to name it
    ("a \nb\n", "a\nb", 2 + 2 + 2 + 2),  # lines, two levels' keys, one candidate of 2 lines
    ("s = \u201ca\u201d\n", 's = "a"', 1 + 4 * 1 + 1),  # lines, four levels' keys, a candidate
    ("a\nb\n", "1 a\n2 b", 2 + 4 * 2 + 2),  # line numbers: the fourth level's keys again
]


@pytest.mark.parametrize(("text", "old", "work"), WORK)
def test_the_work_counts_lines_keyed_and_candidates_compared(
    text: str, old: str, work: int
) -> None:
    matcher = Matcher(text, "f.py")
    with contextlib.suppress(Ambiguous):
        matcher.place(old, "N")
    assert matcher.work == work


def test_the_closest_block_reuses_the_keys_and_scans_once() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    matcher = Matcher(text, "f.py")
    with pytest.raises(NoPlace):
        matcher.place("line 40\nline 4two\n", "x")
    before = matcher.work
    closest(matcher, "line 40\nline 4two\n")
    assert matcher.work == before + 100


# -- the closest block, in detail -----------------------------------------------------------


@pytest.mark.parametrize(("text", "old", "lines"), [
    ("a\nb\nc\n", "a\nX", "1-2"),  # the first window
    ("a\nb\na\nb\n", "a\nc", "1-2"),  # the first of equally close windows
])
def test_the_closest_block_is_the_first_window_with_most_lines_of_old_text(
    text: str, old: str, lines: str
) -> None:
    got = closest(Matcher(text, "f.py"), old)
    assert got is not None and got.startswith(f"closest block: lines {lines} (")


def test_the_closest_block_shows_the_diff_lines_without_headers_cut_to_a_width() -> None:
    fits, cut = "y" * 159, "y" * 160  # a diff line is its sign and the line
    text = f"a\nbX\nc  \n{fits}\n{cut}\n"
    got = closest(Matcher(text, "f.py"), f"a\nb\nc\n{fits}\n{cut}q\n")
    assert got == (
        "closest block: lines 1-5 (60% similar), old_text (-) against the file (+):\n"
        f" a\n-b\n-c\n+bX\n+c  \n {fits}\n-{cut[:159]}...\n+{cut[:159]}...")


def test_a_long_diff_is_cut_after_its_first_lines() -> None:
    got = closest(Matcher("a\n" * 30, "f.py"), "".join(f"b{i}\n" for i in range(30)) + "a\n")
    assert got is not None
    assert got.split("\n")[1:] == [f"-b{i}" for i in range(16)] + ["..."]


def test_no_closest_block_for_an_old_text_of_blank_lines() -> None:
    assert closest(Matcher(PY, "f.py"), "\n  \n") is None


# (file lines, old_text lines, similarity): difflib's ratio up to PAIR_LIMIT lines x lines,
# past it the share of the block's lines found in old_text (their order not compared)
def reversed_block(n: int, file_lines: int) -> tuple[str, str]:
    text = "".join(f"v{i}\n" for i in range(file_lines))
    return text, "".join(f"v{i}\n" for i in reversed(range(n)))


@pytest.mark.parametrize(("n", "file_lines", "similar"), [
    (500, 600, "0%"),  # 500 x 500 is the limit: still difflib's ratio of the lists
    (501, 600, "100%"),
    (2_000, 20_000, "100%"),
])
def test_the_similarity_is_difflibs_up_to_the_pair_limit_then_the_share_of_lines(
    n: int, file_lines: int, similar: str
) -> None:
    text, old = reversed_block(n, file_lines)
    got = closest(Matcher(text, "f.py"), old)
    assert got is not None and got.startswith(f"closest block: lines 1-{n} ({similar} similar)")


def test_the_similarity_ratio_counts_lines_frequent_in_the_block() -> None:
    # difflib's autojunk would drop "p" (over 1% of a block of 200 lines) and find 0%
    got = closest(Matcher("p\n" * 199 + "u\n", "f.py"), "u\n" + "p\n" * 199)
    assert got is not None and got.startswith("closest block: lines 1-200 (100% similar)")


def test_line_ids_are_distinct_up_to_the_code_points_then_wrap_around() -> None:
    distinct = 0x110000 - 0x800  # every code point but the surrogates
    matcher = Matcher("".join(f"{i}\n" for i in range(distinct + 2)), "f.py")
    hay, _ids = matcher.ids(1)
    assert len(set(hay[:distinct])) == distinct
    assert hay[distinct : distinct + 2] == hay[:2]
