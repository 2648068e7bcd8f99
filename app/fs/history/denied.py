"""Which file contents were ever denied: blob ids found at a denied path in history.

Deny rules are about names, but history keeps content under every name it
ever had: a `.env` committed, then copied or renamed to `config.txt` (in the
same commit or years later), is the same blob. Before a call serves file
content from history (`git_show` with a path, `git_diff`), the trees of every
commit reachable from the refs and from the commits named in the call are
scanned once for denied paths; a blob seen at one is withheld everywhere.

Cost is bounded: trees are memoised by id (unchanged subtrees are free), the
index is kept per repository and deny rules across calls and grows only by
new commits, one call parses at most `TREE_BUDGET` trees or scans for
`TIME_BUDGET` seconds (the next call goes on), and an index above
`MAX_TREES` stops: content from such a history is refused (logs and file
lists still work). Both cases say so in the error;
the check fails closed.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dulwich.objects import Commit

from app.errors import LoomError
from app.fs.history.gitdir import GitDir
from app.fs.history.trees import Trees, valid_name

TREE_BUDGET = 20_000  # trees parsed by one call (two to five seconds here)
TIME_BUDGET = 3.0  # seconds of scanning in one call, whichever budget ends first
MAX_TREES = 400_000  # beyond this the index is not kept (memory: tens of MiB)
MAX_REFS = 100_000
_CACHE_SIZE = 8

Parts = tuple[str, ...]
Entry = tuple[bytes, int, bytes]  # a tree entry: name, mode, hex id


class HistoryCheckPending(LoomError):
    rule = "git"


class DeniedIndex:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.commits: set[bytes] = set()
        self.trees: set[object] = set()
        self.whole: set[bytes] = set()  # denied trees whose blobs are all collected
        self.blobs: set[bytes] = set()
        self.frontier: list[bytes] = []  # commits queued when the last scan ran out of budget
        self.too_large = False
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
    `extra_heads`; raises when the scan could not finish in this call."""
    idx = index_for(git, trees.rules)
    with idx.lock:
        if idx.too_large:
            raise HistoryCheckPending(
                "file contents from this history are not served: it is too large "
                f"(more than {MAX_TREES} trees) to check every commit for copies of denied files"
            )
        heads = [*all_ref_targets(git), *extra_heads]
        _Scan(git, trees, idx).run(heads)
        if len(idx.snapshot) != len(idx.blobs):
            idx.snapshot = frozenset(idx.blobs)
        return idx.snapshot


class _Scan:
    def __init__(self, git: GitDir, trees: Trees, idx: DeniedIndex) -> None:
        assert git.store is not None
        self.store = git.store
        self.shallow = git.shallow
        self.trees = trees
        self.idx = idx
        self.parsed = 0
        self.deadline = time.monotonic() + TIME_BUDGET
        self.by_path = trees.rules.protects_whole_paths()

    def run(self, heads: list[bytes]) -> None:
        # What an interrupted scan had queued comes first: a commit is marked done only
        # once its tree is, and its parents are queued then, so nothing is skipped.
        stack = [*self.idx.frontier, *(h for h in heads if h not in self.idx.commits)]
        self.idx.frontier = []
        try:
            while stack:
                sha = stack[-1]
                if sha not in self.idx.commits:
                    self._commit(sha, stack)
                else:
                    stack.pop()
        except BaseException:
            self.idx.frontier = stack
            raise

    def _commit(self, sha: bytes, stack: list[bytes]) -> None:
        try:
            obj = self.store.object(sha)
        except KeyError:
            obj = None
        while obj is not None and not isinstance(obj, Commit):  # an annotated tag
            target = getattr(obj, "object", None)
            try:
                obj = self.store.object(target[1]) if target is not None else None
            except KeyError:
                obj = None
        if obj is None:
            self.idx.commits.add(sha)
            stack.pop()
            return
        self._tree(obj.tree)  # raises when over budget: the commit stays on the stack
        self.idx.commits.add(sha)
        self.idx.commits.add(obj.id)
        stack.pop()
        if obj.id not in self.shallow:
            stack.extend(p for p in obj.parents if p not in self.idx.commits)

    def _count(self) -> None:
        self.parsed += 1
        over_time = False
        if self.parsed % 256 == 0:
            self.trees.check()
            over_time = time.monotonic() > self.deadline
        if len(self.idx.trees) > MAX_TREES:
            self.idx.too_large = True
            self.idx.trees.clear()
            raise HistoryCheckPending(
                "file contents from this history are not served: it is too large "
                f"(more than {MAX_TREES} trees) to check every commit for copies of denied files"
            )
        if self.parsed > TREE_BUDGET or over_time:
            raise HistoryCheckPending(
                f"checking the history for copies of denied files: {len(self.idx.commits)} "
                "commits checked so far; call again to continue"
            )

    def _post_order(self, root: bytes, done: set[Any], key: Callable[[bytes, Parts], object],
                    expand: Callable[[Parts, list[Entry]], Iterable[tuple[bytes, Parts]]]
                    ) -> None:
        """Visit the trees below `root` that `expand` yields, each once (`done`, by `key`)."""
        # Post-order: a tree is marked done only after every subtree below it is, so a
        # scan interrupted by the budget resumes without skipping anything.
        todo: list[tuple[bytes, Parts, bool]] = [(root, (), False)]
        while todo:
            sha, parts, expanded = todo.pop()
            k = key(sha, parts)
            if expanded:
                done.add(k)
                continue
            if k in done:
                continue
            self._count()
            try:
                entries = self.trees.entries(sha)
            except (KeyError, LoomError):
                continue
            todo.append((sha, parts, True))
            todo.extend((child, sub, False) for child, sub in expand(parts, entries))

    def _tree(self, root: bytes) -> None:
        """A commit's tree: blobs at denied paths collected, other subtrees visited."""
        by_path = self.by_path
        self._post_order(root, self.idx.trees, _by_path if by_path else _by_id, self._denied_in)

    def _denied_in(self, parts: Parts, entries: list[Entry]) -> Iterator[tuple[bytes, Parts]]:
        name_hit = self.trees.rules.name
        by_path = self.by_path
        for raw, mode, child in entries:
            name = valid_name(raw)
            if name is None:
                continue
            subtree = mode & 0o170000 == 0o040000
            if by_path:
                sub = (*parts, name)
                hit = self.trees.denied(sub)
            else:
                hit = name_hit(name) is not None
            if hit:
                if subtree:
                    self._all_blobs(child)
                elif mode != 0o160000:
                    self.idx.blobs.add(child)
            elif subtree:
                yield child, (*parts, name) if by_path else ()

    def _all_blobs(self, root: bytes) -> None:
        """A denied tree: every blob below it, whatever its name."""
        self._post_order(root, self.idx.whole, _by_id, self._every_blob)

    def _every_blob(self, _parts: Parts, entries: list[Entry]) -> Iterator[tuple[bytes, Parts]]:
        for _raw, mode, child in entries:
            if mode & 0o170000 == 0o040000:
                yield child, ()
            elif mode != 0o160000:
                self.idx.blobs.add(child)


def _by_path(sha: bytes, parts: Parts) -> object:
    # Rules on whole paths: one tree can hold a denied path at one place and not another.
    return (sha, parts)


def _by_id(sha: bytes, _parts: Parts) -> object:
    return sha


def all_ref_targets(git: GitDir) -> list[bytes]:
    """HEAD and every ref under refs/ (loose and packed), as object ids."""
    found: list[bytes] = []
    head = git.ref("HEAD")
    if head is not None:
        found.append(head)
    found.extend(git.packed_refs().values())
    for name in git.loose_ref_names(MAX_REFS):
        sha = git.ref(name)
        if sha is not None:
            found.append(sha)
    return found
