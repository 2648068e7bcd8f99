"""The one unified-diff writer (`app/fs/text/udiff.py`): its diff, applied, gives the new
text; it matches difflib's where both align; its cost and size are bounded whatever the
inputs, for both of its callers (`git_diff`'s textdiff and `edit_file`'s edit_diff)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.change import edit_diff
from app.fs.control import NoControl
from app.fs.history import textdiff
from app.fs.text import udiff

texts = st.lists(st.sampled_from(["a\n", "b\n", "a", "c\r\n", "\n", "x y\n", "é\n"]),
                 max_size=40).map("".join)


def diff(old: str, new: str, pairs: udiff.Pairs | None = None) -> str:
    made = udiff.hunks(old, new, pairs or udiff.Pairs(), NoControl())
    kept, cut, _ = udiff.write(made, budget=None)
    assert not cut
    return "".join(kept)


def patch(old: str, text: str) -> str:
    """Apply the hunks of `text` to `old`, checking every context and removed line."""
    src = udiff.lines(old)
    rows: list[str] = []
    for row in udiff.lines(text):
        if row == udiff.NO_EOL:
            rows[-1] = rows[-1][:-1]
        else:
            rows.append(row)
    out: list[str] = []
    i = 0
    for row in rows:
        if row.startswith("@@"):
            start, _, length = row.split()[1][1:].partition(",")
            s0 = int(start) - 1 if (length or "1") != "0" else int(start)
            assert s0 >= i, "hunks out of order"
            out += src[i:s0]
            i = s0
        elif row[0] in " -":
            assert src[i] == row[1:], (src[i], row)
            if row[0] == " ":
                out.append(src[i])
            i += 1
        else:
            assert row[0] == "+", row
            out.append(row[1:])
    return "".join(out + src[i:])


@settings(max_examples=400, deadline=None)
@given(old=texts, new=texts, whole=st.booleans())
def test_the_diff_applied_gives_the_new_text(old: str, new: str, whole: bool) -> None:
    """Aligned, or every middle shown whole (an allowance of -1 pairs)."""
    pairs = udiff.Pairs(left=-1) if whole else udiff.Pairs()
    assert patch(old, diff(old, new, pairs)) == new
    assert pairs.coarse == (whole and old != new)
    if old == new:
        assert diff(old, new) == ""


@settings(max_examples=400, deadline=None)
@given(old=texts, new=texts)
def test_the_hunks_are_difflibs_where_it_aligns_the_same_lines(old: str, new: str) -> None:
    """Equal head and tail lines matched first, as git: where that is difflib's alignment
    too (no line of the head or tail matched elsewhere), the text is difflib's."""
    a, b = udiff.lines(old), udiff.lines(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    ours = changes(a[head : len(a) - tail], b[head : len(b) - tail])
    if changes(a, b) != [(t, i1 + head, i2 + head, j1 + head, j2 + head)
                     for t, i1, i2, j1, j2 in ours if t != "equal"]:
        return  # difflib aligns differently; the patch test covers this pair
    if not all(x.endswith("\n") for x in a + b):
        return  # difflib writes no "\\ No newline" marker
    theirs = "".join(difflib.unified_diff(a, b, n=3))
    assert diff(old, new) == theirs.split("\n", 2)[2] if theirs else diff(old, new) == ""


def changes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    return [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if op[0] != "equal"]


@pytest.fixture
def aligned_pairs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """lines x lines of every sequence pair difflib's matcher is asked to align."""
    seen: list[int] = []
    real = difflib.SequenceMatcher.get_matching_blocks

    def counted(self: Any) -> list[difflib.Match]:
        seen.append(len(self.a) * len(self.b))
        return real(self)

    monkeypatch.setattr(difflib.SequenceMatcher, "get_matching_blocks", counted)
    yield seen


def many(word: str, n: int) -> bytes:
    return "".join(f"{word} {i % 7}\n" for i in range(n)).encode()


@pytest.mark.parametrize(("old_lines", "new_lines"), [(1000, 1000), (600, 500), (2000, 200)])
def test_git_diff_aligns_no_middle_above_the_pair_limit(aligned_pairs: list[int],
                                                        old_lines: int, new_lines: int) -> None:
    """textdiff had only its 20,000-line bound (up to 10,000 x 10,000 pairs): it now keeps
    edit_diff's pair limit, and a larger middle is shown whole."""
    old = b"same\n" * 50 + many("old", old_lines) + b"end\n" * 50
    new = b"same\n" * 50 + many("new", new_lines) + b"end\n" * 50
    pairs = udiff.Pairs()
    text = textdiff.unified(old, new, pairs)
    assert max(aligned_pairs, default=0) <= udiff.PAIR_LIMIT
    assert pairs.coarse == 1
    assert patch(old.decode(), text + "\n") == new.decode()
    body = text.split("\n")
    assert body[0] == f"@@ -48,{old_lines + 6} +48,{new_lines + 6} @@"
    assert sum(x.startswith("-") for x in body) == old_lines
    assert sum(x.startswith("+") for x in body) == new_lines


def test_one_call_aligns_at_most_the_call_pair_limit(aligned_pairs: list[int]) -> None:
    """Every middle of one call draws on one allowance (git_diff's files, edit_file's
    regions): past it, each is shown whole."""
    pairs = udiff.Pairs()
    for _ in range(12):
        textdiff.unified(many("old", 490), many("new", 490), pairs)
    assert sum(aligned_pairs) <= udiff.CALL_PAIR_LIMIT
    assert pairs.coarse == 12 - udiff.CALL_PAIR_LIMIT // (490 * 490)


def test_a_long_equal_head_and_tail_are_never_aligned(aligned_pairs: list[int]) -> None:
    """edit_diff aligned its whole region, context and all: the writer matches equal head
    and tail lines by a scan and aligns only the middle."""
    before = "".join(f"line {i}\n" for i in range(300))
    after = before.replace("line 150\n", "line 150 changed\n")
    at = after.index(" changed")
    spans = [(at, at + len(" changed"), 0)]
    got, cut, total, coarse = edit_diff.bounded_diff(before, after, spans, "f", 10**6,
                                                     NoControl())
    assert aligned_pairs == [1]
    assert (cut, coarse) == (False, 0)
    assert got.splitlines()[2:] == ["@@ -148,7 +148,7 @@", " line 147", " line 148",
                                    " line 149", "-line 150", "+line 150 changed",
                                    " line 151", " line 152", " line 153"]
    assert total == 2 + 9


@pytest.mark.parametrize("budget", [0, 10, 25, 60])
def test_write_keeps_what_fits_and_counts_the_rest(budget: int) -> None:
    old, new = "a\nb\n" * 20, "a\nB\n" * 20
    whole = diff(old, new)
    kept, cut, total = udiff.write(udiff.hunks(old, new, udiff.Pairs(), NoControl()), budget)
    assert "".join(kept) == whole[: len("".join(kept))]
    assert len("".join(kept)) <= budget
    assert cut == (len("".join(kept)) < len(whole))
    assert total == len(udiff.lines(whole))


def test_a_last_line_without_newline_is_marked() -> None:
    assert diff("a\nb", "a\nc") == "@@ -1,2 +1,2 @@\n a\n-b\n" + udiff.NO_EOL + "+c\n" + \
        udiff.NO_EOL


def test_too_many_changed_lines_stops_before_any_work(aligned_pairs: list[int]) -> None:
    with pytest.raises(udiff.TooManyLines):
        next(udiff.hunks("a\n" * 10, "b\n" * 10, udiff.Pairs(), NoControl(), most=19))
    assert aligned_pairs == []
