"""A patch's text parsed into what `apply_patch` does: OpenAI's V4A envelope or unified diffs.

Pure: no disk, paths kept as the patch gives them (relative to the root; the applier checks
them). Which format is the first line's business: `*** Begin Patch` is V4A, anything else is
read as unified diffs (`patch_unified`). A Markdown fence around the whole patch (a line
starting with three backticks first and last) is dropped; line numbers in errors still count
it. Lines are cut at "\\n" only; a patch whose every line ends in "\\r\\n" (sent through
something that rewrote its line endings) is read as if each ended in "\\n", otherwise a "\\r"
before the "\\n" is the text's own.

V4A (the grammar of openai/codex's apply_patch instructions): `*** Add File: p` and its `+`
lines (the file's lines, each ending in a newline); `*** Delete File: p`; `*** Update File:
p`, an optional `*** Move to: q`, then hunks: one or more `@@` lines (`@@` alone, or `@@
scope`, a line the hunk is placed after; stacked scopes are searched one after the other),
then ` ` (context), `-` (removed), `+` (added) lines, an empty line counting as an empty
context line, and an optional `*** End of File` (the hunk ends at the file's end). The first
hunk of an Update may omit its `@@`. An Update with neither a hunk nor a move, a hunk with no
line, a bare `@@` stacked on another, or any other line is refused, naming its line.

Bounded before anything is made: MAX_PATCH_BYTES of UTF-8, MAX_FILES file sections and
MAX_HUNKS hunks in all.
"""

from __future__ import annotations

from app.errors import BadArgument, TooLarge
from app.fs.change.patch_types import (
    ADD,
    ADD_FILE,
    BEGIN,
    DELETE,
    DELETE_FILE,
    END,
    END_OF_FILE,
    FENCE,
    MAX_FILES,
    MAX_HUNKS,
    MAX_PATCH_BYTES,
    MOVE_TO,
    UPDATE,
    UPDATE_FILE,
    FilePatch,
    Hunk,
    Patch,
    bad,
)
from app.fs.change.patch_unified import parse_unified


def parse(text: str) -> Patch:
    """The patch in `text`, or BadArgument naming the first line that does not fit (TooLarge
    past a bound)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PATCH_BYTES:
        raise TooLarge(f"the patch is {size} bytes; at most {MAX_PATCH_BYTES} are accepted")
    lines = split_lines(text)
    first, last = _span(lines)
    if first > last:
        raise BadArgument("the patch is empty")
    if lines[first].rstrip() == BEGIN:
        files = _V4A(lines, first, _last_mark(lines, first, last)).files()
        fmt = "v4a"
    elif lines[first].startswith((ADD_FILE, DELETE_FILE, UPDATE_FILE)):
        raise bad(first + 1, f"a V4A patch starts with '{BEGIN}'")
    else:
        files = parse_unified(lines, first, last)
        fmt = "unified"
    check_bounds(files)
    return Patch(fmt, tuple(files))


def split_lines(text: str) -> list[str]:
    """Lines cut at "\\n", without it; a CRLF patch's "\\r" dropped (only when every line has
    one)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if lines and all(x.endswith("\r") for x in lines) and text.endswith("\n"):
        lines = [x[:-1] for x in lines]
    return lines


def _span(lines: list[str]) -> tuple[int, int]:
    """The first and last lines that may matter (0-based): blank lines before the patch and a
    Markdown fence around it left out (blank lines at its end are the readers' business: in
    a unified diff an empty line may be an empty context line)."""
    first, last = 0, len(lines) - 1
    while first <= last and not lines[first].strip():
        first += 1
    end = last
    while end > first and not lines[end].strip():
        end -= 1
    if first < end and lines[first].startswith(FENCE) and lines[end].strip() == FENCE:
        first, last = first + 1, end - 1
        while first <= last and not lines[first].strip():
            first += 1
    return first, last


def _last_mark(lines: list[str], first: int, last: int) -> int:
    """The last line that is not blank (V4A: blank lines after its end are nothing)."""
    while last > first and not lines[last].strip():
        last -= 1
    return last


def check_bounds(files: list[FilePatch]) -> None:
    if not files:
        raise BadArgument("the patch changes no file")
    if len(files) > MAX_FILES:
        raise TooLarge(
            f"the patch has {len(files)} file sections; at most {MAX_FILES} are accepted"
        )
    hunks = sum(len(f.hunks) for f in files)
    if hunks > MAX_HUNKS:
        raise TooLarge(f"the patch has {hunks} hunks; at most {MAX_HUNKS} are accepted")


def _path_after(line: str, marker: str, no: int) -> str:
    path = line[len(marker) :].strip()
    if not path:
        raise bad(no, f"'{marker}' names no path")
    return path


class _V4A:
    """The V4A envelope read line by line; `i` is the 0-based line being read."""

    def __init__(self, lines: list[str], first: int, last: int) -> None:
        self.lines, self.i, self.last = lines, first + 1, last

    def files(self) -> list[FilePatch]:
        out: list[FilePatch] = []
        while True:
            if self.i > self.last:
                raise bad(self.last + 1, f"the patch ends without '{END}' (truncated?)")
            line = self.lines[self.i].rstrip()
            no = self.i + 1
            if line == END:
                if self.i != self.last:
                    raise bad(self.last + 1, f"text after '{END}'")
                return out
            self.i += 1
            if line.startswith(ADD_FILE):
                out.append(self._add(_path_after(line, ADD_FILE, no), no))
            elif line.startswith(DELETE_FILE):
                out.append(FilePatch(DELETE, _path_after(line, DELETE_FILE, no), no))
            elif line.startswith(UPDATE_FILE):
                out.append(self._update(_path_after(line, UPDATE_FILE, no), no))
            else:
                raise bad(no, "expected '*** Add File:', '*** Delete File:', "
                              f"'*** Update File:' or '{END}', got {_shown(line)}")
            if len(out) > MAX_FILES:
                raise TooLarge(f"the patch has more than {MAX_FILES} file sections")

    def _header_next(self) -> bool:
        """Whether the next line starts a file section or ends the patch (or there is none)."""
        if self.i > self.last:
            return True
        return self.lines[self.i].startswith("*** ") and (
            self.lines[self.i].rstrip() == END
            or self.lines[self.i].startswith((ADD_FILE, DELETE_FILE, UPDATE_FILE))
        )

    def _add(self, path: str, no: int) -> FilePatch:
        body: list[str] = []
        start = self.i + 1
        while not self._header_next():
            line = self.lines[self.i]
            if not line.startswith("+"):
                raise bad(self.i + 1, f"in '*** Add File: {path}' every line starts with '+' "
                                      f"(got {_shown(line)})")
            body.append(line[1:])
            self.i += 1
        hunks = (Hunk(start, (), tuple(body)),) if body else ()
        return FilePatch(ADD, path, no, hunks)

    def _update(self, path: str, no: int) -> FilePatch:
        move_to = None
        if self.i <= self.last and self.lines[self.i].startswith(MOVE_TO):
            move_to = _path_after(self.lines[self.i], MOVE_TO, self.i + 1)
            self.i += 1
        hunks: list[Hunk] = []
        while not self._header_next():
            hunks.append(self._hunk(first=not hunks))
            if len(hunks) > MAX_HUNKS:
                raise TooLarge(f"the patch has more than {MAX_HUNKS} hunks")
        if not hunks and move_to is None:
            raise bad(no, f"'*** Update File: {path}' has no hunk (and no '*** Move to:')")
        return FilePatch(UPDATE, path, no, tuple(hunks), move_to)

    def _hunk(self, first: bool) -> Hunk:
        start = self.i + 1
        scopes: list[str] = []
        while self.i <= self.last and self.lines[self.i].startswith("@@"):
            line = self.lines[self.i].rstrip()
            scope = line[2:].strip()
            if not scope and self.i + 1 <= self.last and self.lines[self.i + 1].startswith("@@"):
                raise bad(self.i + 1, "empty hunk: '@@' followed by another '@@'")
            if scope:
                scopes.append(scope)
            self.i += 1
        if self.i + 1 == start and not first:
            raise bad(start, f"expected '@@' to start a hunk, got {_shown(self.lines[self.i])}")
        old: list[str] = []
        new: list[str] = []
        at_end = False
        while self.i <= self.last:
            line = self.lines[self.i]
            mark, rest = line[:1], line[1:]
            if line.rstrip() == END_OF_FILE:
                if not old and not new:
                    break  # reported below
                self.i += 1
                at_end = True
                break
            if line.startswith("@@") or self._header_next():
                break
            if mark in (" ", ""):
                old.append(rest)
                new.append(rest)
            elif mark == "-":
                old.append(rest)
            elif mark == "+":
                new.append(rest)
            else:
                raise bad(self.i + 1, "a hunk line starts with ' ', '-' or '+' "
                                      f"(got {_shown(line)})")
            self.i += 1
        if not old and not new:
            raise bad(start, "empty hunk: no line after its '@@'")
        return Hunk(start, tuple(old), tuple(new), scopes=tuple(scopes), at_end=at_end)


def _shown(line: str, most: int = 60) -> str:
    return repr(line if len(line) <= most else line[:most] + "...")
