"""Finding a literal in one file's bytes: the inner loop of `search_text`.

Byte search without decoding: the query is encoded once (UTF-8) and looked
for with `bytes.find` (memchr-fast) on the buffer the file was read into.
Line numbers are counted only up to each match (`count(b"\\n", last, pos)`),
and a line is reported once however many times it matches. Case-insensitive
search lowers both sides when the query is ASCII (one C-level pass), and
otherwise compiles a bytes regex whose letters are the UTF-8 spellings of
each case variant. Files with a UTF-16/32 BOM are decoded, since their bytes
never hold the UTF-8 query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

import ahocorasick_rs

from app.fs.textio import WIDE_BOMS

try:
    import hyperscan
except ImportError:  # no wheel for this machine: folded literals use memchr and RE2 alone
    hyperscan = None  # type: ignore[assignment]

PREVIEW_CHARS = 200
# Bytes of source code and prose, most frequent first (roughly). The search
# anchors on the needle's rarest byte: `bytes.find` of one byte is a SIMD
# memchr, several times faster than a substring search, and a rare byte has
# few false candidates. Bytes not listed (non-ASCII, controls) count as rarest.
_COMMON = (
    b" etaoinsrlhdcu\n\tmpfgy.,_()=bw\"':;kv-0123456789x/ABCDEFGHIJKLMNOPRSTUVWY"
    b"zqj[]{}<>#*+!&|%$@?~^`QXZ\\"
)
_RANK = {b: len(_COMMON) - i for i, b in enumerate(_COMMON)}
MAX_FALSE_CANDIDATES = 8  # then a file is searched for the whole needle instead
FIRST_WINDOW = 256  # bytes `FirstOf` looks at first, then 16 times more each time, to 1 MiB


class FirstOf:
    """Where the first of a few byte strings starts: a SIMD scan (the Rust `aho-corasick`
    crate, through `ahocorasick-rs`) that runs near memchr speed where `bytes.find`
    slows down on a needle made of frequent bytes.

    It lists every match of the text it is given, so it is given windows growing
    from `FIRST_WINDOW` by 16 times: a call costs in proportion to the distance to the
    match it finds, and a text dense with matches costs no more than its length. One
    needle is first looked for with `bytes.find` in the first window (cheaper there)."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.longest = max(len(x) for x in needles)
        self.single = needles[0] if len(needles) == 1 else None
        self._scan = ahocorasick_rs.BytesAhoCorasick(list(needles)).find_matches_as_indexes

    def __call__(self, data: bytes, pos: int = 0) -> int:
        n = len(data)
        width = FIRST_WINDOW
        if self.single is not None:
            at = data.find(self.single, pos, pos + width + self.longest - 1)
            if at >= 0 or pos + width >= n:
                return at
            # None that near: at least `width` bytes to the next, so a window of 64
            # times that lists at most 64 matches, and one call scans most files.
            pos += width
            width *= 64
        view = memoryview(data)
        while pos < n:
            end = min(n, pos + width)
            # The window reaches past `end` by a needle's length less one: a match
            # that starts before `end` is seen whole, and the next window starts there.
            whole = pos == 0 and end == n
            found = self._scan(data if whole else view[pos : end + self.longest - 1])
            if found:
                return pos + found[0][1]
            pos = end
            width = min(width * 16, 1 << 20)
        return -1


class Caseless:
    """Where an ASCII string first starts, in any case: Hyperscan's SIMD literal matcher,
    where RE2 without case runs a DFA over every byte. Only where `hyperscan` imports."""

    def __init__(self, piece: bytes) -> None:
        hs = hyperscan
        db = hs.Database(mode=hs.HS_MODE_BLOCK)
        db.compile(expressions=[b"".join(b"\\x%02x" % b for b in piece)], ids=[0], elements=1,
                   flags=[hs.HS_FLAG_CASELESS | hs.HS_FLAG_SINGLEMATCH])
        self._scan = db.scan
        self._scratch = hs.Scratch(db)  # one per matcher, and a matcher serves one call
        self.size = len(piece)

    def __call__(self, data: bytes, pos: int = 0) -> int:
        ends: list[int] = []
        self._scan(memoryview(data)[pos:],  # type: ignore[type-var]  # any buffer does
                   match_event_handler=lambda *m: ends.append(m[2]), scratch=self._scratch)
        return pos + ends[0] - self.size if ends else -1


def wide_encoding(head: bytes | bytearray | memoryview) -> tuple[str, int] | None:
    """The encoding and BOM length of a UTF-16/32 file, else None."""
    start = bytes(head[:4])
    for bom, enc in WIDE_BOMS:
        if start.startswith(bom):
            return enc, len(bom)
    return None


class Matcher:
    """One query, compiled once per call for every file."""

    def __init__(self, query: str, case_sensitive: bool) -> None:
        self.query = query
        self.case_sensitive = case_sensitive
        self.needle = query.encode("utf-8")
        self.plain = case_sensitive  # a byte-exact needle: `find` alone says yes or no
        self.lower = not case_sensitive and query.isascii()
        if self.lower:
            self.needle = self.needle.lower()
        rare_at = min(range(len(self.needle)), key=lambda i: _RANK.get(self.needle[i], 0))
        self.rare = self.needle[rare_at : rare_at + 1]
        self.rare_at = rare_at
        self.anchored = len(self.needle) > 1
        self.calls = self.false_candidates = 0
        self.first = FirstOf([self.needle]) if self.anchored else None
        self.regex: re.Pattern[bytes] | None = None
        if not case_sensitive and not query.isascii():
            self.regex = re.compile(b"".join(_variants(ch) for ch in query))

    def find(self, data: bytes, pos: int = 0) -> int:
        """First offset >= pos of the needle in `data` (bytes already lowered if need be)."""
        needle = self.needle
        if not self.anchored:
            return data.find(needle, pos) if self.first is None else self.first(data, pos)
        rare, k = self.rare, self.rare_at
        self.calls += 1
        hit = data.find(rare, pos + k)
        misses = 0
        while hit >= 0:
            if data.startswith(needle, hit - k):
                return hit - k
            misses += 1
            if misses > MAX_FALSE_CANDIDATES:  # the rare byte is common here
                self.false_candidates += misses
                if self.false_candidates > 2 * self.calls + 64:
                    self.anchored = False  # and in this tree: stop anchoring on it
                return self.first(data, hit - k + 1)  # type: ignore[misc]
            hit = data.find(rare, hit + 1)
        self.false_candidates += misses
        return -1

    def lines(self, buf: bytes | bytearray, n: int, hint: int = 0
              ) -> Iterator[tuple[int, int, int, int]]:
        """(line number, line start, line end, match start) of each matching line;
        `hint`: no match starts before it (where `find` saw the first)."""
        hay = bytes(memoryview(buf)[:n]).lower() if self.lower else buf
        find: Callable[[int], int]
        if self.regex is not None:
            search = self.regex.search

            def find(pos: int) -> int:
                m = search(hay, pos, n)
                return -1 if m is None else m.start()
        else:
            fast = self.find
            whole = len(hay) == n

            def find(pos: int) -> int:
                at = fast(hay, pos) if whole else hay.find(self.needle, pos, n)  # type: ignore[arg-type]
                return -1 if at < 0 or at + len(self.needle) > n else at

        return line_hits(buf, n, find, find(hint))


def line_hits(buf: bytes | bytearray, n: int, find: Callable[[int], int], pos: int
              ) -> Iterator[tuple[int, int, int, int]]:
    """(line number, line start, line end, match start) of each line of buf[:n] with a
    match: `pos` is the first match's start, `find(i)` the next one's at or after i (-1:
    none). Lines are counted only up to each match, and a line is reported once."""
    line = 1
    last = 0
    while pos >= 0:
        line += buf.count(b"\n", last, pos)
        start = buf.rfind(b"\n", 0, pos) + 1
        end = buf.find(b"\n", pos, n)
        if end < 0:
            end = n
        yield line, start, end, pos
        if end >= n:
            return
        line += 1  # the newline at `end`
        last = end + 1
        pos = find(last)


def _variants(ch: str) -> bytes:
    forms = {ch, ch.lower(), ch.upper(), ch.casefold(), ch.swapcase()}
    spelled = sorted({f.encode("utf-8") for f in forms if len(f) == 1})
    if len(spelled) == 1:
        return re.escape(spelled[0])
    return b"(?:" + b"|".join(re.escape(s) for s in spelled) + b")"


def preview(line: bytes, col: int) -> str:
    """The matching line, decoded for display, cut around the match when long."""
    if len(line) > PREVIEW_CHARS * 2:
        lo = max(0, col - PREVIEW_CHARS // 3)
        hi = min(len(line), lo + PREVIEW_CHARS)
        text = line[lo:hi].decode("utf-8", "replace").strip("\ufffd")
        return ("..." if lo else "") + text.strip() + ("..." if hi < len(line) else "")
    text = line.decode("utf-8", "replace")
    return text.rstrip("\r").lstrip("\ufeff").strip()
