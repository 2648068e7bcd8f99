"""Trees at a commit: path lookup and tree-to-tree changes, with deny rules applied.

Every name that comes out of a tree is checked twice before it is used: it
must be a valid path component (a crafted tree may hold `..`, `a/b`, NUL or
non-UTF-8 names: those entries are skipped and counted as invalid) and it must
pass the root's deny rules (a denied entry is pruned before descending and
counted, never shown). The blob ids of pruned denied files are kept, so a
file whose content is the same as a denied file's in the same comparison (a
`.env` copied or renamed to `config.txt`) has its content withheld too.
"""

from __future__ import annotations

import re
import stat as stat_mod
from collections.abc import Callable
from dataclasses import dataclass, field

from dulwich.errors import ObjectFormatException
from dulwich.objects import Tree, parse_tree

from app.errors import LoomError
from app.fs.history.gitdir import GitDir
from app.security.deny import DenyRules

EMPTY = b""
MAX_DEPTH = 256

Content = Callable[[bytes | None], bytes | None]  # a side's bytes by blob id (None: absent)


def is_tree(mode: int) -> bool:
    return stat_mod.S_ISDIR(mode)


def kind(mode: int) -> str:
    if mode == 0o160000:
        return "submodule"
    if stat_mod.S_ISLNK(mode):
        return "symlink"
    if stat_mod.S_ISDIR(mode):
        return "dir"
    return "file"


_BAD_BYTES = re.compile(rb"[\x00-\x1f\x7f/\\]")
_names: dict[bytes, str | None] = {}  # names repeat across trees: decided once


def valid_name(raw: bytes) -> str | None:
    """A tree entry's name as a path component, or None when no path may hold it."""
    try:
        return _names[raw]
    except KeyError:
        pass
    name: str | None = None
    if raw and raw not in (b".", b"..") and len(raw) <= 255 and not _BAD_BYTES.search(raw):
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            name = None
    if len(_names) > 100_000:
        _names.clear()
    _names[raw] = name
    return name


@dataclass
class Hidden:
    """What a comparison or listing left out, for the result's note."""

    denied_paths: set[str] = field(default_factory=set)
    invalid: int = 0
    denied_blobs: set[bytes] = field(default_factory=set)

    @property
    def denied(self) -> int:
        return len(self.denied_paths)

    def notes(self, what: str = "changed paths") -> list[str]:
        notes = []
        if self.denied:
            notes.append(f"{self.denied} {what} hidden by deny rules")
        if self.invalid:
            notes.append(f"{self.invalid} entries with invalid names skipped")
        return notes


@dataclass(frozen=True)
class Change:
    path: str
    change: str  # added | deleted | modified | renamed | type_changed
    old_sha: bytes | None
    new_sha: bytes | None
    old_mode: int
    new_mode: int
    old_path: str | None = None


class Trees:
    """Tree reading for one call, with a bounded cache of parsed trees."""

    def __init__(self, git: GitDir, rules: DenyRules, check: Callable[[], None]) -> None:
        assert git.store is not None
        self.store = git.store
        self.rules = rules
        self.check = check
        self._cache: dict[bytes, list[tuple[bytes, int, bytes]]] = {}
        self._dicts: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}
        self._found: dict[tuple[bytes, tuple[str, ...]], tuple[int, bytes] | None] = {}

    def entries(self, sha: bytes) -> list[tuple[bytes, int, bytes]]:
        """(name, mode, hex id) of a tree's entries, parsed once per call."""
        got = self._cache.get(sha)
        if got is None:
            kind, raw = self.store.get_raw(sha)
            if kind != Tree.type_num:
                raise LoomError(f"object {sha.decode()[:12]} is not a tree")
            try:
                got = list(parse_tree(raw, sha_len=20))
            except (ValueError, ObjectFormatException):
                raise LoomError(f"tree {sha.decode()[:12]} is malformed") from None
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[sha] = got
        return got

    def lookup(self, tree: bytes, parts: tuple[str, ...]) -> tuple[int, bytes] | None:
        """(mode, id) of the entry at `parts` below `tree`, or None."""
        key = (tree, parts)
        if key in self._found:
            return self._found[key]
        mode, cur = 0o040000, tree
        got: tuple[int, bytes] | None = (mode, cur)
        for part in parts:
            if not is_tree(mode):
                got = None
                break
            hit = self._named(cur).get(part.encode("utf-8"))
            if hit is None:
                got = None
                break
            mode, cur = hit
            got = hit
        if len(self._found) > 65_536:
            self._found.clear()
        self._found[key] = got
        return got

    def _named(self, sha: bytes) -> dict[bytes, tuple[int, bytes]]:
        got = self._dicts.get(sha)
        if got is None:
            got = {name: (mode, child) for name, mode, child in self.entries(sha)}
            if len(self._dicts) > 4096:
                self._dicts.clear()
            self._dicts[sha] = got
        return got

    def denied(self, parts: tuple[str, ...]) -> bool:
        hit = self.rules.name(parts[-1])
        if hit is None and self.rules.protects_whole_paths():
            hit = self.rules.prefixes(parts)
        return hit is not None

    def changes(
        self,
        old: bytes | None,
        new: bytes | None,
        prefix: tuple[str, ...],
        hidden: Hidden,
    ) -> list[Change]:
        """Changes between two trees (None: empty), at or below `prefix`, sorted by path."""
        out: list[Change] = []
        old_e = self.lookup(old, prefix) if old is not None else None
        new_e = self.lookup(new, prefix) if new is not None else None
        self._diff(prefix, old_e, new_e, out, hidden, 0)
        out.sort(key=lambda c: c.path.encode("utf-8"))
        return _pair_renames(out)

    def _diff(
        self,
        parts: tuple[str, ...],
        old: tuple[int, bytes] | None,
        new: tuple[int, bytes] | None,
        out: list[Change],
        hidden: Hidden,
        depth: int,
    ) -> None:
        if old == new or depth > MAX_DEPTH:
            return
        self.check()
        old_tree = old is not None and is_tree(old[0])
        new_tree = new is not None and is_tree(new[0])
        if old_tree or new_tree:
            a = self._children(old[1], parts, hidden) if old_tree and old else {}
            b = self._children(new[1], parts, hidden) if new_tree and new else {}
            for name in sorted(set(a) | set(b)):
                x, y = a.get(name), b.get(name)
                sub = (*parts, name)
                if self.denied(sub):
                    # Pruned, never descended; a blob's id is kept to withhold copies of it.
                    for e in (x, y):
                        if e is not None and not is_tree(e[0]):
                            hidden.denied_blobs.add(e[1])
                    if x != y:
                        hidden.denied_paths.add(join(sub))
                    continue
                self._diff(sub, x, y, out, hidden, depth + 1)
            # A file replaced by a directory (or back): the file side is its own change.
            if old is not None and not old_tree:
                out.append(Change(join(parts), "deleted", old[1], None, old[0], 0))
            if new is not None and not new_tree:
                out.append(Change(join(parts), "added", None, new[1], 0, new[0]))
            return
        path = join(parts)
        if old is None and new is not None:
            out.append(Change(path, "added", None, new[1], 0, new[0]))
        elif new is None and old is not None:
            out.append(Change(path, "deleted", old[1], None, old[0], 0))
        elif old is not None and new is not None:
            change = "modified" if kind(old[0]) == kind(new[0]) else "type_changed"
            out.append(Change(path, change, old[1], new[1], old[0], new[0]))

    def _children(
        self, sha: bytes, parts: tuple[str, ...], hidden: Hidden
    ) -> dict[str, tuple[int, bytes]]:
        kids: dict[str, tuple[int, bytes]] = {}
        for raw, mode, child in self.entries(sha):
            name = valid_name(raw)
            if name is None:
                hidden.invalid += 1
                continue
            kids[name] = (mode, child)
        return kids

    def files(self, tree: bytes, prefix: tuple[str, ...], hidden: Hidden) -> list[Change]:
        """Every file at or below `prefix` in `tree`, as additions (for a root commit)."""
        return self.changes(None, tree, prefix, hidden)


def _pair_renames(changes: list[Change]) -> list[Change]:
    """Exact renames (same content and mode), as `git diff -M100%` finds them."""
    added: dict[tuple[bytes | None, int], list[int]] = {}
    for i, c in enumerate(changes):
        if c.change == "added" and c.new_sha is not None:
            added.setdefault((c.new_sha, c.new_mode), []).append(i)
    taken: set[int] = set()
    out: list[Change] = []
    renamed: dict[int, Change] = {}
    for i, c in enumerate(changes):
        if c.change != "deleted":
            continue
        cands = [j for j in added.get((c.old_sha, c.old_mode), []) if j not in taken]
        if cands:
            j = cands[0]
            taken.add(j)
            taken.add(i)
            n = changes[j]
            renamed[j] = Change(
                n.path, "renamed", c.old_sha, n.new_sha, c.old_mode, n.new_mode, c.path
            )
    for i, c in enumerate(changes):
        if i in renamed:
            out.append(renamed[i])
        elif i not in taken:
            out.append(c)
    return out


def join(parts: tuple[str, ...]) -> str:
    return "/".join(parts)
