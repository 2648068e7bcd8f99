"""Ignore files (`.gitignore`, `.ignore`, `.rgignore`) and `exclude` globs, as the walk's filter.

Read the way ripgrep reads them in a git work tree (the root counts as one):

- Each directory's ignore files apply to the entries below it, matched
  against the path relative to that directory (the patterns and their syntax:
  `gitignore.py`). Across directories the deepest file that has a
  matching pattern decides; `.rgignore` beats `.ignore`, which beats
  `.gitignore`, at whatever depth (ripgrep's precedence).
- An ignored directory is pruned before it is opened, so (as in git) nothing
  under it can be re-included.
- Ignore files of the directories between the root and the search's `path`
  apply too; none above the root is read.

Ignoring is noise control, never security: denied names are pruned by the
walk before this filter sees anything, and no `!` pattern can bring one back.
Ignore files are content of the root and may be hostile: one is read up to
`MAX_IGNORE_BYTES`, and one call reads at most `MAX_CALL_IGNORE_BYTES` of
ignore files and compiles at most `MAX_CALL_IGNORE_RULES` of their rules (the
files or rules past them are not read, and the note says so).

Departures from git, all rare: `core.excludesFile`, `.git/info/exclude` and
nested repositories are not looked at; `{a,b}` is literal, as in git (ripgrep
reads it as alternation).
"""
from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import NamedTuple

from app.fs.filters.gitignore import MAX_RULES, IgnoreFile
from app.fs.filters.glob import Glob, compile_glob
from app.security import ops
from app.security.resolve import Root

# In precedence order: the first kind whose deepest matching file says something decides.
KINDS = (".rgignore", ".ignore", ".gitignore")
_LAST_KIND = max(KINDS)
MAX_IGNORE_BYTES = 1 << 20
MAX_CALL_IGNORE_BYTES = 8 << 20  # all ignore files one search reads
# Rules of all ignore files one search compiles: each costs tens of microseconds when
# wildcard-heavy (8 MiB of them held 124,000 and cost 6 s of CPU a call). Real trees hold
# a few thousand at most; the rules past it are dropped, and the note says so.
MAX_CALL_IGNORE_RULES = 16_384


class Level(NamedTuple):
    prefix: bytes  # the directory, relative to the root, as b"" or b"a/b/"
    files: tuple[IgnoreFile | None, ...]  # by KINDS


class Budget:
    """Bytes of ignore files one call may read (`MAX_CALL_IGNORE_BYTES`) and rules it may
    compile (`MAX_CALL_IGNORE_RULES`), then none."""

    __slots__ = ("left", "rules", "short", "unread")

    def __init__(self, total: int, rules: int) -> None:
        self.left = total
        self.rules = rules
        self.short = 0  # ignore files left unread, or read in part, for want of budget
        self.unread = 0  # ignore files that could not be read: a link (never followed), ...


def read_level(dir_fd: int, prefix: bytes, names: Sequence[str], budget: Budget
               ) -> Level | None:
    """The ignore files among `names` (entries of the open directory), or None."""
    files: list[IgnoreFile | None] = []
    for kind in KINDS:
        parsed = None
        if kind in names:
            if budget.left <= 0 or budget.rules <= 0:
                budget.short += 1
            else:
                parsed = _read(dir_fd, kind, budget)
        files.append(parsed)
    return Level(prefix, tuple(files)) if any(files) else None


def _read(dir_fd: int, name: str, budget: Budget) -> IgnoreFile | None:
    """The ignore file `name` parsed; None, counted in `budget.unread`, when it cannot be
    read: a symbolic link (ripgrep follows it; links are never followed here), a folder,
    a file without read permission."""
    try:
        fd = ops.open_file(dir_fd, name)
    except OSError as exc:
        budget.unread += exc.errno != errno.ENOENT  # gone since the listing: not there
        return None
    try:
        want = min(MAX_IGNORE_BYTES, budget.left)
        data = os.read(fd, want)
        budget.left -= len(data)
        if len(data) == want:  # cut: keep whole lines only
            data = data[: data.rfind(b"\n") + 1]
        parsed, dropped = IgnoreFile.parse(data, min(MAX_RULES, budget.rules))
        if parsed is not None:
            budget.rules -= len(parsed.rules)
        budget.short += dropped
        return parsed
    except OSError:
        budget.unread += 1
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

    def __init__(self, root: Root, start: tuple[str, ...], exclude: Sequence[str],
                 no_ignore: bool) -> None:
        self.root = root
        self.start = start
        self.strip = len("/".join(start)) + 1 if start else 0
        self.exclude: list[Glob] = [compile_glob(g) for g in exclude]
        self.use_ignore = not no_ignore
        self.hidden_files = self.hidden_dirs = self.excluded = 0
        self._stacks: dict[tuple[str, ...], tuple[Level, ...]] = {}
        self.budget = Budget(MAX_CALL_IGNORE_BYTES, MAX_CALL_IGNORE_RULES)
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
            notes.append(f"{self.budget.short} ignore file(s) were not read, or only in part "
                         f"(over {MAX_CALL_IGNORE_BYTES} bytes or {MAX_CALL_IGNORE_RULES} rules "
                         f"of ignore files in one call, {MAX_RULES} rules in one file), so what "
                         "they would hide is included")
        if self.budget.unread:
            notes.append(f"{self.budget.unread} ignore file(s) could not be read (a symbolic "
                         "link, which is never followed, or unreadable), so what they would "
                         "hide is included")
        return "; ".join(notes) or None
