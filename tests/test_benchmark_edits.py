"""benchmarks/_edits.py makes, from real standard-library files, the edits each slip class
says, and judges a server's outcome from the file's bytes (no server, no network)."""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import pytest

from benchmarks import _edits
from benchmarks._edits import AMBIGUOUS, CLASSES, SLIPS, Edit, Source, TooFew, generate, judge

PER_CLASS = 12
FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                      "\u2013": "-", "\u2014": "--", "\u2026": "...", "\u00a0": " ",
                      "\u202f": " ", "\u2009": " "})
NUMBER = re.compile(r"^\d+ \| ")


@pytest.fixture(scope="module")
def stdlib() -> list[Source]:
    files = _edits.sources("stdlib", Path(sysconfig.get_paths()["stdlib"]))
    return files[:: max(1, len(files) // 80)]


@pytest.fixture(scope="module")
def made(stdlib: list[Source]) -> dict[str, list[Edit]]:
    return generate(stdlib, PER_CLASS, seed=3)


def loose(text: str, *, numbers: bool = False) -> list[str]:
    """Lines stripped, look-alikes folded, prefixes dropped, blank lines at the ends dropped."""
    lines = [NUMBER.sub("", x) if numbers else x for x in text.replace("\r\n", "\n").split("\n")]
    out = [x.translate(FOLD).strip() for x in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def places(file_text: str, old: str, *, numbers: bool = False) -> int:
    want = loose(old, numbers=numbers)
    have = [x.translate(FOLD).strip() for x in file_text.replace("\r\n", "\n").split("\n")]
    n = len(want)
    return sum(1 for i in range(len(have) - n + 1) if have[i : i + n] == want)


def test_every_class_is_made_and_named_once() -> None:
    assert set(_edits.MAKERS) == set(CLASSES)
    assert len(CLASSES) == len(set(CLASSES))
    assert set(SLIPS).isdisjoint(AMBIGUOUS)


@pytest.mark.parametrize("slip", CLASSES)
def test_each_class_makes_as_many_edits_as_asked_from_real_files(
        made: dict[str, list[Edit]], slip: str) -> None:
    edits = made[slip]
    assert len(edits) == PER_CLASS
    assert all(e.slip == slip for e in edits)
    assert len({e.source for e in edits}) == PER_CLASS, "a block used twice in one class"


@pytest.mark.parametrize("slip", CLASSES)
def test_each_edit_names_one_place_at_the_loosest_comparison_or_two_when_ambiguous(
        made: dict[str, list[Edit]], slip: str) -> None:
    for e in made[slip]:
        text = e.before.decode()
        found = places(text, e.old_text, numbers=slip == "line-numbers")
        assert found == (2 if slip in AMBIGUOUS else 1), (e.source, e.old_text)


@pytest.mark.parametrize("slip", [s for s in CLASSES if s not in ("exact", "twice-exact")])
def test_a_slipped_old_text_is_not_in_the_file_as_it_is(
        made: dict[str, list[Edit]], slip: str) -> None:
    for e in made[slip]:
        assert e.old_text not in e.before.decode(), (e.source, e.old_text)


def test_the_exact_controls_are_in_the_file_once_or_twice(made: dict[str, list[Edit]]) -> None:
    for e in made["exact"]:
        assert e.before.decode().count(e.old_text) == 1
    for e in made["twice-exact"]:
        assert e.before.decode().count(e.old_text) == 2


@pytest.mark.parametrize("slip", SLIPS)
def test_the_intended_file_is_the_file_with_the_changed_block_once_and_a_line_more(
        made: dict[str, list[Edit]], slip: str) -> None:
    for e in made[slip]:
        assert e.after is not None
        before, after = e.before.decode(), e.after.decode()
        assert after.count("\n") == before.count("\n") + 1
        assert after.count("# edited") == before.count("# edited") + 1
        assert places(after, e.new_text) == 1, (e.source, e.new_text)
        assert ("\r\n" in after) == (slip == "crlf-file")
        if slip == "crlf-file":
            assert after.count("\r\n") == after.count("\n")


SHAPES = {  # what each slip leaves in old_text, seen from outside
    "tabs": lambda e: "\t" in e.old_text and "\t" in e.new_text,
    "trailing-added": lambda e: any(x != x.rstrip() for x in e.old_text.split("\n")),
    "trailing-removed": lambda e: any(x != x.rstrip() for x in e.before.decode().split("\n")),
    "crlf-file": lambda e: "\r" not in e.old_text and e.before.count(b"\r\n") == e.before.count(
        b"\n"),
    "crlf-text": lambda e: e.old_text.count("\r\n") == e.old_text.count("\n") > 0
    and b"\r" not in e.before,
    "curly-quotes": lambda e: bool(set(e.old_text) & set("\u2019\u201c\u201d")),
    "dashes-ellipsis": lambda e: bool(set(e.old_text) & set("\u2013\u2014\u2026")),
    "unicode-spaces": lambda e: bool(set(e.old_text) & set("\u00a0\u202f\u2009")),
    "blank-line": lambda e: e.old_text.startswith("\n\n") or e.old_text.endswith("\n\n"),
    "line-numbers": lambda e: all(NUMBER.match(x) for x in e.old_text.split("\n")),
}


@pytest.mark.parametrize("slip", sorted(SHAPES))
def test_each_slip_is_the_one_its_class_names(made: dict[str, list[Edit]], slip: str) -> None:
    assert all(SHAPES[slip](e) for e in made[slip])


@pytest.mark.parametrize(("slip", "sign"), [("dedented", -1), ("indented", 1)])
def test_shifted_edits_move_old_and_new_text_alike_and_intend_the_files_indentation(
        made: dict[str, list[Edit]], slip: str, sign: int) -> None:
    for e in made[slip]:
        before, after = e.before.decode().split("\n"), (e.after or b"").decode().split("\n")
        old, new = e.old_text.split("\n"), e.new_text.split("\n")
        where = next(i for i in range(len(before)) if before[i].strip() == old[0].strip()
                     and places("\n".join(before[i:i + len(old)]), e.old_text) == 1)
        by = {_edits.indent_of(b) - _edits.indent_of(o)
              for b, o in zip(before[where:], old, strict=False) if o}
        assert len(by) == 1 and sign * by.pop() < 0, (e.source, by)
        assert [x.strip() for x in after[where : where + len(new)]] == [x.strip() for x in new]
        assert after[where] == before[where]


def test_a_line_numbers_edit_carries_the_lines_true_numbers(
        made: dict[str, list[Edit]]) -> None:
    for e in made["line-numbers"]:
        lines = e.before.decode().split("\n")
        for row in e.old_text.split("\n"):
            number, _, text = row.partition(" | ")
            assert lines[int(number) - 1] == text


def test_a_class_that_makes_nothing_fails_naming_it(
        stdlib: list[Source], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_edits.MAKERS, "tabs", lambda rng, block, k: None)
    with pytest.raises(TooFew, match="'tabs' made 0 of 2"):
        generate(stdlib, 2, classes=("exact", "tabs"))


def test_a_class_whose_slip_the_files_never_allow_fails(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(
        "def f(a, b):\n    total = a + b\n    total = total * 2\n    return total\n")
    files = _edits.sources("t", tmp_path)
    with pytest.raises(TooFew, match="'curly-quotes' made 0 of 1"):
        generate(files, 1, classes=("curly-quotes",))


def test_no_files_fail() -> None:
    with pytest.raises(TooFew):
        generate([], 1)


ONE = Edit("exact", "x", b"a\nb\n", "b", "B", b"a\nB\n")
TWICE = Edit("twice-exact", "x", b"b\nb\n", "b", "B", None)


@pytest.mark.parametrize(("edit", "failed", "now", "outcome"), [
    (ONE, False, b"a\nB\n", "correct"),
    (ONE, True, b"a\nb\n", "refused"),
    (ONE, False, b"a\nb\n", "other"),  # success said, nothing changed
    (ONE, True, b"a\nB\n", "other"),  # an error said, the edit made
    (ONE, False, b"B\nb\n", "wrong"),
    (ONE, False, b"a\r\nB\r\n", "wrong"),
    (ONE, True, b"", "wrong"),
    (TWICE, True, b"b\nb\n", "refused"),
    (TWICE, False, b"B\nb\n", "wrong"),
    (TWICE, False, b"b\nB\n", "wrong"),
])
def test_judge(edit: Edit, failed: bool, now: bytes, outcome: str) -> None:
    assert judge(edit, failed, now) == outcome


@pytest.mark.parametrize(("now", "why"), [
    (b"a\r\nB\r\n", "line endings"),
    (b"a\nB  \n", "trailing whitespace"),
    (b"a\n  B\n", "indentation"),
    (b"aB\n", "line count"),
    (b"a\nC\n", "text differs"),
])
def test_how_wrong_names_what_differs(now: bytes, why: str) -> None:
    assert why in _edits.how_wrong(ONE, now)
