"""Unified diffs read into `FilePatch` sections: `diff -u`, `diff -ruN`, `git diff`.

A section is a `--- old` line followed by `+++ new` (each name up to a tab, after which
`diff` writes a date), or git's `diff --git` line with its extended headers (`new file mode`,
`deleted file mode`, `rename from`/`rename to`, `similarity index`, `index`, ...), then its
hunks. Lines outside sections (a commit message, `diff -r`'s command lines and `Only in`
lines) are skipped, as `patch` skips them; a binary patch and a copy are refused; a section
that only changes a mode changes nothing and is left out.

Which file: `/dev/null` is none (an added or a removed file), and so is a side whose header
carries the epoch date (`diff -N`'s way) when no hunk holds a line of it. Prefixes: when the
two names' first folders differ and the rest is the same (`a/x` `b/x`, `old/x` `new/x`) both
are dropped; git's are those of its `diff --git` line; against `/dev/null` a lone `b/` (an
added file's) or `a/` (a removed one's) is dropped. Without git's rename headers a section
names its file by its `+++` name (`---` for a removed file) and never moves it. Git's quoted
names ("a/t\\303\\251st") are unquoted.

Hunks: `@@ -l,s +l,s @@`, the counts checked: a hunk that ends before them, or is followed
by another line of hunk after them, is refused, naming the line. `\\ No newline at end of
file` marks the line before it; an empty line is an empty context line (its space lost on
the way). A bare `@@` (no numbers, as models often write) takes the hunk lines that follow,
unchecked, up to the next header.
"""

from __future__ import annotations

import calendar
import re

from app.fs.change.patch_types import ADD, DELETE, UPDATE, FilePatch, Hunk, bad

DEV_NULL = "/dev/null"
_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE = re.compile(r"@@(?:\s+@@)?\s*$")
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))? ([+-])(\d\d)(\d\d)$")
_CTIME_EPOCH = ["Thu", "Jan", "1", "00:00:00", "1970"]
_GIT_KEYS = (
    "old mode ", "new mode ", "deleted file mode ", "new file mode ", "similarity index ",
    "dissimilarity index ", "rename from ", "rename to ", "copy from ", "copy to ", "index ",
)
_BINARY = ("Binary files ", "GIT binary patch")
_SIGNATURE = "-- "  # git format-patch's signature separator, after the last hunk
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def parse_unified(lines: list[str], first: int, last: int) -> list[FilePatch]:
    """The sections of lines[first..last] (0-based, inclusive)."""
    return _Reader(lines, first, last).files()


def is_epoch(date: str) -> bool:
    """Whether a `---`/`+++` date is the epoch (in any zone), as `diff -N` dates a missing file."""
    m = _ISO.match(date.strip())
    if m is None:
        return date.split() == _CTIME_EPOCH
    if m[7] and int(m[7]):
        return False
    y, mo, d, h, mi, s = (int(m[k]) for k in range(1, 7))
    offset = (int(m[9]) * 60 + int(m[10])) * 60 * (1 if m[8] == "+" else -1)
    return calendar.timegm((y, mo, d, h, mi, s)) - offset == 0


def unquote(name: str) -> str:
    """A name as git writes it: C-quoted ("...", octal bytes of UTF-8) when it needs to be."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    out, i, body = bytearray(), 0, name[1:-1]
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out += c.encode("utf-8", "surrogatepass")
            i += 1
        elif body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        elif re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out += body[i + 1].encode("utf-8", "surrogatepass")
            i += 2
    return out.decode("utf-8", "replace")


def _name(line: str) -> tuple[str, str]:
    """(name, date) of a `--- `/`+++ ` line."""
    rest = line[4:]
    name, _, date = rest.partition("\t")
    return unquote(name.rstrip()), date


def _tail(name: str) -> str | None:
    """The name without its first folder, None when it has none."""
    head, sep, rest = name.partition("/")
    return rest if sep and head and rest else None


def _prefixes(a: str, b: str) -> tuple[str, str]:
    """The prefixes two names of one file carry: their first folders, when those differ and
    the rest is the same."""
    ta, tb = _tail(a), _tail(b)
    if ta is not None and ta == tb and a != b:
        return a[: len(a) - len(ta)], b[: len(b) - len(tb)]
    if a.startswith("a/") and b.startswith("b/"):
        return "a/", "b/"
    return "", ""


def _git_pair(head: str) -> tuple[str, str] | None:
    """The two names of a `diff --git` line (quoted or not); None when it cannot tell."""
    if head.startswith('"'):
        i = 1
        while i < len(head) and head[i] != '"':
            i += 2 if head[i] == "\\" else 1  # an escape and what it escapes
        if head.startswith('" ', i):
            return unquote(head[: i + 1]), unquote(head[i + 2 :])
        return None
    for k, c in enumerate(head):
        if c != " ":
            continue
        a, b = head[:k], unquote(head[k + 1 :])
        if a == b or (_tail(a) is not None and _tail(a) == _tail(b)):
            return a, b
    if head.startswith("a/") and " b/" in head:
        k = head.index(" b/")
        return head[:k], head[k + 1 :]
    return None


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


class _Reader:
    """The lines read one section at a time; `i` is the 0-based line being read."""

    def __init__(self, lines: list[str], first: int, last: int) -> None:
        self.lines, self.i, self.last = lines, first, last

    def _at(self, k: int) -> str | None:
        return self.lines[k] if k <= self.last else None

    def _header_at(self, k: int) -> bool:
        """Whether a file section starts at line k."""
        line = self._at(k)
        if line is None:
            return False
        if line.startswith("diff --git "):
            return True
        nxt = self._at(k + 1)
        return line.startswith("--- ") and nxt is not None and nxt.startswith("+++ ")

    def files(self) -> list[FilePatch]:
        out: list[FilePatch] = []
        while self.i <= self.last:
            line = self.lines[self.i]
            if line.startswith("diff --git "):
                got = self._git()
            elif self._header_at(self.i):
                got = self._plain()
            elif line.startswith("@@"):
                raise bad(self.i + 1, "a hunk before any file header ('--- a/x' then '+++ b/x')")
            elif line.startswith(_BINARY):
                raise bad(self.i + 1, "binary patches are not supported")
            else:
                self.i += 1  # text between sections
                continue
            if got is not None:
                out.append(got)
        if not out:
            raise bad(1, "no file in the patch: expected a unified diff ('--- a/x', '+++ b/x', "
                         "'@@ -1,2 +1,2 @@') or a V4A patch ('*** Begin Patch')")
        return out

    def _plain(self) -> FilePatch:
        no = self.i + 1
        (old, o_date), (new, n_date) = _name(self.lines[self.i]), _name(self.lines[self.i + 1])
        self.i += 2
        hunks = self._hunks()
        old_none = old == DEV_NULL or (is_epoch(o_date) and not any(h.old for h in hunks))
        new_none = new == DEV_NULL or (is_epoch(n_date) and not any(h.new for h in hunks))
        if old_none and new_none:
            raise bad(no, "both names of this file are /dev/null")
        if DEV_NULL not in (old, new):
            pa, pb = _prefixes(old, new)
            old, new = _strip(old, pa), _strip(new, pb)
        elif old_none:
            new = _strip(new, "b/")
        else:
            old = _strip(old, "a/")
        op = ADD if old_none else DELETE if new_none else UPDATE
        return _section(op, new if not new_none else old, no, hunks)

    def _git(self) -> FilePatch | None:
        no = self.i + 1
        pair = _git_pair(self.lines[self.i][len("diff --git ") :])
        self.i += 1
        info: dict[str, str] = {}
        while (line := self._at(self.i)) is not None:
            key = next((k for k in _GIT_KEYS if line.startswith(k)), None)
            if key is None:
                break
            info[key.strip()] = unquote(line[len(key) :].strip())
            self.i += 1
        line = self._at(self.i)
        if line is not None and line.startswith(_BINARY):
            raise bad(self.i + 1, "binary patches are not supported")
        if "copy from" in info or "copy to" in info:
            raise bad(no, "git copies are not supported; give the copy as an added file")
        old = new = None
        if line is not None and line.startswith("--- ") and self._header_at(self.i):
            old, new = _name(line)[0], _name(self.lines[self.i + 1])[0]
            self.i += 2
        hunks = self._hunks()
        pa, pb = _prefixes(*pair) if pair else ("a/", "b/")
        if "new file mode" in info or old == DEV_NULL:
            name = new if new not in (None, DEV_NULL) else (pair[1] if pair else None)
            return _section(ADD, _required(name, pb, no), no, hunks)
        if "deleted file mode" in info or new == DEV_NULL:
            name = old if old not in (None, DEV_NULL) else (pair[0] if pair else None)
            return _section(DELETE, _required(name, pa, no), no, hunks)
        if "rename from" in info and "rename to" in info:
            return FilePatch(UPDATE, info["rename from"], no, tuple(hunks), info["rename to"])
        if not hunks:
            return None  # a mode change, or nothing: no content changes
        name = new if new is not None else (pair[1] if pair else None)
        return _section(UPDATE, _required(name, pb, no), no, hunks)

    def _hunks(self) -> list[Hunk]:
        out: list[Hunk] = []
        while (line := self._at(self.i)) is not None and line.startswith("@@"):
            out.append(self._hunk())
        return out

    def _hunk(self) -> Hunk:
        no = self.i + 1
        line = self.lines[self.i]
        self.i += 1
        m = _HEADER.match(line)
        if m is None:
            if _BARE.match(line):
                return self._bare(no)
            raise bad(no, f"malformed hunk header {line[:60]!r}; expected '@@ -l,s +l,s @@'")
        counts = [int(m[2]) if m[2] is not None else 1, int(m[4]) if m[4] is not None else 1]
        body = _Body(no)
        while counts[0] or counts[1]:
            got = self._at(self.i)
            if got is None:
                raise bad(no, f"the hunk is truncated: the patch ends {counts[0]} old and "
                              f"{counts[1]} new line(s) short of its header's counts")
            body.take(got, self.i + 1, counts)
            self.i += 1
        if (got := self._at(self.i)) is not None and got.startswith("\\"):
            body.take(got, self.i + 1, counts)
            self.i += 1
        got = self._at(self.i)
        if (got is not None and got[:1] in (" ", "-", "+") and got != _SIGNATURE
                and not self._header_at(self.i)):
            raise bad(self.i + 1, f"the hunk at line {no} goes on past its header's counts "
                                  f"(-{m[1]},{m[2] or 1} +{m[3]},{m[4] or 1})")
        return body.hunk(int(m[1]), int(m[3]))

    def _bare(self, no: int) -> Hunk:
        """A hunk with no line numbers: its lines up to the next header; blank lines at its
        end are not its own."""
        body = _Body(no)
        while (line := self._at(self.i)) is not None and not (
            line.startswith("@@") or self._header_at(self.i)
        ):
            if not line:
                if not self._more_body(self.i + 1):
                    break
                body.take(" ", self.i + 1, None)
            elif line[:1] in (" ", "-", "+", "\\"):
                body.take(line, self.i + 1, None)
            else:
                break
            self.i += 1
        if not body.old and not body.new:
            raise bad(no, "empty hunk: no line after its '@@'")
        return body.hunk(None, None)

    def _more_body(self, k: int) -> bool:
        """Whether a non-blank hunk line comes at or after line k before anything else."""
        while (line := self._at(k)) is not None and not line:
            k += 1
        return (line is not None and line[:1] in (" ", "-", "+", "\\")
                and not self._header_at(k))


class _Body:
    """A hunk's lines as they come; `counts` (old, new still expected) checked when given."""

    def __init__(self, no: int) -> None:
        self.no = no
        self.old: list[str] = []
        self.new: list[str] = []
        self.old_eol = self.new_eol = True
        self.last = ""  # the mark of the last line taken

    def take(self, line: str, at: int, counts: list[int] | None) -> None:
        mark, rest = line[:1], line[1:]
        if mark == "\\":
            if not self.last:
                raise bad(at, "'\\ No newline at end of file' follows no line")
            if self.last in (" ", "-"):
                self.old_eol = False
            if self.last in (" ", "+"):
                self.new_eol = False
            return
        sides = {" ": (1, 1), "": (1, 1), "-": (1, 0), "+": (0, 1)}.get(mark)
        if sides is None:
            raise bad(at, f"the hunk at line {self.no} ends {counts[0] if counts else 0} old and "
                          f"{counts[1] if counts else 0} new line(s) short of its header's "
                          f"counts (got {line[:60]!r})")
        if counts is not None and (counts[0] < sides[0] or counts[1] < sides[1]):
            side = "old" if counts[0] < sides[0] else "new"
            raise bad(at, f"the hunk at line {self.no} has more {side} lines than its header "
                          "counts")
        if (sides[0] and not self.old_eol) or (sides[1] and not self.new_eol):
            raise bad(at, "a line after '\\ No newline at end of file' on the same side")
        if sides[0]:
            self.old.append(rest)
        if sides[1]:
            self.new.append(rest)
        if counts is not None:
            counts[0] -= sides[0]
            counts[1] -= sides[1]
        self.last = mark or " "

    def hunk(self, old_start: int | None, new_start: int | None) -> Hunk:
        return Hunk(self.no, tuple(self.old), tuple(self.new), self.old_eol, self.new_eol,
                    old_start=old_start, new_start=new_start)


def _required(name: str | None, prefix: str, no: int) -> str:
    if not name or name == DEV_NULL:
        raise bad(no, "cannot tell which file this section is about")
    return _strip(name, prefix)


def _section(op: str, path: str, no: int, hunks: list[Hunk]) -> FilePatch:
    """The section, its hunks checked against what it does."""
    if op == ADD and (len(hunks) > 1 or any(h.old for h in hunks)):
        raise bad(no, f"'{path}' is an added file, yet a hunk of it has old lines")
    if op == DELETE and any(h.new for h in hunks):
        raise bad(no, f"'{path}' is a removed file, yet a hunk of it adds lines")
    if op == UPDATE and not hunks:
        raise bad(no, f"'{path}' has no hunk")
    return FilePatch(op, path, no, tuple(hunks))
