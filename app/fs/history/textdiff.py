"""Unified diff text of two versions of a file, in git's hunk format.

difflib's matcher with junk heuristics off (they make diffs larger than git's
on files with many repeated lines); 3 lines of context like git. Quadratic in
the worst case, so the caller bounds the input (`MAX_DIFF_LINES`).
"""

from __future__ import annotations

from difflib import SequenceMatcher

MAX_DIFF_LINES = 20_000
NO_EOL = "\\ No newline at end of file"


def is_binary(data: bytes) -> bool:
    """git's rule: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def _range(start: int, length: int) -> str:
    beginning = start + 1
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _lines(data: bytes) -> list[str]:
    """Lines as git cuts them: at LF only (a CR stays part of its line)."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return [line.decode("utf-8", "replace") for line in lines]


def unified(old: bytes, new: bytes, context: int = 3) -> str:
    a, b = _lines(old), _lines(new)
    out: list[str] = []
    # Equal head and tail lines are matched first, as git's xdiff does: a one-line change
    # in a long file costs a linear scan, and only the middle goes to the matcher.
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    if (len(a) - head - tail) + (len(b) - head - tail) > MAX_DIFF_LINES:
        raise ValueError("too many changed lines")
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    matcher.get_opcodes = lambda: _opcodes(  # type: ignore[method-assign,assignment,return-value]
        SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False),
        head, len(a), len(b), tail,
    )

    def emit(mark: str, line: str) -> None:
        if line.endswith("\n"):
            out.append(mark + line[:-1])
        else:
            out.append(mark + line)
            out.append(NO_EOL)

    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(
            f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@"
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a[i1:i2]:
                    emit(" ", line)
                continue
            for line in a[i1:i2]:
                emit("-", line)
            for line in b[j1:j2]:
                emit("+", line)
    return "\n".join(out)


def _opcodes(
    middle: SequenceMatcher[str], head: int, la: int, lb: int, tail: int
) -> list[tuple[str, int, int, int, int]]:
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        if tag == "equal" and ops and ops[-1][0] == "equal":
            prev = ops.pop()
            ops.append(("equal", prev[1], i2 + head, prev[3], j2 + head))
            continue
        ops.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        if ops and ops[-1][0] == "equal":
            prev = ops.pop()
            ops.append(("equal", prev[1], la, prev[3], lb))
        else:
            ops.append(("equal", la - tail, la, lb - tail, lb))
    if not ops:
        ops.append(("equal", 0, la, 0, lb))
    return ops


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
