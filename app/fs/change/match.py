"""Where an `old_text` is in a file: the one matcher of `edit_file` and `apply_patch`.

Levels, safest first; the first that finds `old_text` decides, and a level that finds
two or more places refuses (naming their lines) without falling through to a looser one
(docs/tools.md, "Matching levels"). Each level includes the ones before it:

1. `exact`: the text itself (a CRLF file's "\\r\\n" for the agent's "\\n"); a substring
   anywhere for `edit_file`, whole lines for a patch hunk;
2. `line_endings`: whole lines, CR LF or LF alike, blank lines at old_text's two ends
   left out of the match;
3. `trailing_space`: each line's trailing whitespace ignored;
4. `indentation`: each line's leading whitespace ignored too, provided one column delta
   holds on every non-blank line (relative indentation the same); the replacement is
   moved by that delta, in the file's indent character;
5. `punctuation`: curly quotes, dashes, Unicode spaces and the ellipsis folded to ASCII;
6. `line_numbers`: this server's read prefixes (`12 text`, `12 | text`, consecutive)
   stripped, when every line of old_text carries one.

Cost: per level every file line is keyed once and the key interned as one character,
so the search for old_text's lines is one `str.find` of a string of line ids (linear,
in C), whatever the repetition; each candidate found is checked line by line, and the
search stops at the second place (or collects them all, when a line number chooses).
At most MAX_CANDIDATES candidates are checked per level: past them the call is refused
(a check failing late at every line would cost lines x old_text's lines).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.control import Control, NoControl

LEVELS = ("exact", "line_endings", "trailing_space", "indentation", "punctuation",
          "line_numbers")
# Places whose line keys agree, checked at one level (indentation, line bounds) before the
# call refuses: a check that fails late at every line would cost lines x old_text's lines.
MAX_CANDIDATES = 256
SHOWN_LINES = 10  # lines named by an ambiguity error
DEFAULT_TAB = 4  # columns of a tab when nothing in the text says otherwise
_NUMBERED = re.compile(r" *(\d+)(?: \| ?| |\t|\s*$)")
_LONE_LF = re.compile(r"(?<!\r)\n")

# Look-alikes and what they fold to, by class (a class the file does not use is also
# folded in the replacement: the copy's slip, not the agent's intent).
FOLDS: dict[str, dict[str, str | int | None]] = {
    "single quotes": dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
    "double quotes": dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
    "dashes": dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    "spaces": dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
                            "\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    "ellipsis": {"\u2026": "..."},
}
_FOLD_ALL = str.maketrans({k: v for table in FOLDS.values() for k, v in table.items()})


@dataclass(frozen=True)
class Place:
    lo: int  # offset of the first matched character
    hi: int  # offset after the last
    line: int  # 1-based line where the match starts
    level: str  # one of LEVELS
    new: str  # what goes in place of text[lo:hi]


class Ambiguous(BadArgument):
    """The deciding level found two or more places."""

    def __init__(self, message: str, level: str, lines: list[int]) -> None:
        super().__init__(message)
        self.level, self.lines = level, lines


class NoPlace(BadArgument):
    """No level found old_text."""


@dataclass(frozen=True)
class _Old:
    """old_text (or new_text) as lines, the blank lines at its ends counted apart."""

    core: list[str]  # the lines from the first non-blank one to the last, without "\r"
    lead: int  # blank lines before the core
    trail: int  # line ends after the core's last line


def split_ends(text: str) -> _Old:
    parts = [p[:-1] if p.endswith("\r") else p for p in text.split("\n")]
    first = next((i for i, p in enumerate(parts) if p.strip()), len(parts))
    last = next((i for i in range(len(parts) - 1, -1, -1) if parts[i].strip()), -1)
    if last < first:
        return _Old([], len(parts) - 1, 0)
    return _Old(parts[first : last + 1], first, len(parts) - 1 - last)


def _strip_ends(new: str, old: _Old) -> str:
    """new_text without the blank lines old_text had at its ends (as many as both have)."""
    got = split_ends(new)
    if not got.core:
        return ""
    lead = max(0, got.lead - old.lead)
    trail = max(0, got.trail - old.trail)
    return "\n" * lead + "\n".join(got.core) + "\n" * trail


def numbered(lines: list[str]) -> list[str] | None:
    """`lines` without the read prefixes, when every one carries one and they count up
    by one; else None."""
    out, first = [], None
    for i, line in enumerate(lines):
        m = _NUMBERED.match(line)
        if m is None:
            return None
        n = int(m.group(1))
        first = n - i if first is None else first
        if n != first + i:
            return None
        out.append(line[m.end():])
    return out or None


def _strip_numbers(text: str) -> str | None:
    """text without read prefixes on every line (any numbers), else None."""
    parts = text.split("\n")
    body = parts[:-1] if parts and parts[-1] == "" else parts
    out = []
    for line in body:
        m = _NUMBERED.match(line)
        if m is None:
            return None
        out.append(line[m.end():])
    return "\n".join(out) + ("\n" if len(body) < len(parts) else "")


def _width(indent: str, tab: int) -> int:
    col = 0
    for ch in indent:
        col = (col // tab + 1) * tab if ch == "\t" else col + 1
    return col


def _render(col: int, tabs: bool, tab: int) -> str:
    return "\t" * (col // tab) + " " * (col % tab) if tabs else " " * col


def key_at(level: int) -> Callable[[str], str]:
    if level == 1:
        return lambda s: s
    if level == 2:
        return str.rstrip
    if level == 3:
        return str.strip
    return lambda s: s.strip().translate(_FOLD_ALL)


class Matcher:
    """Places old_text in one text (the file `name`, for messages). `work` counts the
    lines keyed and compared."""

    def __init__(self, text: str, name: str, control: Control | None = None,
                 crlf: bool | None = None) -> None:
        """`crlf`: the file ends every line with CR LF (by default: `text` does)."""
        self.text, self.name = text, name
        self.control = control or NoControl()
        self.work = 0
        self.crlf = all_crlf(text) if crlf is None else crlf
        self._starts: list[int] | None = None
        self._lines: list[str] | None = None
        self._keys: dict[int, tuple[str, dict[str, str]]] = {}

    @property
    def starts(self) -> list[int]:
        """Where each line starts (made on first use: an exact place needs none)."""
        if self._starts is None:
            starts = [0]
            starts.extend(m.end() for m in re.finditer("\n", self.text))
            if starts[-1] == len(self.text) and len(starts) > 1:
                starts.pop()  # no line after a final newline
            self._starts = starts
        return self._starts

    @property
    def lines(self) -> list[str]:
        """The text's lines, without their line ends."""
        if self._lines is None:
            text, starts = self.text, self.starts
            out = []
            for s, e in zip(starts, [*starts[1:], len(text)], strict=True):
                line = text[s:e]
                line = line[:-1] if line.endswith("\n") else line
                out.append(line[:-1] if line.endswith("\r") else line)
            self._lines = out
            self.work += len(out)
        return self._lines

    def ids(self, level: int) -> tuple[str, dict[str, str]]:
        """Every line's key at `level` (1-4) as one character, and the key -> character map."""
        got = self._keys.get(level)
        if got is None:
            key, ids = key_at(level), dict[str, str]()
            chars = []
            for line in self.lines:
                k = key(line)
                c = ids.get(k)
                if c is None:
                    c = ids[k] = _char(len(ids))
                chars.append(c)
            self.work += len(chars)
            got = self._keys[level] = ("".join(chars), ids)
            self.control.check()
        return got

    def line_of(self, pos: int) -> int:
        """1-based line holding offset `pos`."""
        return self.text.count("\n", 0, pos) + 1

    def place(self, old: str, new: str, *, start: int = 0, near_line: int | None = None,
              whole_lines: bool = False, at_end: bool = False) -> Place:
        """Where old_text is, at the first level that finds it, and what replaces it."""
        if not old:
            raise BadArgument("old_text is empty")
        found = self._exact(old, new, start, near_line, whole_lines, at_end)
        if found is not None:
            return found
        split = split_ends(old)
        stripped = numbered(split.core) if split.core else None
        for n, level in enumerate(LEVELS[1:], 1):
            core = stripped if level == "line_numbers" else split.core
            if not core:
                continue
            self.control.check()
            where = self._where(min(n, 4), core, level, start, at_end)
            places = list(where(_most(near_line)))
            if places:
                return self._one(places, where, level, near_line, split, new, core)
        raise NoPlace(f"old_text not found in '{self.name}' (0 occurrences)")

    def _exact(self, old: str, new: str, start: int, near_line: int | None,
               whole_lines: bool, at_end: bool) -> Place | None:
        text = self.text
        if self.crlf:  # the agent usually types "\n"; the file says "\r\n" throughout
            old, new = _LONE_LF.sub("\r\n", old), _LONE_LF.sub("\r\n", new)

        def where(most: int) -> Iterator[int]:
            got, seen, pos = 0, 0, text.find(old, start)
            while pos >= 0 and got < most:
                end = pos + len(old)
                self.work += 1
                seen = self._candidate(seen, "exact")
                if (not whole_lines or self._at_lines(pos, end)) and (
                        not at_end or _ends(text, end)):
                    got += 1
                    yield pos
                pos = text.find(old, pos + 1)

        found = list(where(_most(near_line)))
        if not found:
            return None
        lines = [self.line_of(p) for p in found]
        pick = _pick(lines, near_line)
        if pick is None:
            if near_line is None:
                lines = [self.line_of(p) for p in where(SHOWN_LINES + 1)]
            count = len(lines) if whole_lines else max(len(lines), text.count(old, start))
            raise Ambiguous(
                f"old_text occurs {count} times in '{self.name}'; it must occur exactly once "
                f"(include more surrounding lines to make it unique): lines {_shown(lines)}",
                "exact", lines)
        lo = found[pick]
        return Place(lo, lo + len(old), lines[pick], "exact", new)

    def _at_lines(self, lo: int, hi: int) -> bool:
        text = self.text
        head = lo == 0 or text[lo - 1] == "\n"
        tail = hi == len(text) or text[hi - 1] == "\n" or text[hi] in "\r\n"
        return head and tail

    def _where(self, level: int, core: list[str], name: str, start: int,
               at_end: bool) -> Callable[[int], Iterator[tuple[int, int, int]]]:
        """The search for core's lines at `level`: (first line index, column delta, tab
        width) of each place, at most `most` of them."""
        hay, ids = self.ids(level)
        key = key_at(level)
        needle = [ids.get(key(line)) for line in core]
        first = bisect.bisect_left(self.starts, start)

        def search(most: int) -> Iterator[tuple[int, int, int]]:
            if None in needle:
                return  # a line of old_text that no line of the text has
            pattern, got, seen = "".join(needle), 0, 0  # type: ignore[arg-type]
            i = hay.find(pattern, first)
            while i >= 0 and got < most:
                self.work += len(core)
                seen = self._candidate(seen, name)
                if not at_end or i + len(core) == len(self.lines):
                    shift = self._delta(i, core) if level >= 3 else (0, DEFAULT_TAB)
                    if shift is not None and self._same(i, core, key):
                        got += 1
                        yield i, *shift
                i = hay.find(pattern, i + 1)

        return search

    def _candidate(self, seen: int, level: str) -> int:
        """One more candidate checked at `level`, or a refusal past MAX_CANDIDATES."""
        if seen == MAX_CANDIDATES:
            raise NoPlace(
                f"old_text's lines occur at more than {MAX_CANDIDATES} places in "
                f"'{self.name}' when compared by {level.replace('_', ' ')}; include more "
                "surrounding lines, copied as they are")
        return seen + 1

    def _same(self, i: int, core: list[str], key: Callable[[str], str]) -> bool:
        """The keys themselves agree, not only their ids (ids wrap past the code points)."""
        lines = self.lines
        return all(key(lines[i + k]) == key(c) for k, c in enumerate(core))

    def _delta(self, i: int, core: list[str]) -> tuple[int, int] | None:
        """(the one column delta from core's indentation to the text's on every non-blank
        line, the tab width it holds with), or None when their relative indentation
        differs whatever the tab width."""
        for tab in self._tabs(i, core):
            delta = None
            for k, line in enumerate(core):
                if not line.strip():
                    continue
                d = _width(_indent(self.lines[i + k]), tab) - _width(_indent(line), tab)
                if delta is None:
                    delta = d
                elif d != delta:
                    break
            else:
                return delta or 0, tab
        return None

    def _tabs(self, i: int, core: list[str]) -> tuple[int, ...]:
        """The tab widths to try: when one side indents with tabs and the other with
        spaces, the spaces' step (their widths' gcd), then 4 and 8; else one (the same
        characters on both sides, a tab's width changes nothing)."""
        mine = self.lines[i : i + len(core)]
        tabs_mine = any("\t" in _indent(x) for x in mine)
        tabs_theirs = any("\t" in _indent(x) for x in core)
        if tabs_mine == tabs_theirs:
            return (8,) if tabs_mine else (DEFAULT_TAB,)
        return tuple(dict.fromkeys((_step(core if tabs_mine else mine), 4, 8)))

    def _one(self, places: list[tuple[int, int, int]],
             where: Callable[[int], Iterator[tuple[int, int, int]]],
             level: str, near_line: int | None, split: _Old, new: str, core: list[str]) -> Place:
        lines = [place[0] + 1 for place in places]
        pick = _pick(lines, near_line)
        if pick is None:
            if near_line is None:
                lines = [place[0] + 1 for place in where(SHOWN_LINES + 1)]
            raise Ambiguous(
                f"old_text matches {len(lines)}{'+' if len(lines) > SHOWN_LINES else ''} "
                f"places in '{self.name}' when compared by {level.replace('_', ' ')} "
                f"(lines {_shown(lines)}); it must match one (include more surrounding "
                "lines to make it unique)", level, lines)
        i, delta, tab = places[pick]
        j = i + len(core) - 1
        lo, hi = self.starts[i], self.starts[j] + len(self.lines[j])
        if level == "line_numbers":
            new = _strip_numbers(new) or new
        replacement = _strip_ends(new, split)
        rank = LEVELS.index(level)
        if rank >= LEVELS.index("indentation"):
            replacement = self._reindent(replacement, i, core, delta, tab)
        if rank >= LEVELS.index("punctuation"):
            replacement = self._unfold(replacement, core, i)
        if not replacement and split.trail:  # lines removed: their line end with them
            if j + 1 < len(self.starts):
                hi = self.starts[j + 1]
            elif hi < len(self.text):  # the last line's own line end
                hi = len(self.text)
            elif i > 0:
                lo = self.starts[i - 1] + len(self.lines[i - 1])
        return Place(lo, hi, i + 1, level, self._eol(replacement, i))

    def _reindent(self, new: str, i: int, core: list[str], delta: int, tab: int) -> str:
        """new_text moved by `delta` columns (a tab `tab` wide), in the text's indent
        character (new_text's own when the text indents no line)."""
        parts = new.split("\n")
        style = _style(self.lines[i : i + len(core)]) or _style(self.lines) or _style(parts)
        chars = {c for x in parts if x.strip() for c in _indent(x)}
        if style is None or (delta == 0 and chars <= {style}):
            return new
        out = []
        for line in parts:
            ind = _indent(line)
            if line.strip():
                col = max(0, _width(ind, tab) + delta)
                line = _render(col, style == "\t", tab) + line[len(ind):]
            out.append(line)
        return "\n".join(out)

    def _unfold(self, new: str, core: list[str], i: int) -> str:
        """new_text with the look-alike classes folded that old_text has and the matched
        lines do not: the copy's slip, carried into the replacement."""
        mine = "\n".join(self.lines[i : i + len(core)])
        theirs = "\n".join(core)
        for table in FOLDS.values():
            if any(c in theirs for c in table) and not any(c in mine for c in table):
                new = new.translate(str.maketrans(table))
        return new

    def _eol(self, new: str, i: int) -> str:
        """new_text in the line ends of the matched lines."""
        end = self.starts[i] + len(self.lines[i])
        crlf = self.crlf or self.text.startswith("\r\n", end)
        parts = [p[:-1] if p.endswith("\r") else p for p in new.split("\n")]
        return ("\r\n" if crlf else "\n").join(parts)


def all_crlf(text: str) -> bool:
    return "\r\n" in text and text.count("\r\n") == text.count("\n")


def _char(n: int) -> str:
    """The n-th line id as one character: every code point but the surrogates, then round
    again (`_same` checks each candidate's keys, so a repeated id costs a check, never a
    wrong place)."""
    n %= 0x110000 - 0x800
    return chr(n + 0x800 if n >= 0xD800 else n)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _style(lines: list[str]) -> str | None:
    """The indent character of the first indented line, or None."""
    for line in lines:
        ind = _indent(line)
        if ind and line.strip():
            return ind[0]
    return None


def _step(lines: list[str]) -> int:
    widths = [len(_indent(x)) for x in lines if x.strip() and _indent(x)]
    return math.gcd(*widths) if widths else DEFAULT_TAB


def _ends(text: str, end: int) -> bool:
    return text[end:] in ("", "\n", "\r\n")


def _most(near: int | None) -> int:
    """How many places to collect: two tell an ambiguity; a line number chooses among all of
    them, so the search goes on past MAX_CANDIDATES (and is refused there) rather than
    choose among the first ones only."""
    return 2 if near is None else MAX_CANDIDATES + 1


def _pick(lines: list[int], near: int | None) -> int | None:
    """The one place, or the one nearest to `near`; None when two are equally near."""
    if near is None:
        return 0 if len(lines) == 1 else None
    best = sorted(range(len(lines)), key=lambda k: abs(lines[k] - near))
    if len(best) > 1 and abs(lines[best[0]] - near) == abs(lines[best[1]] - near):
        return None
    return best[0]


def _shown(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:SHOWN_LINES])
    return shown + (", ..." if len(lines) > SHOWN_LINES else "")
