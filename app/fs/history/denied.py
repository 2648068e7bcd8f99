"""Which file contents were ever denied: blob ids found at a denied path in history.

Deny rules are about names, but history keeps content under every name it
ever had: a `.env` committed, then copied or renamed to `config.txt` (in the
same commit or years later), is the same blob. Before a call serves file
content from history (`git_show` with a path, `git_diff`), the trees of every
commit (and tree) reachable from the refs and from the commits named in the
call are scanned for denied paths; a blob seen at one is withheld everywhere.

The scan is a depth-first walk whose whole state (the stack of commits and
trees still to visit, post-order markers included) is kept in the index
between calls: a call that runs out of its budget (`TREE_BUDGET` trees,
`TIME_BUDGET` seconds, half the call's byte budget) leaves the stack where it
stopped and the next call goes on from there, so every call makes progress
and a tree of any depth is finished in a bounded number of calls. Memoised by
id (by path where whole-path deny rules could apply below), an unchanged
subtree is free; the index is kept per repository and deny rules and grows
only by new commits.

The check fails closed, with its reason: past `MAX_TREES` trees or
`MAX_COMMITS` commits, or at a tree or commit that cannot be read (corrupt,
too large), or where whole-path rules would have to be followed deeper than
`PATH_DEPTH` levels, file contents from the history are refused (logs and file
lists still work). A missing object is skipped: a shallow or partial clone
has none of what it lacks, and no call can read it either.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from app.errors import LoomError
from app.fs.history.errors import CorruptObject, ObjectMissing, ObjectTooLarge, WorkSpent, short
from app.fs.history.gitdir import GitDir
from app.fs.history.objects import kind_of, read_commit, tag_target
from app.fs.history.raw import COMMIT, TAG, TREE
from app.fs.history.treeobj import hexid, is_dir
from app.fs.history.trees import Trees, valid_name

TREE_BUDGET = 20_000  # trees parsed by one call (two to five seconds here)
TIME_BUDGET = 3.0  # seconds of scanning in one call, whichever budget ends first
MAX_TREES = 400_000  # beyond this the index is not kept (memory: tens of MiB)
MAX_COMMITS = 400_000
MAX_REFS = 100_000
PATH_DEPTH = 256  # whole-path rules are followed this deep; a scan needing more refuses
_CACHE_SIZE = 8

Parts = tuple[str, ...]
Item = tuple[str, bytes, object]  # (what, id, parts or marker key)


class HistoryCheckPending(LoomError):
    rule = "git"


class DeniedIndex:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.commits: set[bytes] = set()
        self.trees: set[object] = set()
        self.whole: set[bytes] = set()  # denied trees whose blobs are all collected
        self.blobs: set[bytes] = set()
        self.stack: list[Item] = []  # what an interrupted scan had left to do
        self.queued: set[bytes] = set()  # heads on the stack, not yet scanned
        self.refused: str | None = None  # why contents from this history are not served
        self.read = 0  # trees read so far (the progress a "call again" reports)
        self.snapshot: frozenset[bytes] = frozenset()  # what calls read, outside the lock


_cache: OrderedDict[tuple[object, ...], DeniedIndex] = OrderedDict()
_cache_lock = threading.Lock()


def index_for(git: GitDir, rules_key: object) -> DeniedIndex:
    # The rules object itself is in the key (not its id): a rules object of a reload
    # can never be mistaken for an older one, whose index would miss its new denials.
    st = os.fstat(git.fd)
    key = (st.st_dev, st.st_ino, rules_key)
    with _cache_lock:
        idx = _cache.get(key)
        if idx is None:
            idx = _cache[key] = DeniedIndex()
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        _cache.move_to_end(key)
        return idx


def denied_blobs(git: GitDir, trees: Trees, extra_heads: Iterable[bytes]) -> frozenset[bytes]:
    """Every blob id at a denied path in the history reachable from the refs and
    `extra_heads`; raises when the scan could not finish in this call, or refuses."""
    idx = index_for(git, trees.rules)
    with idx.lock:
        if idx.refused is None:
            for head in (*all_ref_targets(git), *extra_heads):
                if head not in idx.commits and head not in idx.queued:
                    idx.queued.add(head)
                    idx.stack.append(("c", head, None))
            _Scan(git, trees, idx).run()
        if idx.refused is not None:
            raise HistoryCheckPending(idx.refused)
        if len(idx.snapshot) != len(idx.blobs):
            idx.snapshot = frozenset(idx.blobs)
        return idx.snapshot


def _refuse(idx: DeniedIndex, why: str) -> HistoryCheckPending:
    idx.refused = f"file contents from this history are not served: {why}"
    idx.stack.clear()
    idx.trees.clear()
    idx.commits.clear()
    idx.queued.clear()
    return HistoryCheckPending(idx.refused)


class _Scan:
    def __init__(self, git: GitDir, trees: Trees, idx: DeniedIndex) -> None:
        assert git.store is not None
        self.store = git.store
        self.shallow = git.shallow
        self.trees = trees
        self.rules = trees.rules
        self.idx = idx
        self.parsed = 0
        self.deadline = time.monotonic() + TIME_BUDGET
        self.by_path = trees.rules.protects_whole_paths()
        self.meter = self.store.meter
        self.share = self.meter.spent + self.meter.budget // 2  # the scan's part of the call

    def run(self) -> None:
        stack = self.idx.stack
        steps = {"c": self._commit, "t": self._tree, "w": self._whole, "x": self._expand}
        try:
            while stack:
                what, sha, extra = stack[-1]
                if what in steps:
                    steps[what](sha, extra)
                    continue
                stack.pop()  # a marker: everything below it is done
                if what == "C":
                    self.idx.commits.add(sha)
                    self.idx.queued.discard(sha)
                elif what == "T":
                    self.idx.trees.add(extra)
                else:
                    self.idx.whole.add(sha)
        except WorkSpent:
            raise self._pending() from None
        except (CorruptObject, ObjectTooLarge) as exc:
            raise _refuse(self.idx, f"it could not be checked for copies of denied files "
                                    f"({exc.message})") from None

    def _pending(self) -> HistoryCheckPending:
        return HistoryCheckPending(
            f"checking the history for copies of denied files: {len(self.idx.commits)} commits "
            f"checked and {self.idx.read} trees read so far; call again to continue")

    def _count(self) -> None:
        self.parsed += 1
        over_time = False
        if self.parsed % 256 == 0:
            self.trees.check()
            over_time = time.monotonic() > self.deadline
        if len(self.idx.trees) + len(self.idx.whole) > MAX_TREES:
            raise _refuse(self.idx, f"it is too large (more than {MAX_TREES} trees) to check "
                                    "every commit for copies of denied files")
        if len(self.idx.commits) > MAX_COMMITS:
            raise _refuse(self.idx, f"it is too large (more than {MAX_COMMITS} commits) to "
                                    "check every commit for copies of denied files")
        if self.parsed > 1 and (self.parsed > TREE_BUDGET or over_time
                                or self.meter.spent > self.share):
            raise self._pending()

    def _commit(self, sha: bytes, _: object) -> None:
        """A head or parent: a commit (its tree, then its parents), a tag, or a tree."""
        stack = self.idx.stack
        if sha in self.idx.commits:
            stack.pop()
            return
        self._count()
        try:
            kind = kind_of(self.store, sha)
            target = tag_target(self.store, sha) if kind == TAG else None
            info = read_commit(self.store, sha) if kind == COMMIT else None
        except ObjectMissing:
            kind, target, info = 0, None, None
        stack.pop()
        if info is not None and info.id not in self.shallow:
            stack.extend(("c", p, None) for p in info.parents if p not in self.idx.commits)
        stack.append(("C", sha, None))  # done once everything pushed after it is
        if target is not None:
            stack.append(("c", target, None))
        elif info is not None or kind == TREE:
            stack.append(("t", info.tree if info else sha, () if self.by_path else None))

    def _tree(self, sha: bytes, parts: object) -> None:
        """A commit's tree: its entries are visited next (`_expand`), then it is done."""
        key = sha if parts is None else (sha, parts)
        self._visit(sha, key, self.idx.trees, ("T", sha, key), (parts, 0, False))

    def _whole(self, sha: bytes, _: object) -> None:
        """A denied tree: every blob below it, whatever its name."""
        self._visit(sha, sha, self.idx.whole, ("W", sha, None), (None, 0, True))

    def _visit(self, sha: bytes, key: object, done: set[Any], marker: Item, at: object) -> None:
        """A tree to read: done already, missing (skipped), or read: its marker goes below,
        the visit of its entries on top."""
        stack = self.idx.stack
        if key in done:
            stack.pop()
            return
        self._count()
        try:
            self.trees.tree(sha)
        except ObjectMissing:
            stack.pop()
            return
        stack[-1] = marker
        stack.append(("x", sha, at))
        self.idx.read += 1

    def _expand(self, sha: bytes, at: object) -> None:
        """A tree's entries from a position on: blobs at denied paths (under a denied tree:
        every blob) collected, other subtrees queued. It stops within the call's budget and
        goes on from where it stopped in the next call."""
        assert isinstance(at, tuple)
        parts, pos, whole = at
        stack = self.idx.stack
        here = len(stack) - 1
        tree = self.trees.tree(sha)
        last = pos
        try:
            for raw, mode, child, end in tree.entries(pos):
                if whole:
                    self._blob_or_tree(mode, child)
                else:
                    name = valid_name(raw)
                    if name is not None:
                        self._entry(name, mode, child, parts)
                last = end
                if self.meter.spent > self.share:
                    raise self._pending()
        finally:
            if len(stack) > here:
                stack[here] = ("x", sha, (parts, last, whole))
        if len(stack) - 1 == here:
            stack.pop()

    def _blob_or_tree(self, mode: int, raw_id: bytes) -> None:
        child = hexid(raw_id)
        if is_dir(mode):
            if child not in self.idx.whole:
                self.idx.stack.append(("w", child, None))
        elif mode != 0o160000:
            self.idx.blobs.add(child)

    def _entry(self, name: str, mode: int, raw_id: bytes, parts: object) -> None:
        sub: Parts | None = (*parts, name) if isinstance(parts, tuple) else None
        hit = self.trees.denied(sub) if sub is not None else self.rules.name(name) is not None
        if hit:
            self._blob_or_tree(mode, raw_id)
            return
        if not is_dir(mode):
            return
        child = hexid(raw_id)
        below: Parts | None = None
        if sub is not None and self.rules.may_deny_below(sub):
            if len(sub) >= PATH_DEPTH:
                raise _refuse(self.idx, f"tree {short(child)} is nested deeper than "
                                        f"{PATH_DEPTH} levels where deny rules on whole paths "
                                        "apply")
            below = sub
        key = child if below is None else (child, below)
        if key not in self.idx.trees:
            self.idx.stack.append(("t", child, below))


def all_ref_targets(git: GitDir) -> list[bytes]:
    """HEAD and every ref under refs/ (loose and packed), as object ids."""
    found: list[bytes] = []
    head = git.ref("HEAD")
    if head is not None:
        found.append(head)
    for sha in git.packed_targets():
        found.append(sha)
        if len(found) > MAX_REFS:
            break
    for name in git.loose_ref_names(MAX_REFS):
        target = git.ref(name)
        if target is not None:
            found.append(target)
    return found
