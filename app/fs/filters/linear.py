"""The backtracking-free glob matcher, for patterns with several wildcards.

A backtracking regex of a pattern with several stars is exponential in them
(`*?*?*?…Z` against a 31-character name took seconds, holding the GIL). So
app/fs/filters/glob.py turns a pattern into a regex only when it has at most one
unbounded wildcard (the regex then tries at most one split per position:
O(name x pattern)); any other pattern is matched here, without backtracking:

- `**` wildcards split the pattern into blocks. Between two blocks anything
  may stand, so each block is placed at its earliest possible end (the usual
  greedy argument: an earlier end leaves more for the rest);
- `*`, `?` and classes never match `/`, so the `/`s a block matches are
  exactly its own literal `/`s: a block is a run of segment patterns laid on
  consecutive segments of the name, tried at each segment once;
- a segment pattern is fixed-width chunks between `*`s: the first chunk is
  anchored, the last one too when the pattern must end there, the others
  each taken at their leftmost place (`str.find`, or a quantifier-free regex
  for chunks with `?` or classes).

Every step is a C-level find on a slice, each segment of the name is tried
against each part of the pattern at most once per block: O(name x pattern),
with no pattern that multiplies it.

A name is split at '/' once; every position below is an offset inside one
segment string, and no segment pattern ever sees a '/'.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from app.fs.filters.syntax import ANY, LIT, STAR, Token, one_regex, tokens, validate


class _Chunk:
    """A fixed-width run of one-character tokens, found without backtracking."""

    __slots__ = ("at", "find", "width")

    def __init__(self, toks: list[Token]) -> None:
        self.width = len(toks)
        text = _literal_chars(toks)
        if text is not None:
            self.at: Callable[[str, int, int], bool] = (
                lambda t, i, hi: t.startswith(text, i, hi)
            )
            self.find: Callable[[str, int, int], int] = lambda t, lo, hi: t.find(text, lo, hi)
            return
        # One character per token: no quantifier, so no backtracking.
        c = re.compile("".join(one_regex(tok) for tok in toks), re.DOTALL)
        match, search = c.match, c.search

        def at(t: str, i: int, hi: int) -> bool:
            return match(t, i, hi) is not None

        def find(t: str, lo: int, hi: int) -> int:
            hit = search(t, lo, hi)
            return -1 if hit is None else hit.start()

        self.at, self.find = at, find


def _literal_chars(toks: list[Token]) -> str | None:
    if any(kind != LIT for kind, _ in toks):
        return None
    return "".join(ch for _, ch in toks)


class _Seg:
    """One segment pattern: fixed-width chunks between `*`s, on one segment string."""

    __slots__ = ("chunks", "first", "last", "min_width", "single")

    def __init__(self, toks: list[Token]) -> None:
        groups: list[list[Token]] = [[]]
        for tok in toks:
            if tok[0] == STAR:
                groups.append([])
            else:
                groups[-1].append(tok)
        self.chunks = [_Chunk(g) for g in groups]
        self.first, self.last = self.chunks[0], self.chunks[-1]
        self.single = len(self.chunks) == 1
        self.min_width = sum(c.width for c in self.chunks)

    def _middle(self, s: str, pos: int, hi: int) -> int:
        """The inner chunks, each at its leftmost place from pos, ending by hi: end or -1."""
        for c in self.chunks[1:-1]:
            at = c.find(s, pos, hi)
            if at < 0:
                return -1
            pos = at + c.width
        return pos

    def full(self, s: str) -> bool:
        n = len(s)
        first = self.first
        if self.single:
            return n == first.width and first.at(s, 0, n)
        last = self.last
        tail = n - last.width
        return (
            n >= self.min_width and first.at(s, 0, n) and last.at(s, tail, n)
            and self._middle(s, first.width, tail) >= 0
        )

    def _rest_end(self, s: str, pos: int) -> int:
        """From pos, just after the first chunk: the others at their leftmost; end or -1."""
        if self.single:
            return pos
        n = len(s)
        pos = self._middle(s, pos, n)
        at = -1 if pos < 0 else self.last.find(s, pos, n)
        return -1 if at < 0 else at + self.last.width

    def prefix_end(self, s: str, lo: int) -> int:
        """Earliest e such that s[lo:e] matches, or -1."""
        if not self.first.at(s, lo, len(s)):
            return -1
        return self._rest_end(s, lo + self.first.width)

    def suffix_ok(self, s: str, lo: int) -> bool:
        """Some start >= lo makes s[start:] match."""
        n = len(s)
        first, last = self.first, self.last
        if self.single:
            return n - first.width >= lo and first.at(s, n - first.width, n)
        tail = n - last.width
        if tail < lo or not last.at(s, tail, n):
            return False
        start = first.find(s, lo, tail)
        return start >= 0 and self._middle(s, start + first.width, tail) >= 0

    def inner_end(self, s: str, lo: int) -> int:
        """Earliest e such that some s[start:e] matches, lo <= start, or -1."""
        start = self.first.find(s, lo, len(s))
        return -1 if start < 0 else self._rest_end(s, start + self.first.width)


@dataclass(frozen=True)
class _Block:
    parts: tuple[_Seg, ...]  # segment patterns joined by literal '/'
    at_segment_start: bool  # follows `**/` (regex `(?:.*/)?`): begins where a segment does


_GAP_ANY, _GAP_SEGMENT = "gap", "gap/"  # `.*` and `(?:.*/)?`
_SLASH = "/"


def _blocks(pattern: str, segs: list[str]) -> list[_Block]:
    """The blocks between `**` gaps; the first is anchored at the start, the last at the end."""
    items: list[object] = []
    last = len(segs) - 1
    for k, seg in enumerate(segs):
        if seg == "**":
            items.append(_GAP_ANY if k == last else _GAP_SEGMENT)
            continue
        for tok in tokens(pattern, seg):
            items.append(_GAP_ANY if tok[0] == ANY else tok)
        if k != last:
            items.append(_SLASH)
    blocks: list[_Block] = []
    parts: list[list[Token]] = [[]]
    seg_start = False
    pending_gap: str | None = None
    for item in items:
        if item in (_GAP_ANY, _GAP_SEGMENT):
            if pending_gap is not None and parts == [[]]:
                # Two gaps with nothing between: `.*` wins over `(?:.*/)?`.
                pending_gap = _GAP_SEGMENT if (
                    pending_gap == _GAP_SEGMENT and item == _GAP_SEGMENT) else _GAP_ANY
                continue
            blocks.append(_Block(tuple(_Seg(p) for p in parts), seg_start))
            parts = [[]]
            pending_gap = str(item)
            continue
        if pending_gap is not None:
            seg_start = pending_gap == _GAP_SEGMENT
            pending_gap = None
        if item == _SLASH:
            parts.append([])
        else:
            parts[-1].append(item)  # type: ignore[arg-type]
    if pending_gap is not None:
        seg_start = pending_gap == _GAP_SEGMENT
    blocks.append(_Block(tuple(_Seg(p) for p in parts), seg_start))
    return blocks


class _Matcher:
    """A `/` pattern against a relative path, with no backtracking (module docstring)."""

    def __init__(self, pattern: str, segs: list[str]) -> None:
        self.blocks = _blocks(pattern, segs)

    def __call__(self, text: str) -> bool:
        segs = text.split("/")
        blocks = self.blocks
        head = blocks[0].parts
        j = len(head) - 1
        if len(blocks) == 1:
            return len(head) == len(segs) and all(
                p.full(s) for p, s in zip(head, segs, strict=True))
        if j >= len(segs) or not all(head[i].full(segs[i]) for i in range(j)):
            return False
        off = head[j].prefix_end(segs[j], 0)
        if off < 0:
            return False
        at = j
        for b in blocks[1:-1]:
            found = self._earliest(b, segs, at, off)
            if found is None:
                return False
            at, off = found
        return self._anchored_end(blocks[-1], segs, at, off)

    @staticmethod
    def _earliest(b: _Block, segs: list[str], at: int, off: int) -> tuple[int, int] | None:
        """Where the earliest match of `b` at or after (at, off) ends, or None."""
        parts = b.parts
        j = len(parts) - 1
        first, lastp = parts[0], parts[j]
        for t in range(at, len(segs) - j):
            lo = off if t == at else 0
            if b.at_segment_start and lo:
                continue
            if j == 0:
                end = first.prefix_end(segs[t], 0) if b.at_segment_start else first.inner_end(
                    segs[t], lo)
                if end >= 0:
                    return t, end
                continue
            ok = first.full(segs[t]) if b.at_segment_start else first.suffix_ok(segs[t], lo)
            if ok and all(parts[i].full(segs[t + i]) for i in range(1, j)):
                end = lastp.prefix_end(segs[t + j], 0)
                if end >= 0:
                    return t + j, end
        return None

    @staticmethod
    def _anchored_end(b: _Block, segs: list[str], at: int, off: int) -> bool:
        parts = b.parts
        j = len(parts) - 1
        t = len(segs) - 1 - j
        if t < at:
            return False
        lo = off if t == at else 0
        if not all(parts[i].full(segs[t + i]) for i in range(1, j + 1)):
            return False
        if b.at_segment_start:
            return lo == 0 and parts[0].full(segs[t])
        return parts[0].suffix_ok(segs[t], lo)


def linear_match(pattern: str) -> Callable[[str], bool]:
    """The backtracking-free matcher of `pattern`, whatever its wildcards (module docstring)."""
    segs = validate(pattern)
    if len(segs) == 1:
        seg = _Seg([(STAR if k == ANY else k, v) for k, v in tokens(pattern, segs[0])])
        return lambda name: seg.full(name)
    return _Matcher(pattern, segs)
