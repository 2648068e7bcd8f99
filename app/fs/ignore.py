"""Ignore files (`.gitignore`, `.ignore`, `.rgignore`) and `exclude` globs, as the walk's filter.

Read the way ripgrep reads them in a git work tree (the root counts as one):

- Each directory's ignore files apply to the entries below it, matched
  against the path relative to that directory. A pattern with no `/` but a
  trailing one matches a name at any depth (`**/` is put in front); a pattern
  with a `/` (a leading one included) is anchored to its directory. A
  trailing `/` restricts it to directories, `!` re-includes, `#` starts a
  comment, `\\` escapes; `*` and `?` stay within one name, `[...]` and
  `[!...]` are classes, `**/`, `/**/` and `/**` cross directories (`**`
  elsewhere is `*`). Trailing spaces are dropped unless escaped.
- Within one file the last pattern that matches decides (a dir-only pattern
  is passed over for a file). Across directories the deepest file that has a
  matching pattern decides; `.rgignore` beats `.ignore`, which beats
  `.gitignore`, at whatever depth (ripgrep's precedence).
- An ignored directory is pruned before it is opened, so (as in git) nothing
  under it can be re-included.
- Ignore files of the directories between the root and the search's `path`
  apply too; none above the root is read.

Ignoring is noise control, never security: denied names are pruned by the
walk before this filter sees anything, and no `!` pattern can bring one back.
Patterns run on RE2 (linear time), because ignore files are content of the
root and may be hostile: `*a*a*a*a*b` on a long name costs what `*` does.
One ignore file is read up to `MAX_IGNORE_BYTES`; lines past it are dropped.

Departures from git, all rare: `core.excludesFile`, `.git/info/exclude` and
nested repositories are not looked at; `{a,b}` is literal, as in git (ripgrep
reads it as alternation).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import re2

from app.fs.glob import Glob, compile_glob
from app.security.resolve import FILE_FLAGS, SecureRoot

# In precedence order: the first kind whose deepest matching file says something decides.
KINDS = (".rgignore", ".ignore", ".gitignore")
MAX_IGNORE_BYTES = 1 << 20
_OPTS = re2.Options()
_OPTS.log_errors = False
_OPTS.never_capture = True
_OPTS.max_mem = 32 << 20


def _fullmatcher(pattern: bytes) -> Callable[[bytes], bool] | None:
    try:
        compiled = re2.compile(pattern, _OPTS)
    except re2.error:
        return None
    match = compiled._regexp.Match  # the binding's own call: no Match object per name
    both = re2._Anchor.ANCHOR_BOTH
    null = re2._NULL_SPAN

    def test(text: bytes) -> bool:
        return match(both, text, 0, len(text))[0] != null

    return test


def _class(p: bytes, i: int) -> tuple[bytes, int] | None:
    """The class at p[i] == '['; (regex, index after it), or None if unclosed."""
    j = i + 1
    negate = j < len(p) and p[j] in b"!^"
    if negate:
        j += 1
    members = bytearray()
    first = True
    while j < len(p):
        c = p[j]
        if c == ord("]") and not first:
            body = bytes(members)
            return (b"[^/" + body + b"]" if negate else b"[" + body + b"]"), j + 1
        first = False
        if c == ord("\\") and j + 1 < len(p):
            j += 1
            c = p[j]
        if c == ord("-") and members and j + 1 < len(p) and p[j + 1] != ord("]"):
            members += b"-"
        elif chr(c).isalnum() or c >= 0x80:
            members.append(c)
        else:
            members += b"\\x%02x" % c
        j += 1
    return None


def glob_regex(glob: bytes) -> bytes | None:
    """A gitignore glob (already stripped of `!`, `/` ends) as an RE2 pattern; None if invalid."""
    out = bytearray()
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == ord("*"):
            if glob.startswith(b"**", i):
                at_start = i == 0 or glob[i - 1] == ord("/")
                end = i + 2
                if at_start and (end == n or glob[end] == ord("/")):
                    if i == 0 and end == n:
                        out += b".*"
                    elif i == 0:  # `**/x`: any number of leading directories
                        out += b"(?:.*/)?"
                        end += 1
                    elif end == n:  # `x/**`: everything inside (the `/` is already out)
                        out += b".*"
                    else:  # `x/**/y`: zero or more directories
                        del out[-1:]
                        out += b"(?:/|/.*/)"
                        end += 1
                    i = end
                    continue
                out += b"[^/]*"
                i += 2
                continue
            out += b"[^/]*"
        elif c == ord("?"):
            out += b"[^/]"
        elif c == ord("["):
            cls = _class(glob, i)
            if cls is None:
                return None
            part, i = cls
            out += part
            continue
        elif c == ord("\\"):
            if i + 1 >= n:
                return None  # a dangling backslash: the line is invalid (as in ripgrep)
            i += 1
            out += b"\\x%02x" % glob[i]
        elif chr(c).isalnum() or c >= 0x80 or c == ord("/"):
            out.append(c)
        else:
            out += b"\\x%02x" % c
        i += 1
    return bytes(out)


class Rule(NamedTuple):
    negate: bool
    dir_only: bool
    on_name: bool  # no `/`: matched against the entry's name alone
    test: Callable[[bytes], bool]
    regex: bytes | None  # None for a plain name (tested by equality)


def parse_line(raw: bytes) -> Rule | None:
    line = raw.rstrip(b"\r")
    if not line.endswith(b"\\ "):
        line = line.rstrip(b" \t")
    if not line or line.startswith(b"#"):
        return None
    negate = anchored = False
    if line.startswith((b"\\!", b"\\#")):
        line = line[1:]
    else:
        if line.startswith(b"!"):
            negate = True
            line = line[1:]
        if line.startswith(b"/"):
            line = line[1:]
            anchored = True
    dir_only = line.endswith(b"/")
    if dir_only:
        line = line[:-1]
    if not line:
        return None
    on_name = not anchored and b"/" not in line
    if line.endswith(b"/**"):
        line += b"/*"  # everything inside, not the directory itself
    regex = glob_regex(line)
    if regex is None:
        return None
    test = _fullmatcher(regex)
    if test is None:
        return None
    if on_name and not any(c in line for c in b"*?[\\"):
        return Rule(negate, dir_only, on_name, line.__eq__, None)  # a plain name: no regex call
    return Rule(negate, dir_only, on_name, test, regex)


class IgnoreFile:
    """The rules of one ignore file, with a quick 'does any rule match' test."""

    __slots__ = ("any_name", "any_path", "rules")

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.any_name = _any([r for r in rules if r.on_name])
        self.any_path = _any([r for r in rules if not r.on_name])

    @classmethod
    def parse(cls, text: bytes) -> IgnoreFile | None:
        rules = [r for r in map(parse_line, text.split(b"\n")) if r is not None]
        return cls(rules) if rules else None

    def decide(self, rel: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule matches."""
        if not (self.any_name(name) or self.any_path(rel)):
            return None
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.test(name if rule.on_name else rel):
                return not rule.negate
        return None


def _never(_: bytes) -> bool:
    return False


def _any(rules: Iterable[Rule]) -> Callable[[bytes], bool]:
    """One test for 'some rule matches': a set of plain names and one RE2 alternation."""
    plain = frozenset(r.test.__self__ for r in rules if r.regex is None)  # type: ignore[attr-defined]
    regexes = [r.regex for r in rules if r.regex is not None]
    if not regexes:
        return plain.__contains__ if plain else _never
    combined = _fullmatcher(b"|".join(b"(?:" + x + b")" for x in regexes))
    if combined is None:  # too large for one program: test them one by one
        tests = [r.test for r in rules if r.regex is not None]

        def combined(text: bytes) -> bool:
            return any(t(text) for t in tests)

    if not plain:
        return combined

    def any_of(text: bytes) -> bool:
        return text in plain or combined(text)

    return any_of


class Level(NamedTuple):
    prefix: bytes  # the directory, relative to the root, as b"" or b"a/b/"
    files: tuple[IgnoreFile | None, ...]  # by KINDS


def read_level(dir_fd: int, prefix: bytes, names: Sequence[str]) -> Level | None:
    """The ignore files among `names` (entries of the open directory), or None."""
    files: list[IgnoreFile | None] = []
    for kind in KINDS:
        parsed = None
        if kind in names:
            try:
                fd = os.open(kind, FILE_FLAGS, dir_fd=dir_fd)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    data = os.read(fd, MAX_IGNORE_BYTES)
                    if len(data) == MAX_IGNORE_BYTES:
                        data = data[: data.rfind(b"\n") + 1]
                    parsed = IgnoreFile.parse(data)
                except OSError:
                    pass
                finally:
                    os.close(fd)
        files.append(parsed)
    return Level(prefix, tuple(files)) if any(files) else None


def decide(stack: tuple[Level, ...], rel: bytes, name: bytes, is_dir: bool) -> bool:
    """Whether the entry at root-relative `rel` is ignored under this stack of levels."""
    for k in range(len(KINDS)):
        for level in reversed(stack):
            f = level.files[k]
            if f is None:
                continue
            said = f.decide(rel[len(level.prefix):], name, is_dir)
            if said is not None:
                return said
    return False


class Filter:
    """The walk's per-directory filter: `exclude` globs, then ignore files.

    Counts what it hid, for the result's note. `exclude` globs follow the
    search's glob rules, matched against the path relative to the search's
    start, and prune directories as well as files.
    """

    def __init__(self, root: SecureRoot, start: tuple[str, ...], exclude: Sequence[str],
                 no_ignore: bool) -> None:
        self.root = root
        self.start = start
        self.strip = len("/".join(start)) + 1 if start else 0
        self.exclude: list[Glob] = [compile_glob(g) for g in exclude]
        self.use_ignore = not no_ignore
        self.hidden_files = self.hidden_dirs = self.excluded = 0
        self._stacks: dict[tuple[str, ...], tuple[Level, ...]] = {}
        if self.use_ignore:
            self._stacks[start] = self._ancestors()
        self._names = set(KINDS) if self.use_ignore else set()

    @property
    def active(self) -> bool:
        return bool(self.exclude) or self.use_ignore

    def _ancestors(self) -> tuple[Level, ...]:
        """Levels of the directories from the root down to start's parent."""
        levels = []
        denied = self.root.rules.name
        names = [k for k in KINDS if denied(k) is None]
        for k in range(len(self.start)):
            parts = self.start[:k]
            try:
                fd = self.root.open_subdir(parts)
            except OSError:
                continue
            try:
                prefix = ("/".join(parts) + "/" if parts else "").encode("utf-8", "surrogateescape")
                level = read_level(fd, prefix, names)
            finally:
                os.close(fd)
            if level is not None:
                levels.append(level)
        return tuple(levels)

    def __call__(self, parts: tuple[str, ...], fd: int, entries: list[os.DirEntry[str]]
                 ) -> list[os.DirEntry[str]]:
        if self.exclude:
            entries = self._exclude(parts, entries)
        if not self.use_ignore:
            return entries
        stack = self._stacks.get(parts)
        if stack is None:
            stack = self._stacks.get(parts[:-1], ())
        own = [e.name for e in entries if e.name in self._names]
        prefix = "/".join(parts) + "/" if parts else ""
        bprefix = prefix.encode("utf-8", "surrogateescape")
        if own:
            level = read_level(fd, bprefix, own)
            if level is not None:
                stack = (*stack, level)
        if not stack:
            return entries
        kept = []
        has_dirs = False
        for e in entries:
            name = e.name.encode("utf-8", "surrogateescape")
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if decide(stack, bprefix + name, name, is_dir):
                if is_dir:
                    self.hidden_dirs += 1
                else:
                    self.hidden_files += 1
                continue
            has_dirs = has_dirs or is_dir
            kept.append(e)
        if has_dirs:
            self._stacks[parts] = stack
        return kept

    def _exclude(self, parts: tuple[str, ...], entries: list[os.DirEntry[str]]
                 ) -> list[os.DirEntry[str]]:
        prefix = "/".join(parts) + "/" if parts else ""
        strip = self.strip
        globs = self.exclude
        kept = []
        for e in entries:
            name = e.name
            rel = (prefix + name)[strip:]
            if any(g.matches(rel, name) for g in globs):
                self.excluded += 1
                continue
            kept.append(e)
        return kept

    def note(self) -> str | None:
        if not (self.hidden_files or self.hidden_dirs):
            return None
        what = []
        if self.hidden_files:
            what.append(f"{self.hidden_files} file(s)")
        if self.hidden_dirs:
            what.append(f"{self.hidden_dirs} director(ies)")
        return (f"ignore files (.gitignore, .ignore) hid {' and '.join(what)}; "
                "no_ignore=true searches them too")
