"""The diff `edit_file` answers with: unified, of the changed regions only, bounded.

Only the regions the edits touched (with their context) are split into lines
and aligned (`difflib.SequenceMatcher`); the untouched rest of the file is never
compared. A region too large to align within PAIR_LIMIT (or the call's
CALL_PAIR_LIMIT) is shown whole, old lines then new: a correct diff, not a
minimal one. `bounded_diff` keeps what fits in the budget and counts the rest.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from app.fs.control import Control

# A changed stretch of the edited text: [start, end) in the text after the edits,
# and the length of what it replaced in the text before them.
Span = tuple[int, int, int]

CONTEXT = 3  # lines of context around a change, as `diff -u`
# Lines taken around each edit: more than CONTEXT, as the best alignment of the
# lines may start or end a little away from the edited characters.
REGION_CONTEXT = 2 * CONTEXT
# Lines(before) x lines(after) of one changed region that SequenceMatcher may
# cost (super-quadratic on repetitive lines: 1000 x 1000 took 55 ms, 2000 x 2000
# 385 ms), and of all regions of one call. A larger region is shown as its old
# lines removed and its new lines added: a correct diff, just not a minimal one.
PAIR_LIMIT = 250_000
CALL_PAIR_LIMIT = 2_000_000
COARSE_NOTE = "{n} changed region(s) too large to align line by line are shown whole (- then +)"


@dataclass
class _Hunks:
    """The hunks of a diff, made one at a time: each is (line count, lines)."""

    coarse: int = 0


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


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _range(start: int, length: int) -> str:
    """difflib's unified range: 1-based start, and the length unless it is 1."""
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def diff_hunks(
    before: str, after: str, spans: list[Span], control: Control, stats: _Hunks
) -> Iterator[tuple[int, Iterable[str]]]:
    """Unified-diff hunks of the changed regions only: the untouched rest of the file is
    never split into lines nor compared."""
    pairs_left = CALL_PAIR_LIMIT
    line_b = line_a = 0  # line numbers (0-based) at pos_b / pos_a
    pos_b = pos_a = 0
    for r0, r1, q0, q1 in _regions(before, spans):
        control.check()
        line_b += before.count("\n", pos_b, r0)
        line_a += after.count("\n", pos_a, q0)
        pos_b, pos_a = r0, q0
        n_b = before.count("\n", r0, r1) + (r1 > r0 and not before.endswith("\n", r0, r1))
        n_a = after.count("\n", q0, q1) + (q1 > q0 and not after.endswith("\n", q0, q1))
        if n_b * n_a <= min(PAIR_LIMIT, pairs_left):
            pairs_left -= n_b * n_a
            old, new = _lines(before[r0:r1]), _lines(after[q0:q1])
            matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
            for group in matcher.get_grouped_opcodes(CONTEXT):
                out = [
                    f"@@ -{_range(line_b + group[0][1], group[-1][2] - group[0][1])} "
                    f"+{_range(line_a + group[0][3], group[-1][4] - group[0][3])} @@\n"
                ]
                for tag, i1, i2, j1, j2 in group:
                    if tag == "equal":
                        out += [" " + x for x in old[i1:i2]]
                        continue
                    out += ["-" + x for x in old[i1:i2]]
                    out += ["+" + x for x in new[j1:j2]]
                yield len(out), out
        else:
            stats.coarse += 1
            header = f"@@ -{_range(line_b, n_b)} +{_range(line_a, n_a)} @@\n"
            yield 1 + n_b + n_a, _coarse(header, before, r0, r1, after, q0, q1, control)


def _coarse(
    header: str, before: str, r0: int, r1: int, after: str, q0: int, q1: int, control: Control
) -> Iterator[str]:
    yield header
    for sign, text, lo, hi in (("-", before, r0, r1), ("+", after, q0, q1)):
        pos = lo
        k = 0
        while pos < hi:
            nl = text.find("\n", pos, hi)
            end = hi if nl < 0 else nl + 1
            yield sign + text[pos:end]
            pos = end
            k += 1
            if k % 4096 == 0:
                control.check()


def bounded_diff(
    before: str, after: str, spans: list[Span], rel: str, budget: int, control: Control
) -> tuple[str, bool, int, int]:
    """A unified diff cut to `budget` characters of JSON text:
    (diff, cut, total lines, regions shown whole)."""
    kept: list[str] = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    used = sum(len(json.dumps(x, ensure_ascii=False)) - 2 for x in kept)
    cut = False
    total = 2
    stats = _Hunks()
    for count, lines in diff_hunks(before, after, spans, control, stats):
        total += count
        if cut:
            continue  # counted, never made
        for line in lines:
            if not line.endswith("\n"):  # lines end at "\n" only: a lone "\r" is text
                line += "\n\\ No newline at end of file\n"
            cost = len(json.dumps(line, ensure_ascii=False)) - 2
            if used + cost > budget:
                cut = True
                break
            kept.append(line)
            used += cost
    if total == 2:
        return "", False, 0, 0
    return "".join(kept), cut, total, stats.coarse
