"""A literal query as a `Matcher`: its bytes found as they are, or without case.

The query is encoded once (UTF-8) and found in the buffer the file was read into, without
decoding: `finders.finder` (memchr on its rarest byte, then SIMD scans). With case, the
place it finds first is the match itself, so the prefilter is exact. Without case (only a
query holding a line break gets here: others run on RE2, `regex.py`), an ASCII needle is
found in a lowered copy of the text and any other through the case spellings of each of its
characters; the prefilter then cannot tell, and every file is walked.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

from app.fs.search.finders import Find, FirstOf, finder
from app.fs.search.lines import line_hits
from app.fs.search.matcher import LineHit


def _anywhere(data: bytes) -> int:
    return 0


class LiteralMatcher:
    """One literal, compiled once per call for every file."""

    def __init__(self, query: str, case_sensitive: bool) -> None:
        self.query = query
        self.case_sensitive = case_sensitive
        self.needle = query.encode("utf-8")
        self.lower = not case_sensitive and query.isascii()
        if self.lower:
            self.needle = self.needle.lower()
        self.multiline = b"\n" in self.needle  # a match may run across lines
        # First offset >= pos of the needle in `data` (bytes already lowered if need be).
        self.find: Find = finder(self.needle)
        # With case, where the needle is first is where the first match is.
        self.first: Callable[[bytes], int] = self.find if case_sensitive else _anywhere
        self.regex: re.Pattern[bytes] | None = None
        if not case_sensitive and not query.isascii():
            self.regex = re.compile(b"".join(_variants(ch) for ch in query))

    def lines(self, buf: bytes | bytearray, n: int, hint: int = 0) -> Iterator[LineHit]:
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

    def count_lines(self, data: bytes, n: int, hint: int = 0, most: int = -1) -> int:
        if not self.case_sensitive:  # the general path, from the start
            return sum(1 for _ in itertools.islice(self.lines(data, n),
                                                   most + 1 if most >= 0 else None))
        find = self.find
        if isinstance(find, FirstOf) and n == len(data) and not self.multiline:
            return find.count_lines(data, hint, most)  # from its listed matches, in windows
        needle = len(self.needle)
        count = 0
        at = hint if hint > 0 else find(data, 0)
        while at >= 0 and at + needle <= n:
            count += 1
            if count == most + 1:
                break
            end = data.find(b"\n", at, n)  # as `lines` does: the line the match starts on
            if end < 0:
                break
            at = find(data, end + 1)
        return count


def _variants(ch: str) -> bytes:
    forms = {ch, ch.lower(), ch.upper(), ch.casefold(), ch.swapcase()}
    spelled = sorted({f.encode("utf-8") for f in forms if len(f) == 1})
    if len(spelled) == 1:
        return re.escape(spelled[0])
    return b"(?:" + b"|".join(re.escape(s) for s in spelled) + b")"
