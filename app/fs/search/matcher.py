"""The matcher interface: what the searcher needs from a query compiled for one call.

As ripgrep's searcher knows its matcher only by a trait, `searcher.py` knows a query only
by `Matcher`, which three kinds implement: a literal (`literal.LiteralMatcher`, its bytes
found as they are; without case too when it holds a line break), a literal without case and
a regex (`regex.RegexMatcher`, RE2 line by line; `literal=True` for the former). Which one a
call gets is decided once, from its options (`text.matcher_for`).

`first` is the prefilter: one call per file, at memchr or SIMD speed, that passes over a
file without a match before any line is looked at. `lines` and `count_lines` then walk a
file that may match, from the line of that first place. A match is reported on the line it
starts on, once however many times that line matches; only a literal holding a line break
can match across lines (a regex that spells one is refused).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

# (line number from 1, line start, line end (its newline, or the text's end), match start)
LineHit = tuple[int, int, int, int]


class Matcher(Protocol):
    """A query compiled once per call, asked of every candidate file."""

    def first(self, data: bytes, /) -> int:
        """The prefilter: -1 when `data` holds no match; else a place no matching line comes
        before: the first match itself for a literal with case, else the first place of the
        literal every match holds (on the first matching line or before it), or 0 when the
        matcher cannot tell. Implementations bind it to their finder once (an attribute):
        it is called for every file."""
        ...

    def lines(self, buf: bytes | bytearray, n: int, hint: int = 0) -> Iterator[LineHit]:
        """Each line of buf[:n] with a match, in order; `hint`: what `first` answered, so
        the lines before its line are not looked at."""
        ...

    def count_lines(self, data: bytes, n: int, hint: int = 0, most: int = -1) -> int:
        """How many lines of data[:n] have a match, with no line numbers worked out;
        `hint` as for `lines`; with `most` >= 0, counting stops past it (one more)."""
        ...
