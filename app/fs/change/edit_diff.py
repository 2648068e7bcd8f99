"""The diff `edit_file` answers with: unified, of the changed regions only, bounded.

Only the regions the edits touched (with their context) go to the writer
(`fs/text/udiff.py`, which aligns within its pair limits and shows a larger
middle whole); the untouched rest of the file is never compared.
`bounded_diff` keeps what fits in the budget and counts the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from app.fs.control import Control
from app.fs.text import udiff

# A changed stretch of the edited text: [start, end) in the text after the edits,
# and the length of what it replaced in the text before them.
Span = tuple[int, int, int]

CONTEXT = udiff.CONTEXT
# Lines taken around each edit: more than CONTEXT, as the best alignment of the
# lines may start or end a little away from the edited characters.
REGION_CONTEXT = 2 * CONTEXT
COARSE_NOTE = "{n} changed region(s) too large to align line by line are shown whole (- then +)"


def _back(text: str, pos: int, lines: int) -> int:
    """Start of the line holding `pos`, moved `lines` lines up."""
    pos = text.rfind("\n", 0, pos) + 1
    for _ in range(lines):
        if pos == 0:
            break
        pos = text.rfind("\n", 0, pos - 1) + 1
    return pos


def _forward(text: str, pos: int, lines: int) -> int:
    """End (after its newline) of the line holding `pos`, moved `lines` lines down."""
    for _ in range(lines + 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return pos


def _regions(before: str, spans: list[Span]) -> list[tuple[int, int, int, int]]:
    """(before start, before end, after start, after end) of each changed region with
    its context; regions whose context meets are one."""
    out: list[list[int]] = []
    shift = 0  # after offset - before offset, left of the current span
    for a_s, a_e, was in spans:
        b_s = a_s - shift
        b_e = b_s + was
        after_shift = shift + (a_e - a_s) - was
        r0 = _back(before, b_s, REGION_CONTEXT)
        r1 = _forward(before, max(b_s, b_e - 1), REGION_CONTEXT)
        if out and r0 <= out[-1][1]:
            out[-1][1], out[-1][3] = r1, r1 + after_shift
        else:
            out.append([r0, r1, r0 + shift, r1 + after_shift])
        shift = after_shift
    return [(a, b, c, d) for a, b, c, d in out]


def diff_hunks(
    before: str, after: str, spans: list[Span], control: Control, pairs: udiff.Pairs
) -> Iterator[udiff.Hunk]:
    """Unified-diff hunks of the changed regions only: the untouched rest of the file is
    never split into lines nor compared."""
    line_b = line_a = 0  # line numbers (0-based) at pos_b / pos_a
    pos_b = pos_a = 0
    for r0, r1, q0, q1 in _regions(before, spans):
        line_b += before.count("\n", pos_b, r0)
        line_a += after.count("\n", pos_a, q0)
        pos_b, pos_a = r0, q0
        yield from udiff.hunks(before[r0:r1], after[q0:q1], pairs, control, (line_b, line_a))


def bounded_diff(
    before: str, after: str, spans: list[Span], rel: str, budget: int, control: Control
) -> tuple[str, bool, int, int]:
    """A unified diff cut to `budget` characters of JSON text:
    (diff, cut, total lines, regions shown whole)."""
    head = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    used = sum(_cost(x) for x in head)
    pairs = udiff.Pairs()
    kept, cut, total = udiff.write(diff_hunks(before, after, spans, control, pairs), budget,
                                   _cost, used)
    if not total:
        return "", False, 0, 0
    return "".join(head + kept), cut, total + 2, pairs.coarse


def _cost(line: str) -> int:
    """Characters of `line` in the JSON answer."""
    return len(json.dumps(line, ensure_ascii=False)) - 2
