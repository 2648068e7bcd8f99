"""Where a literal is next in a file's bytes: the inner loop of `search_text`, at SIMD speed.

Byte search without decoding: a needle is found with `FirstOf` (memchr on its rarest byte,
then the SIMD scans of the `aho-corasick` crate) in the buffer the file was read into, and
`Caseless` finds an ASCII string in any case (Hyperscan). Both answer the next place from a
position, and list the matches of a window of the text at a time when asked often on one
text, so a text dense with the needle costs one scan a window, not one a match. The
matchers (`literal.py`, `regex.py`) build on them; nothing here knows lines.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Protocol

import ahocorasick_rs

try:
    import hyperscan
except ImportError:  # no wheel for this machine: folded literals use memchr and RE2 alone
    hyperscan = None  # type: ignore[assignment]

# Bytes of source code and prose, most frequent first (roughly), for the rarest byte of
# a needle (`FirstOf`'s memchr anchor); bytes not listed (non-ASCII, controls) rarest.
_COMMON = (
    b" etaoinsrlhdcu\n\tmpfgy.,_()=bw\"':;kv-0123456789x/ABCDEFGHIJKLMNOPRSTUVWY"
    b"zqj[]{}<>#*+!&|%$@?~^`QXZ\\"
)
RANK = {b: len(_COMMON) - i for i, b in enumerate(_COMMON)}
MAX_FALSE_CANDIDATES = 8  # then a file is searched for the whole needle instead
# `FirstOf` lists the matches of a window of the text at a time, LISTED times its
# shortest needle (at most 1 MiB): a text dense with matches lists a bounded number
# per scan, and most files are one window.
LISTED = 16384
SCANS_TO_FIRST = 8  # `Caseless` calls on one text before it lists windows of matches


class Find(Protocol):
    """Where a needle is first in `data` from `pos`, or -1."""

    def __call__(self, data: bytes, pos: int = 0, /) -> int: ...


class FirstOf:
    """Where the first of a few byte strings starts: a SIMD scan (the Rust `aho-corasick`
    crate, through `ahocorasick-rs`, leftmost-first) that runs near memchr speed where
    `bytes.find` slows down on a needle made of frequent bytes.

    One needle is first anchored on its rarest byte with memchr, until that byte proves
    common in the call's files (MAX_FALSE_CANDIDATES). The scan lists every match in a
    window of the text, and the list answers the next calls on the same text: one scan
    per window, not one per match. Where a listed match covers `pos`, the scan skipped
    overlaps: the starts before that match's end are looked at directly."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.longest = max(len(x) for x in needles)
        self.window = min(LISTED * min(len(x) for x in needles), 1 << 20)
        self._scan = ahocorasick_rs.BytesAhoCorasick(
            list(needles), matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST,
        ).find_matches_as_indexes
        self._text: bytes | None = None  # the text of the listed window
        self._lo = self._hi = 0  # the window: the matches starting in [lo, hi) are listed
        self._found: list[tuple[int, int, int]] = []  # as the scan gives them, from lo
        self._starts: list[int] | None = None  # their starts and ends, once asked for
        self._ends: list[int] = []
        self.needles = list(needles)
        one = needles[0]
        self.anchored = len(needles) == 1 and len(one) > 1
        self.needle = one
        self.rare_at = min(range(len(one)), key=lambda i: RANK.get(one[i], 0))
        self.rare = one[self.rare_at : self.rare_at + 1]
        self.calls = self.false_candidates = 0

    def __call__(self, data: bytes, pos: int = 0) -> int:
        if self.anchored:
            rare, k, needle = self.rare, self.rare_at, self.needle
            self.calls += 1
            hit = data.find(rare, pos + k)
            misses = 0
            while hit >= 0:
                if data.startswith(needle, hit - k):
                    return hit - k
                misses += 1
                if misses > MAX_FALSE_CANDIDATES:  # the rare byte is common here
                    pos = hit - k + 1
                    break
                hit = data.find(rare, hit + 1)
            self.false_candidates += misses
            if self.false_candidates > 2 * self.calls + 64:
                self.anchored = False  # and in this tree: the scan from now on
            if hit < 0:
                return -1
        if data is not self._text and not pos and len(data) <= self.window:
            # A file's first call, and the file is one window (most are): one scan, and
            # the list indexed only if the file is asked again.
            found = self._scan(data)
            self._text, self._lo, self._hi, self._found = data, 0, len(data), found
            self._starts = None
            return found[0][1] if found else -1
        n = len(data)
        while pos < n:
            if data is not self._text or not self._lo <= pos < self._hi:
                self._list(data, pos)
            starts = self._starts if self._starts is not None else self._index()
            i = bisect_left(starts, pos)
            if i and self._ends[i - 1] > pos:
                # Inside a listed match, where the scan skipped overlaps: look at the few
                # starts before its end directly (listing again per call was quadratic).
                e = self._ends[i - 1]
                near = [k for k in (data.find(x, pos, e + len(x) - 1) for x in self.needles)
                        if k >= 0]
                if near:
                    return min(near)
            if i < len(starts):
                return starts[i]
            pos = self._hi
        return -1

    def count_lines(self, data: bytes, pos: int = 0, most: int = -1) -> int:
        """Lines of `data` from `pos` on (a line's start, or the first match) with a match of
        needles with no line break (overlapping matches share a line: the list misses none);
        with `most` >= 0, counting stops past it. One step per line, not a call a match."""
        count = 0
        end = -1  # where the last counted line ends
        n = len(data)
        while pos < n:
            if data is not self._text or not self._lo <= pos < self._hi:
                self._list(data, pos)  # else the list of the call that found the first
            lo, hi = self._lo, self._hi
            for _, s, _ in self._found:
                s += lo
                if s >= hi:
                    break
                if s > end and s >= pos:
                    count += 1
                    end = data.find(b"\n", s)
                    if count == most + 1 or end < 0:
                        return count
            pos = max(hi, end + 1)
        return count

    def _list(self, data: bytes, pos: int) -> None:
        end = min(len(data), pos + self.window)
        # The window reaches past `end` by a needle's length less one: a match that
        # starts before `end` is seen whole. One that starts after may be cut: not listed.
        self._found = self._scan(memoryview(data)[pos : end + self.longest - 1])
        self._text, self._lo, self._hi, self._starts = data, pos, end, None

    def _index(self) -> list[int]:
        lo, hi = self._lo, self._hi
        self._starts = [lo + s for _, s, _ in self._found if lo + s < hi]
        self._ends = [lo + e for _, s, e in self._found if lo + s < hi]
        return self._starts


class Caseless:
    """Where an ASCII string first starts, in any case: Hyperscan's SIMD literal matcher,
    where RE2 without case runs a DFA over every byte. Only where `hyperscan` imports.

    A text's first SCANS_TO_FIRST calls each scan to the next match and stop there
    (SINGLEMATCH: most files are asked a few times at most); past them, each scan lists
    the matches of a window (LISTED bytes) to answer the next calls, unless they
    overlap densely (listing costs a Python call a match)."""

    def __init__(self, piece: bytes) -> None:
        hs = hyperscan
        spelled = [b"".join(b"\\x%02x" % b for b in piece)]
        one = hs.Database(mode=hs.HS_MODE_BLOCK)
        one.compile(expressions=spelled, ids=[0], elements=1,
                    flags=[hs.HS_FLAG_CASELESS | hs.HS_FLAG_SINGLEMATCH])
        every = hs.Database(mode=hs.HS_MODE_BLOCK)
        every.compile(expressions=spelled, ids=[0], elements=1, flags=[hs.HS_FLAG_CASELESS])
        self._scan, self._scratch = one.scan, hs.Scratch(one)  # a matcher serves one call
        self._every = (every.scan, hs.Scratch(every))
        self.size = len(piece)
        self._end = -1  # where the first scan saw the piece end
        self._text: bytes | None = None  # the text of the listed window
        self._lo = self._hi = 0  # the window: the matches starting in [lo, hi) are listed
        self._starts: list[int] = []
        self._calls = 0  # on this text
        self._overlapping = False  # this text's matches overlap densely: no more listing

    def _hit(self, _id: int, _start: int, end: int, _flags: int, _context: object) -> None:
        self._end = end

    def __call__(self, data: bytes, pos: int = 0) -> int:
        if data is self._text:
            self._calls += 1
            if self._calls > SCANS_TO_FIRST and not self._overlapping:
                return self._listed(data, pos)  # dense with the string: from listed windows
        else:
            self._text, self._calls, self._lo, self._hi = data, 1, 0, 0
            self._overlapping = False
        self._end = -1
        # Positional arguments: the binding parses keywords by name on every call.
        self._scan(memoryview(data)[pos:] if pos else data,  # type: ignore[type-var]
                   self._hit, 0, None, self._scratch)  # any buffer does
        return pos + self._end - self.size if self._end >= 0 else -1

    def _listed(self, data: bytes, pos: int) -> int:
        n = len(data)
        while pos < n:
            if not self._lo <= pos < self._hi:
                self._list(data, pos)
            i = bisect_left(self._starts, pos)
            if i < len(self._starts):
                return self._starts[i]
            pos = self._hi
        return -1

    def _list(self, data: bytes, pos: int) -> None:
        end = min(len(data), pos + LISTED)  # bytes: overlaps list up to one match a byte
        ends: list[int] = []
        scan, scratch = self._every
        # Every match, overlapping ones too: the first start at or after any pos is listed.
        scan(memoryview(data)[pos : end + self.size - 1],  # type: ignore[type-var]
             lambda _i, _f, e, _fl, _c: ends.append(e), 0, None, scratch)
        size = self.size
        self._lo, self._hi = pos, end
        # Past `end` too: every match the slice holds whole is listed, so none is missed.
        self._starts = [pos + e - size for e in ends]
        # Over twice what fits without overlaps (`aaa` in `aaaa…`): back to first-match scans.
        self._overlapping = len(ends) * size > 2 * (end - pos + size)


def finder(needle: bytes) -> Find:
    """Where `needle` is first from a position: `FirstOf` for two bytes or more, memchr for one."""
    if len(needle) > 1:
        return FirstOf([needle])

    def one_byte(data: bytes, pos: int = 0, /) -> int:
        return data.find(needle, pos)

    return one_byte
