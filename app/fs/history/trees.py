"""Trees at a commit: path lookup, deny rules, and what a comparison left out.

Every name that comes out of a tree is checked twice before it is used: it
must be a valid path component (a crafted tree may hold `..`, `a/b`, NUL or
non-UTF-8 names: those entries are skipped and counted as invalid) and it must
pass the root's deny rules (a denied entry is pruned before descending and
counted, never shown). The blob ids of pruned denied files are kept, so a
file whose content is the same as a denied file's in the same comparison (a
`.env` copied or renamed to `config.txt`) has its content withheld too.

Trees are read whole, each at most `store.MAX_TREE` bytes, and kept per call
up to `CACHE_BYTES`; their entries are parsed as they are needed
(`treeobj.py`); comparisons are in `changes.py`.
"""

from __future__ import annotations

import re
import stat as stat_mod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from app.fs.history.errors import CorruptObject
from app.fs.history.gitdir import GitDir
from app.fs.history.raw import NAMES, TREE, Want
from app.fs.history.store import MAX_TREE
from app.fs.history.treeobj import Tree, is_dir
from app.security.deny import DenyRules

CACHE_BYTES = 16 << 20
MAX_PATH = 4096  # the longest path a tool argument may name: nothing longer is listed

Content = Callable[[bytes | None], bytes | None]  # a side's bytes by blob id (None: absent)


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
    too_long: int = 0  # subtrees whose paths pass MAX_PATH
    unpaired: bool = False  # too many changes to pair renames

    @property
    def denied(self) -> int:
        return len(self.denied_paths)

    def merge(self, other: Hidden) -> None:
        self.denied_paths |= other.denied_paths
        self.denied_blobs |= other.denied_blobs
        self.invalid += other.invalid
        self.too_long += other.too_long

    def notes(self, what: str = "changed paths") -> list[str]:
        notes = []
        if self.denied:
            notes.append(f"{self.denied} {what} hidden by deny rules")
        if self.invalid:
            notes.append(f"{self.invalid} entries with invalid names skipped")
        if self.too_long:
            notes.append(f"{self.too_long} folders not listed: their paths are longer than "
                         f"{MAX_PATH} characters")
        if self.unpaired:
            notes.append("more changes than renames are paired for: a rename is listed as a "
                         "deletion and an addition")
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
    # Where the walk found it: per level of its path, each side's byte position in its
    # tree (-1: no tree on that side), so a page can start there (`changes.py`).
    where: tuple[tuple[int, int], ...] = ()


class Trees:
    """Tree reading for one call, with a cache bounded in bytes."""

    def __init__(self, git: GitDir, rules: DenyRules, check: Callable[[], None]) -> None:
        assert git.store is not None
        self.store = git.store
        self.rules = rules
        self.check = check
        self._cache: OrderedDict[bytes, Tree] = OrderedDict()
        self._bytes = 0
        self._found: dict[tuple[bytes, tuple[str, ...]], tuple[int, bytes] | None] = {}

    def tree(self, sha: bytes) -> Tree:
        """The tree `sha` (ObjectMissing, CorruptObject, ObjectTooLarge)."""
        got = self._cache.get(sha)
        if got is not None:
            self._cache.move_to_end(sha)
            return got
        raw = self.store.read(sha, Want(cap=MAX_TREE, limit=MAX_TREE))
        if raw.kind != TREE:
            raise CorruptObject(sha, f"a {NAMES[raw.kind]} where a tree should be")
        got = Tree(sha, raw.data, self.store.meter)
        self._cache[sha] = got
        self._bytes += got.cost
        while self._bytes > CACHE_BYTES and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._bytes -= old.cost
        return got

    def lookup(self, tree: bytes, parts: tuple[str, ...]) -> tuple[int, bytes] | None:
        """(mode, id) of the entry at `parts` below `tree`, or None."""
        key = (tree, parts)
        if key in self._found:
            return self._found[key]
        got: tuple[int, bytes] | None = (0o040000, tree)
        for part in parts:
            if got is None or not is_dir(got[0]):
                got = None
                break
            got = self.tree(got[1]).find(part.encode("utf-8"))
        if len(self._found) > 65_536:
            self._found.clear()
        self._found[key] = got
        return got

    def denied(self, parts: tuple[str, ...]) -> bool:
        hit = self.rules.name(parts[-1])
        if hit is None and self.rules.protects_whole_paths():
            hit = self.rules.prefixes(parts)
        return hit is not None


def join(parts: tuple[str, ...]) -> str:
    return "/".join(parts)
