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
One ignore file is read up to `MAX_IGNORE_BYTES` and `MAX_RULES` patterns
(lines past them are dropped), one call reads at most `MAX_CALL_IGNORE_BYTES`
of ignore files (the ones past it are not read, and the note says so).

Departures from git, all rare: `core.excludesFile`, `.git/info/exclude` and
nested repositories are not looked at; `{a,b}` is literal, as in git (ripgrep
reads it as alternation).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

import re2

from app.fs.glob import Glob, compile_glob
from app.security.resolve import FILE_FLAGS, SecureRoot

# In precedence order: the first kind whose deepest matching file says something decides.
KINDS = (".rgignore", ".ignore", ".gitignore")
_LAST_KIND = max(KINDS)
MAX_IGNORE_BYTES = 1 << 20
MAX_CALL_IGNORE_BYTES = 8 << 20  # all ignore files one search reads
MAX_RULES = 20_000  # per file; lines past it are dropped (real files hold a few hundred)
_OPTS = re2.Options()
_OPTS.log_errors = False
_OPTS.never_capture = True
_OPTS.max_mem = 64 << 20


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
    regex: bytes  # RE2, matched against the whole name (or path relative to the file)


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
    return Rule(negate, dir_only, on_name, regex)


class _Side:
    """The rules matched against one string (names or paths): one RE2 set for all of them."""

    __slots__ = ("match", "rule_of")

    def __init__(self, rules: list[tuple[int, Rule]]) -> None:
        self.rule_of: list[int] = []
        self.match: Callable[[bytes], list[int]] | None = None
        if not rules:
            return
        patterns = re2.Set.FullMatchSet(_OPTS)
        for k, rule in rules:
            try:
                patterns.Add(rule.regex)
            except re2.error:
                continue  # a line RE2 refuses is dropped, as ripgrep drops invalid globs
            self.rule_of.append(k)
        if not self.rule_of:
            return
        try:
            patterns.Compile()
        except re2.error:
            self.rule_of = []
            return
        self.match = patterns._set.Match  # the binding's call: a list of set indexes


class IgnoreFile:
    """The rules of one ignore file. One RE2 set call per side says which rules match
    (a set never backtracks; if it runs out of memory it answers 'none', i.e. shown)."""

    __slots__ = ("names", "paths", "rules")

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.names = _Side([(k, r) for k, r in enumerate(rules) if r.on_name])
        self.paths = _Side([(k, r) for k, r in enumerate(rules) if not r.on_name])

    @classmethod
    def parse(cls, text: bytes) -> IgnoreFile | None:
        rules = []
        for line in text.split(b"\n"):
            rule = parse_line(line)
            if rule is not None:
                rules.append(rule)
                if len(rules) >= MAX_RULES:
                    break
        return cls(rules) if rules else None

    def decide(self, rel: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule matches."""
        hit: list[int] = []
        names, paths = self.names, self.paths
        if names.match is not None:
            found = names.match(name)
            if found:
                hit += [names.rule_of[i] for i in found]
        if paths.match is not None:
            found = paths.match(rel)
            if found:
                hit += [paths.rule_of[i] for i in found]
        if not hit:
            return None
        rules = self.rules
        for k in sorted(hit, reverse=True):  # the last matching line decides
            rule = rules[k]
            if rule.dir_only and not is_dir:
                continue
            return not rule.negate
        return None


class Level(NamedTuple):
    prefix: bytes  # the directory, relative to the root, as b"" or b"a/b/"
    files: tuple[IgnoreFile | None, ...]  # by KINDS


class Budget:
    """Bytes of ignore files one call may read (`MAX_CALL_IGNORE_BYTES`), then none."""

    __slots__ = ("left", "short")

    def __init__(self, total: int) -> None:
        self.left = total
        self.short = 0  # ignore files left unread for want of budget


def read_level(dir_fd: int, prefix: bytes, names: Sequence[str], budget: Budget
               ) -> Level | None:
    """The ignore files among `names` (entries of the open directory), or None."""
    files: list[IgnoreFile | None] = []
    for kind in KINDS:
        parsed = None
        if kind in names:
            if budget.left <= 0:
                budget.short += 1
            else:
                parsed = _read(dir_fd, kind, budget)
        files.append(parsed)
    return Level(prefix, tuple(files)) if any(files) else None


def _read(dir_fd: int, name: str, budget: Budget) -> IgnoreFile | None:
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        want = min(MAX_IGNORE_BYTES, budget.left)
        data = os.read(fd, want)
        budget.left -= len(data)
        if len(data) == want:  # cut: keep whole lines only
            data = data[: data.rfind(b"\n") + 1]
        return IgnoreFile.parse(data)
    except OSError:
        return None
    finally:
        os.close(fd)


def in_order(stack: tuple[Level, ...]) -> list[tuple[IgnoreFile, int]]:
    """The stack's files in the order they are asked, each with its prefix length:
    by kind (`.rgignore` first), then deepest first; the first to answer decides."""
    return [(f, len(level.prefix)) for k in range(len(KINDS)) for level in reversed(stack)
            if (f := level.files[k]) is not None]


def decide(files: list[tuple[IgnoreFile, int]], rel: bytes, name: bytes, is_dir: bool) -> bool:
    """Whether the entry at root-relative `rel` is ignored by these files (`in_order`)."""
    for f, cut in files:
        said = f.decide(rel[cut:], name, is_dir)
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
        self.budget = Budget(MAX_CALL_IGNORE_BYTES)
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
                level = read_level(fd, prefix, names, self.budget)
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
        own = []
        for e in entries:  # sorted: the ignore files' names come before any letter or digit
            n = e.name
            if n > _LAST_KIND:
                break
            if n in self._names:
                own.append(n)
        prefix = "/".join(parts) + "/" if parts else ""
        bprefix = prefix.encode("utf-8", "surrogateescape")
        if own:
            level = read_level(fd, bprefix, own, self.budget)
            if level is not None:
                stack = (*stack, level)
        if not stack:
            return entries
        kept = []
        has_dirs = False
        files = in_order(stack)
        for e in entries:
            name = e.name.encode("utf-8", "surrogateescape")
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if decide(files, bprefix + name, name, is_dir):
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
        notes = []
        if self.hidden_files or self.hidden_dirs:
            what = []
            if self.hidden_files:
                what.append(f"{self.hidden_files} file(s)")
            if self.hidden_dirs:
                what.append(f"{self.hidden_dirs} director(ies)")
            notes.append(f"ignore files (.gitignore, .ignore) hid {' and '.join(what)}; "
                         "no_ignore=true searches them too")
        if self.budget.short:
            notes.append(f"{self.budget.short} ignore file(s) were not read (over "
                         f"{MAX_CALL_IGNORE_BYTES} bytes of ignore files in one call), so what "
                         "they would hide is included")
        return "; ".join(notes) or None
