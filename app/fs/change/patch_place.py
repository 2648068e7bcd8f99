"""A patch's hunks placed in a file's text, in memory: the text they make, and per hunk where
and at which level it matched. Pure: the disk is `patch.py`'s.

Each hunk's old text (its context and removed lines) is placed by `match.Matcher`, whole
lines only, and replaced by what the matcher makes of its new text (re-indented, in the
file's line endings). V4A: hunks in order, each searched from the end of the one before,
after its `@@` scope lines (each placed in turn, whole lines, with the levels); `*** End of
File` places the hunk at the text's end; a file without a final newline is matched as if it
had one and keeps having none. Unified: hunks in order, from the end of the one before; the
header's old start chooses among places that match, and a side that ends without a newline
must end the text. All of a section's hunks are placed in the text as it was (so lines are
its lines, and the matcher keys them once), then replaced at once. A hunk with
no old line inserts its new lines: unified, after the line its header names; V4A, after its
scope lines, else at the text's end.

Bounded: the text each placement may scan (from where it starts to the end) counts against
MAX_SEARCHED_CHARS per patch.
"""

from __future__ import annotations

import re
from typing import cast

from app.errors import BadArgument, LoomError, TooLarge
from app.fs.change.closest import closest
from app.fs.change.edit import Level, Matched
from app.fs.change.match import Matcher, NoPlace, all_crlf
from app.fs.change.patch_types import FilePatch, Hunk
from app.fs.control import Control

MAX_SEARCHED_CHARS = 1 << 32  # characters one patch's placements may scan (in C: about a second)
INSERTED: Level = "exact"  # the level reported for a hunk with no old line (nothing to match)
OLD_LINES = "its old lines"  # what the matcher calls old_text, in a hunk's refusal
_LONE_LF = re.compile(r"(?<!\r)\n")
Span = tuple[int, int, str]  # text[lo:hi] of the file as read, and what replaces it


class Searched:
    """What one patch's placements have searched so far."""

    def __init__(self, limit: int = MAX_SEARCHED_CHARS) -> None:
        self.left = limit

    def pay(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise TooLarge("the patch needs too much matching work (too many hunks in too "
                           "large files); split it into smaller patches")


def place_all(text: str, fp: FilePatch, fmt: str, control: Control,
              searched: Searched) -> tuple[str, list[Matched]]:
    """`text` with every hunk of `fp` applied, and how each matched; BadArgument naming the
    file and the hunk when one cannot be placed. Every hunk is placed in `text` as it is
    (one matcher, its line keys made once), each after the one before; the replacements are
    made once all are placed."""
    added = fmt == "v4a" and bool(text) and not text.endswith("\n")
    work = text + "\n" if added else text
    matcher = Matcher(work, fp.path, control, all_crlf(text))
    pos = 0
    spans: list[Span] = []
    out: list[Matched] = []
    total = len(fp.hunks)
    for k, hunk in enumerate(fp.hunks, 1):
        control.check()
        searched.pay(len(work) - pos)
        where = f"'{fp.path}' hunk {k} of {total} (patch line {hunk.line})"
        try:
            span, got = (_v4a if fmt == "v4a" else _unified)(matcher, hunk, pos)
        except LoomError as exc:
            raise reworded(exc, f"nothing was changed: {where}: {exc.message}") from None
        spans.append(span)
        out.append(got)
        pos = span[1]
    parts, at = [], 0
    for lo, hi, new in spans:
        parts += [work[at:lo], new]
        at = hi
    work = "".join([*parts, work[at:]])
    if added and work.endswith("\n"):
        work = work[:-1]
    return work, out


def reworded(exc: LoomError, message: str) -> LoomError:
    """`exc` (its class and what it carries kept) saying `message`."""
    exc.message = message
    exc.args = (message,)
    return exc


def _v4a(matcher: Matcher, hunk: Hunk, pos: int) -> tuple[Span, Matched]:
    start = pos
    for scope in hunk.scopes:
        try:
            start = matcher.place(scope + "\n", scope + "\n", start=start, whole_lines=True).hi
        except LoomError as exc:
            raise reworded(exc, f"its scope line {scope!r}: {exc.message}") from None
    if not hunk.old:
        at = start if hunk.scopes and not hunk.at_end else len(matcher.text)
        return _insert(matcher, at, hunk.new_text)
    return _replace(matcher, hunk, start=start, at_end=hunk.at_end)


def _unified(matcher: Matcher, hunk: Hunk, pos: int) -> tuple[Span, Matched]:
    near = hunk.old_start
    if not hunk.old:
        at = len(matcher.text) if near is None else _after_line(matcher.text, near)
        if at < pos:
            raise BadArgument(f"line {near} comes before the hunk before it")
        return _insert(matcher, at, hunk.new_text)
    return _replace(matcher, hunk, start=pos, near_line=near, at_end=not hunk.old_eol)


def _replace(matcher: Matcher, hunk: Hunk, *, start: int, at_end: bool,
             near_line: int | None = None) -> tuple[Span, Matched]:
    """The hunk's old lines placed from `start`; a refusal shows the closest block."""
    try:
        got = matcher.place(hunk.old_text, hunk.new_text, start=start, near_line=near_line,
                            whole_lines=True, at_end=at_end)
    except NoPlace as exc:
        near = closest(matcher, hunk.old_text)
        said = exc.message + (f"; {near}" if near else "")
        raise reworded(exc, said.replace("old_text", OLD_LINES)) from None
    except BadArgument as exc:
        raise reworded(exc, exc.message.replace("old_text", OLD_LINES)) from None
    return (got.lo, got.hi, got.new), Matched(line=got.line, match=cast(Level, got.level))


def _insert(matcher: Matcher, at: int, new: str) -> tuple[Span, Matched]:
    if matcher.crlf:
        new = _LONE_LF.sub("\r\n", new)
    line = matcher.text.count("\n", 0, at) + 1
    return (at, at, new), Matched(line=line, match=INSERTED)


def _after_line(text: str, n: int) -> int:
    """Where the text after its first n lines starts."""
    at = 0
    for _ in range(n):
        nl = text.find("\n", at)
        if nl < 0:
            if at < len(text):
                return len(text)
            raise BadArgument(f"the file has fewer than {n} lines")
        at = nl + 1
    return at


def check_removed(text: str, fp: FilePatch, control: Control) -> None:
    """A removed file's hunks, when given, must be what the file holds."""
    expected = "".join(h.old_text for h in fp.hunks)
    if not fp.hunks or text == expected:
        return
    try:
        got = Matcher(text, fp.path, control).place(expected, "", whole_lines=True,
                                                    at_end=True)
    except LoomError:
        got = None
    if got is None or got.lo != 0:
        raise BadArgument(f"'{fp.path}' (patch line {fp.line}) does not hold what the patch "
                          "removes; nothing was changed")
