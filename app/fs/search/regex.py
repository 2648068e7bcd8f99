"""`search_text(regex=true)`: RE2 patterns, line by line like ripgrep, in linear time.

The pattern is compiled once per call with RE2 (`google-re2`), which runs
every pattern in time linear in the text: no catastrophic backtracking, so
`(a+)+$` on a long line costs what `a+$` does. What RE2 cannot run in linear
time (backreferences, lookahead/lookbehind, atomic groups, possessive
repetition) is refused with an error that says so.

Line-oriented as ripgrep is: the whole file buffer is searched in one call,
with `^` and `$` at line boundaries (multi-line mode) and RE2's `never_nl`,
so no match ever contains a newline (`.`, `\\s`, `[^x]` stop at the end of a
line); a pattern that spells a newline (`\\n`) is refused, as ripgrep
refuses it. Matching is on bytes as UTF-8 (`.` is one code point, `(?i)`
folds Unicode case); `\\w`, `\\d`, `\\s` are ripgrep's (Unicode), written out for
RE2 before it compiles the pattern, and so is `\\b` at a pattern's ends
(`unicode.py`); any other `\\b` is RE2's ASCII one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import re2

from app.errors import BadArgument
from app.fs import re2raw
from app.fs.search.expansion import MAX_EXPANDED, expanded_size
from app.fs.search.finders import RANK, Caseless, FirstOf, finder, hyperscan
from app.fs.search.lines import line_hits
from app.fs.search.matcher import LineHit
from app.fs.search.required import required_alternatives, required_literal
from app.fs.search.unicode import unicode_pattern

_ANCHOR = re2raw.UNANCHORED
_NULL = re2raw.NULL_SPAN
_BACKREF = re.compile(r"(?<!\\)(?:\\\\)*\\([1-9]|k<|g\{|g[0-9])")
_NEWLINE = re.compile(r"(?<!\\)(?:\\\\)*\\n")


def _refusal(pattern: str, message: str) -> BadArgument:
    if any(op in message for op in ("(?=", "(?!", "(?<=", "(?<!")):
        why = ("lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported: patterns run "
               "on RE2, in time linear in the text, which rules them out; search for the part "
               "you want and narrow by hand")
    elif "(?P=" in pattern or "(?P>" in pattern or _BACKREF.search(pattern):
        why = ("backreferences (\\1, (?P=name)) are not supported: patterns run on RE2, in time "
               "linear in the text, which rules them out")
    elif "(?>" in message or "++" in message or "*+" in message or "?+" in message:
        why = ("atomic groups and possessive repetition are not supported (RE2 syntax); "
               "a plain group or repetition does the same in linear time")
    else:
        why = f"{message} (RE2 syntax)"
    return BadArgument(f"invalid regex: {why}")


# ASCII letters whose Unicode case orbit leaves ASCII: K (U+212A KELVIN SIGN) and
# S (U+017F LONG S). A folded match of any other ASCII byte holds that byte in one case.
_ORBIT_LEAVES_ASCII = frozenset(b"kKsS")
MAX_LINE_MISSES = 16  # lines with the literal but no match, in a row, before RE2 runs on


def _folded_piece(raw: bytes) -> bytes | None:
    """The longest piece of `raw` (3 bytes or more) with no byte whose case orbit leaves
    ASCII: a folded match of `raw` holds it in some ASCII case. None when there is none."""
    best = max(re.split(rb"[kKsS\x80-\xff]+", raw), key=len)
    return best if len(best) >= 3 else None


def _folded_prefilter(lit: str, opts: re2.Options | None) -> Callable[[bytes], int] | None:
    """For a literal matched without case: where its longest ASCII piece is first, in any
    case (`Caseless`); failing that, a file holding neither case of its rarest ASCII byte
    cannot match (two memchr), and with `opts`, RE2 on the bare literal says where."""
    raw = lit.encode("utf-8", "surrogateescape")
    piece = _folded_piece(raw)
    if piece is not None and hyperscan is not None:
        return Caseless(piece)
    candidates = [b for b in raw if b < 0x80 and b not in _ORBIT_LEAVES_ASCII]
    pair = None
    if candidates:
        rare = min(candidates, key=lambda b: RANK.get(b, 0))
        pair = (bytes([rare]).lower(), bytes([rare]).upper())
    match = None
    if opts is not None and len(raw) >= 3:
        opts.case_sensitive = False
        match = re2raw.raw_match(re2.compile(re2.escape(raw), opts))
    if pair is None and match is None:
        return None
    lo, up = pair if pair is not None else (b"", b"")

    def folded(data: bytes) -> int:
        if pair is not None and data.find(lo) < 0 and (lo == up or data.find(up) < 0):
            return -1
        if match is None:
            return 0
        return int(match(_ANCHOR, data, 0, len(data))[0][0])

    return folded


class RegexMatcher:
    """One RE2 pattern (or a literal without case), compiled once per call: a `Matcher`."""

    def __init__(self, query: str, case_sensitive: bool, literal: bool = False) -> None:
        """`literal`: the query is plain text (how a case-insensitive literal search runs:
        RE2's folding is Unicode's, as ripgrep's `-i`, and it needs no lowered copy)."""
        if "\n" in query or "\r" in query or (not literal and _NEWLINE.search(query)):
            raise BadArgument(
                "invalid regex: the pattern spells a line break; search_text matches line by "
                "line (as ripgrep does), so a match never spans lines"
            )
        if not literal and expanded_size(query) > MAX_EXPANDED:
            raise BadArgument(
                f"invalid regex: its counted repetitions ({{n,m}}) written out pass "
                f"{MAX_EXPANDED} items, and compiling it would take seconds (the time grows "
                "with the square of that); use smaller counts, or * and +"
            )
        opts = re2.Options()
        opts.log_errors = False
        opts.never_nl = True
        opts.never_capture = True
        opts.case_sensitive = case_sensitive
        raw = query.encode("utf-8", "surrogateescape")
        if not literal:  # ripgrep's \w \d \s \b, written for RE2
            raw = unicode_pattern(query).encode("utf-8", "surrogateescape")
        try:
            compiled = re2.compile(b"(?m)" + (re2.escape(raw) if literal else raw), opts)
        except re2.error as e:
            message = e.args[0] if e.args else str(e)
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise _refusal(query, str(message)) from None
        self.query = query
        self._match = re2raw.raw_match(compiled)  # one call per match, no Match object
        # A literal every match holds: a file without it is passed over at memchr speed
        # (case-sensitive) or with RE2 on the bare literal (folded), before the pattern runs.
        self.prefilter: Callable[[bytes], int] | None = None
        # Where the literal is next from a position: after each matching line, RE2 starts
        # again at the line of the literal's next occurrence, not at the next line.
        self.seek: Callable[[bytes, int], int] | None = None
        req = (query, True) if literal else required_literal(query)
        if req is not None:
            lit, fold = req
            fold = fold or not case_sensitive
            if not fold and query.startswith(lit):
                pass  # RE2 itself skips ahead with memchr to a literal prefix: faster
            elif not fold:
                self.prefilter = self.seek = finder(lit.encode("utf-8"))
            else:
                self.prefilter = _folded_prefilter(lit, None if literal else opts)
                if isinstance(self.prefilter, Caseless):
                    self.seek = self.prefilter
        elif case_sensitive and (words := required_alternatives(query)) is not None:
            self.prefilter = self.seek = FirstOf([w.encode("utf-8", "surrogateescape")
                                                  for w in words])
        # Where the first match may start at the earliest: where the required literal is
        # first, else where RE2 matches first; -1 when `data` cannot match. A file without
        # a match costs one call (the prefilter's own), with no line loop set up for it.
        self.first: Callable[[bytes], int] = (
            self.prefilter if self.prefilter is not None else self._first_match)

    def _first_match(self, data: bytes) -> int:
        n = len(data)
        at = int(self._match(_ANCHOR, data, 0, n)[0][0])
        return -1 if at < 0 or (at == n and (n == 0 or data[n - 1] == 10)) else at

    def count_lines(self, data: bytes, n: int, hint: int = 0, most: int = -1) -> int:
        """How many lines of data[:n] match (no line numbers worked out); with `most`
        >= 0, the count stops past it (the call's budget allows no more lines).

        `hint`: where `first` saw the required literal first, so the search starts at its
        line (a match never spans lines, and each holds the literal): RE2 is not run over
        the lines before it, which `first` has already passed over at memchr speed."""
        count = 0
        pos = data.rfind(b"\n", 0, hint) + 1 if hint > 0 else 0
        lit = hint if hint > 0 and self.seek is not None else -1  # `first` was the seek
        while pos <= n:
            at = self._next(data, pos, n, lit)
            lit = -1
            if at < 0:
                break
            count += 1
            if count == most + 1:
                break
            pos = data.find(b"\n", at, n) + 1
            if not pos:
                break
        return count

    def lines(self, buf: bytes | bytearray, n: int, hint: int = 0) -> Iterator[LineHit]:
        """(line number, line start, line end, match start) of each matching line;
        `hint` as for `count_lines`."""
        data = bytes(buf) if not isinstance(buf, bytes) else buf

        def find(pos: int) -> int:
            return self._next(data, pos, n)

        if hint <= 0 or self.seek is None:
            return line_hits(data, n, find, find(data.rfind(b"\n", 0, hint) + 1 if hint > 0 else 0))
        at = self._next(data, data.rfind(b"\n", 0, hint) + 1, n, hint)  # `first` was the seek
        return line_hits(data, n, find, at)

    def _next(self, data: bytes, pos: int, n: int, lit: int = -1) -> int:
        """Start of the first match in data[pos:n] (`pos` starts a line), or -1; `lit`:
        where the literal is next from `pos`, when the caller knows.

        With a literal to seek, RE2 runs on the lines that hold it, one by one, and not
        over the lines between; after MAX_LINE_MISSES such lines without a match in a
        row, over the rest of the text (a file dense with the literal costs no more
        Python steps than matches)."""
        search, seek = self._match, self.seek
        misses = 0
        while seek is not None and misses < MAX_LINE_MISSES:
            if lit < 0:
                lit = seek(data, pos)
            if lit < 0 or lit >= n:
                return -1
            pos = data.rfind(b"\n", 0, lit) + 1
            end = data.find(b"\n", lit, n)
            if end < 0:
                end = n
            # Bounded at line ends: ^, $ and \b read the same there as in the whole text.
            at = int(search(_ANCHOR, data, pos, end)[0][0])
            if at >= 0:
                return at
            misses += 1
            pos, lit = end + 1, -1
            if pos > n:
                return -1
        at = int(search(_ANCHOR, data, pos, n)[0][0])
        # none, or only the empty "line" after the final newline
        return -1 if at < 0 or (at == n and (n == 0 or data[n - 1] == 10)) else at
