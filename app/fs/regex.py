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
folds Unicode case); `\\w`, `\\d`, `\\s` and `\\b` are ASCII, RE2's own
meaning (ripgrep's are Unicode: use `\\pL`, `\\p{Greek}` for letters beyond
ASCII).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2

from app.errors import BadArgument

_ANCHOR = re2._Anchor.UNANCHORED
_NULL = re2._NULL_SPAN
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


class RegexMatcher:
    """One RE2 pattern, compiled once per call, with the same interface as the literal Matcher."""

    plain = False  # a byte-exact needle it is not: every file goes through `lines`

    def __init__(self, query: str, case_sensitive: bool) -> None:
        if "\n" in query or "\r" in query or _NEWLINE.search(query):
            raise BadArgument(
                "invalid regex: the pattern spells a line break; search_text matches line by "
                "line (as ripgrep does), so a match never spans lines"
            )
        opts = re2.Options()
        opts.log_errors = False
        opts.never_nl = True
        opts.never_capture = True
        opts.case_sensitive = case_sensitive
        try:
            compiled = re2.compile(b"(?m)" + query.encode("utf-8", "surrogateescape"), opts)
        except re2.error as e:
            message = e.args[0] if e.args else str(e)
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise _refusal(query, str(message)) from None
        self.query = query
        self._match = compiled._regexp.Match  # one call per match, no Match object

    def search(self, buf: bytes, pos: int, end: int) -> int:
        """Start of the first match in buf[pos:end], or -1."""
        return int(self._match(_ANCHOR, buf, pos, end)[0][0])

    def first_line(self, buf: bytes, n: int) -> bool:
        """Whether any line of buf[:n] matches (cheaper than `lines` for files-only answers)."""
        at = self.search(buf, 0, n)
        return at >= 0 and not (at == n and (n == 0 or buf[n - 1] == 10))

    def lines(self, buf: bytes | bytearray, n: int) -> Iterator[tuple[int, int, int, int]]:
        """(line number, line start, line end, match start) of each matching line."""
        search = self._match
        data = bytes(buf) if not isinstance(buf, bytes) else buf
        line = 1
        last = 0
        pos = 0
        while pos <= n:
            at = search(_ANCHOR, data, pos, n)[0][0]
            if at < 0 or (at == n and (n == 0 or data[n - 1] == 10)):
                return  # none, or only the empty "line" after the final newline
            line += data.count(b"\n", last, at)
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at, n)
            if end < 0:
                end = n
            yield line, start, end, at
            if end >= n:
                return
            line += 1
            last = pos = end + 1
