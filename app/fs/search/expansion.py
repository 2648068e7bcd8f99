"""How large a regex is once its counted repetitions are written out: a bound checked before RE2.

RE2 matches in linear time, but it compiles `x{0,1000}` into a thousand nested
optional copies of `x`, and its compile time grows with the square of the
copies in a pattern: `a{0,1000}` written 111 times (999 characters, within the
query limit) took 37 s of CPU to compile, 16 times 0.5 s, 4 times 0.06 s. RE2
itself bounds only each count (1,000) and nested ones (their product), not their
sum, so `search_text` refuses a pattern whose written-out size passes
`MAX_EXPANDED` before RE2 sees it.

The scan reads the pattern as RE2 does where it matters here: escapes (`\\p{..}`,
`\\x{..}`, `\\Q..\\E`), classes (a `{` in one is a character), groups (their
size multiplied by a count after them) and counts `{n}`, `{n,}`, `{n,m}` (a `{`
that forms none is a character). Alternatives are added up, never the larger one
taken: the size it answers is never below RE2's.
"""

from __future__ import annotations

import re

MAX_EXPANDED = 4000  # pattern items with counted repetitions written out (compile ≤ ~0.1 s)
COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")  # {n}, {n,}, {n,m}: n, then m or ""
_BRACED = re.compile(r"\\[pPx]\{[^}]*\}")


def expanded_size(p: str) -> int:
    """The number of items `p` has with every `{n,m}` written out as m copies (n for
    `{n,}`); `*`, `+` and `?` add nothing."""
    stack = [[0, 0]]  # per open group: [its size so far, the size of its last item]
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        top = stack[-1]
        if c == "{" and (m := COUNT.match(p, i)):
            times = int(m[2]) if m[2] else int(m[1])
            top[0] += top[1] * (times - 1)
            top[1] *= times
            i = m.end()
            continue
        if c in "*+?|":  # `|` separates items; the ones around it are added up
            i += 1
            continue
        if c == "(":
            i = _group_start(p, i)
            if i < 0:  # a flags group, `(?i)`: no item
                i = -i
                continue
            stack.append([0, 0])
            continue
        if c == ")" and len(stack) > 1:
            size = stack.pop()[0]
            stack[-1][0] += size
            stack[-1][1] = size
            i += 1
            continue
        if p.startswith("\\Q", i):  # quoted text: one item a character
            end = p.find("\\E", i + 2)
            end = n if end < 0 else end
            top[0] += end - i - 2
            top[1] = 1
            i = end + 2
            continue
        i = _item_end(p, i)
        top[0] += 1
        top[1] = 1
    while len(stack) > 1:  # unclosed groups: RE2 refuses the pattern anyway
        stack[-2][0] += stack.pop()[0]
    return stack[0][0]


def _group_start(p: str, i: int) -> int:
    """Index after the opening of the group at p[i] == '(', or minus the index after a
    flags group `(?i)` (which opens none)."""
    if not p.startswith("(?", i):
        return i + 1
    j = i + 2
    if p.startswith(("P<", "<"), j):
        end = p.find(">", j)
        return end + 1 if end >= 0 else j
    while j < len(p) and p[j] not in ":)":
        j += 1
    if j < len(p) and p[j] == ")":
        return -(j + 1)
    return j + 1


def _item_end(p: str, i: int) -> int:
    """Index after the one item at p[i]: a character, an escape or a class."""
    c = p[i]
    if c == "\\":
        m = _BRACED.match(p, i)
        return m.end() if m else i + 2
    if c == "[":
        end = class_end(p, i)
        return len(p) if end is None else end
    return i + 1


def class_end(p: str, i: int) -> int | None:
    """Index after the class starting at p[i] == '[', or None when it is unclosed or holds
    `\\Q` (not read here)."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p):
        if p[j] == "\\":
            if p.startswith("\\Q", j):
                return None
            m = _BRACED.match(p, j)
            j = m.end() if m else j + 2
        elif p.startswith("[:", j) and (end := p.find(":]", j + 2)) >= 0:
            j = end + 2
        elif p[j] == "]":
            return j + 1
        else:
            j += 1
    return None
