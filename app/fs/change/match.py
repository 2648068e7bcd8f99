"""Where an edit or a patch hunk goes in a text: the matcher `edit_file` and `apply_patch`
share (stand-in: the `exact` level only, with the file's CRLF line endings; the levels
replace it).

`Matcher(text).place(old, new, ...)` is the one place `old` occurs, or NoPlace (none) or
Ambiguous (two or more that nothing chooses between): `start`, only places from there;
`near_line`, among several the nearest to that 1-based line; `whole_lines`, the place
starts at a line start and ends at a line end; `at_end`, it ends where the text ends.
An empty `old` is the caller's case (an insertion).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.control import Control, NoControl

LEVELS = ("exact", "line_endings", "trailing_space", "indentation", "punctuation",
          "line_numbers")
MAX_PLACES = 1000  # places counted before a refusal stops counting
_LONE_LF = re.compile(r"(?<!\r)\n")


@dataclass(frozen=True)
class Closest:
    first: int
    last: int
    similarity: float
    diff: str


@dataclass(frozen=True)
class Place:
    lo: int
    hi: int
    line: int
    level: str
    new: str


class NoPlace(BadArgument):
    def __init__(self, message: str, closest: Closest | None = None) -> None:
        super().__init__(message)
        self.closest = closest


class Ambiguous(BadArgument):
    def __init__(self, message: str, level: str, lines: list[int]) -> None:
        super().__init__(message)
        self.level, self.lines = level, lines


class Matcher:
    def __init__(self, text: str, control: Control | None = None) -> None:
        self.text = text
        self.control = control or NoControl()
        self.crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")

    def place(self, old: str, new: str, *, start: int = 0, near_line: int | None = None,
              whole_lines: bool = False, at_end: bool = False) -> Place:
        if not old:
            raise BadArgument("old_text is empty")
        if self.crlf:
            old, new = _LONE_LF.sub("\r\n", old), _LONE_LF.sub("\r\n", new)
        text = self.text
        found: list[int] = []
        pos = text.find(old, start)
        while pos >= 0 and len(found) < MAX_PLACES:
            hi = pos + len(old)
            if (not whole_lines or (_line_start(text, pos) and _line_end(text, hi, old))) and (
                not at_end or hi == len(text)
            ):
                found.append(pos)
            pos = text.find(old, pos + 1)
        if not found:
            raise NoPlace("the text was not found")
        lines = [text.count("\n", 0, p) + 1 for p in found]
        pick = 0
        if len(found) > 1:
            if near_line is None:
                raise Ambiguous(_many(lines), "exact", lines)
            dist = sorted((abs(n - near_line), k) for k, n in enumerate(lines))
            if dist[0][0] == dist[1][0]:
                raise Ambiguous(_many(lines), "exact", lines)
            pick = dist[0][1]
        lo = found[pick]
        return Place(lo, lo + len(old), lines[pick], "exact", new)


def _many(lines: list[int]) -> str:
    return f"the text occurs {len(lines)} times (lines {', '.join(map(str, lines[:10]))})"


def _line_start(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1] == "\n"


def _line_end(text: str, hi: int, old: str) -> bool:
    return old.endswith("\n") or hi == len(text) or text[hi] in "\r\n"
