"""Unified diffs of two texts, bounded in cost and in size: the one writer `git_diff`,
`edit_file` and `apply_patch` answer with.

Lines are cut at "\\n" only (a lone "\\r" is text). Equal lines at the head and the tail
are matched first by a linear scan, as git's xdiff does, without splitting them: a one-line
change in a long text costs one pass, and only the middle between them is aligned, by
difflib's matcher with its junk heuristics off (they make diffs larger than git's on texts
with many repeated lines). The matcher is super-quadratic on repetitive lines (1000 x 1000
took 55 ms, 2000 x 2000 385 ms), so a middle is aligned only when lines(before) x
lines(after) is within PAIR_LIMIT and what is left of the call's CALL_PAIR_LIMIT (`Pairs`);
a larger one is shown whole, old lines removed then new ones added, never split into a
list: a correct diff, not a minimal one. `write` keeps the lines whose cost fits a budget
and counts the rest without making them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from app.fs.control import Control

CONTEXT = 3  # lines of context around a change, as `diff -u` and git
PAIR_LIMIT = 250_000  # lines x lines one middle may cost the matcher
CALL_PAIR_LIMIT = 2_000_000  # and every middle of one call
NO_EOL = "\\ No newline at end of file\n"

Op = tuple[str, int, int, int, int]
Hunk = tuple[int, Iterable[str]]  # (its line count, its lines: the "@@" header first)


class TooManyLines(ValueError):
    """The middle to diff has more lines than the caller's `most`."""


@dataclass
class Pairs:
    """One call's allowance of aligned pairs, and how many middles were shown whole."""

    left: int = field(default_factory=lambda: CALL_PAIR_LIMIT)
    coarse: int = 0


def lines(text: str) -> list[str]:
    """`text` cut after each "\\n"; the last line keeps no newline it did not have."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def count(text: str, lo: int, hi: int) -> int:
    """Lines in text[lo:hi]."""
    return text.count("\n", lo, hi) + (hi > lo and not text.endswith("\n", lo, hi))


def _range(start: int, length: int) -> str:
    """A unified range: 1-based start, and the length unless it is 1."""
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def _header(a0: int, na: int, b0: int, nb: int) -> str:
    return f"@@ -{_range(a0, na)} +{_range(b0, nb)} @@\n"


class _Framed(SequenceMatcher[str]):
    """A matcher whose opcodes are given, so difflib groups them into hunks."""

    def __init__(self, ops: list[Op]) -> None:
        super().__init__(None, [], [], autojunk=False)
        self._ops = ops

    def get_opcodes(self) -> list[Op]:  # type: ignore[override]
        return self._ops


def _head(a: str, b: str) -> tuple[int, int]:
    """(equal leading lines, where they end in both texts)."""
    n = pos = 0
    while pos < len(a):
        nl = a.find("\n", pos)
        end = len(a) if nl < 0 else nl + 1
        if not b.startswith(a[pos:end], pos) or (nl < 0 and len(b) != end):
            break
        n, pos = n + 1, end
    return n, pos


def _tail(a: str, b: str, a_lo: int, b_lo: int) -> tuple[int, int]:
    """Where the equal trailing lines after the head start in a, and in b."""
    ea, eb = len(a), len(b)
    while ea > a_lo and eb > b_lo:
        sa, sb = _line_start(a, a_lo, ea), _line_start(b, b_lo, eb)
        if ea - sa != eb - sb or a[sa:ea] != b[sb:eb]:
            break
        ea, eb = sa, sb
    return ea, eb


def _line_start(text: str, lo: int, end: int) -> int:
    """Where the line ending at `end` (its newline included) starts, not before `lo`."""
    nl = text.rfind("\n", lo, end - 1)
    return lo if nl < 0 else nl + 1


def _around(text: str, lo: int, hi: int, n: int, last: bool) -> list[str]:
    """The last (`last`) or first `n` lines of text[lo:hi]."""
    if last:
        start = hi
        for _ in range(n):
            if start <= lo:
                break
            start = _line_start(text, lo, start)
        return lines(text[start:hi])
    end = lo
    for _ in range(n):
        if end >= hi:
            break
        nl = text.find("\n", end, hi)
        end = hi if nl < 0 else nl + 1
    return lines(text[lo:end])


def hunks(
    old: str, new: str, pairs: Pairs, control: Control, at: tuple[int, int] = (0, 0),
    most: int | None = None,
) -> Iterator[Hunk]:
    """The hunks turning `old` into `new` (whose first lines are lines `at` of their files,
    0-based), one at a time. TooManyLines when the middle holds more than `most` lines."""
    control.check()
    head, ha = _head(old, new)
    ta, tb = _tail(old, new, ha, ha)
    na, nb = count(old, ha, ta), count(new, ha, tb)
    if most is not None and na + nb > most:
        raise TooManyLines(f"{na + nb} changed lines, above {most}")
    if not na and not nb:
        return
    before = _around(old, 0, ha, CONTEXT, last=True)
    after = _around(old, ta, len(old), CONTEXT, last=False)
    a0, b0 = at[0] + head - len(before), at[1] + head - len(before)
    if na * nb <= min(PAIR_LIMIT, pairs.left):
        pairs.left -= na * nb
        yield from _aligned(before, lines(old[ha:ta]), lines(new[ha:tb]), after, a0, b0)
        return
    pairs.coarse += 1
    size = len(before) + len(after)
    out = [_header(a0, size + na, b0, size + nb), *(" " + x for x in before)]
    yield 1 + size + na + nb, _whole(out, old, new, (ha, ta, tb), after, control)


def _aligned(before: list[str], a: list[str], b: list[str], after: list[str], a0: int,
             b0: int) -> Iterator[Hunk]:
    """The middle a -> b aligned, framed by its context lines."""
    k = len(before)
    ops: list[Op] = [("equal", 0, k, 0, k)] if k else []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        ops.append((op, i1 + k, i2 + k, j1 + k, j2 + k))
    if after:
        la, lb = k + len(a), k + len(b)
        ops.append(("equal", la, la + len(after), lb, lb + len(after)))
    full_a, full_b = before + a + after, before + b + after
    for group in _Framed(ops).get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        out = [_header(a0 + first[1], last[2] - first[1], b0 + first[3], last[4] - first[3])]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + x for x in full_a[i1:i2]]
                continue
            out += ["-" + x for x in full_a[i1:i2]]
            out += ["+" + x for x in full_b[j1:j2]]
        yield len(out), out


def _whole(out: list[str], old: str, new: str, cut: tuple[int, int, int], after: list[str],
           control: Control) -> Iterator[str]:
    """A middle too large to align: its old lines removed, then its new ones added."""
    ha, ta, tb = cut
    yield from out
    for sign, text, lo, hi in (("-", old, ha, ta), ("+", new, ha, tb)):
        pos, k = lo, 0
        while pos < hi:
            nl = text.find("\n", pos, hi)
            end = hi if nl < 0 else nl + 1
            yield sign + text[pos:end]
            pos, k = end, k + 1
            if k % 4096 == 0:
                control.check()
    yield from (" " + x for x in after)


def write(hunks: Iterable[Hunk], budget: int | None, cost: Callable[[str], int] = len,
          used: int = 0) -> tuple[list[str], bool, int]:
    """The hunks' lines, each ending in "\\n" (a last line without one followed by NO_EOL),
    kept while their `cost` fits `budget` (`used` of it spent already; None: all, at most
    each line of both texts once with its marks, and one header a hunk): (lines, cut, lines
    counted). Once cut, the hunks after are counted, never made."""
    kept: list[str] = []
    cut = False
    total = 0
    for n, rows in hunks:
        total += n
        if cut:
            continue
        for line in rows:
            if not line.endswith("\n"):
                line += "\n" + NO_EOL
            price = cost(line)
            if budget is not None and used + price > budget:
                cut = True
                break
            kept.append(line)
            used += price
    return kept, cut, total
