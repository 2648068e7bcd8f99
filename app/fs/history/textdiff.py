"""Unified diff text of two versions of a file, in git's hunk format (`fs/text/udiff.py`).

Lines are cut at LF only, undecodable bytes replaced; 3 lines of context like git. The
middle between the equal head and tail may hold at most `MAX_DIFF_LINES` lines (a
diff of more is not made), and is aligned only within the writer's pair limits (a larger
one is shown whole, counted in `Pairs.coarse`).
"""

from __future__ import annotations

from app.fs.control import NoControl
from app.fs.text import udiff

MAX_DIFF_LINES = 20_000
NO_EOL = udiff.NO_EOL.rstrip("\n")


def is_binary(data: bytes) -> bool:
    """git's rule: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


def unified(old: bytes, new: bytes, pairs: udiff.Pairs | None = None) -> str:
    """The hunks, lines joined by LF, no LF after the last; ValueError (`udiff.TooManyLines`)
    above MAX_DIFF_LINES changed lines."""
    a, b = old.decode("utf-8", "replace"), new.decode("utf-8", "replace")
    made = udiff.hunks(a, b, udiff.Pairs() if pairs is None else pairs, NoControl(),
                       most=MAX_DIFF_LINES)
    kept, _, _ = udiff.write(made, budget=None)  # at most each line once, and its marks
    return "".join(kept)[:-1]


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
