"""`git log` order and path limiting, bounded by a budget of commits per call.

Order is git's default: newest commit date first, parents queued as each
commit is shown (no topological sort). With a path, git's default history
simplification: a commit is shown when the path differs from its parent (a
root commit: when the path exists); a merge whose path matches one parent
follows only that parent and is not shown, one that matches none is shown and
all its parents are followed.

The walk stops after `budget` commits, or when the call's byte budget for
reading the repository is spent (`WorkSpent`, after at least one commit); its
queue is the continuation (`Cursor`), so a path-limited log over any length of
history answers in bounded time, page after page. Commits are read for their
header only (`objects.HEAD_CAP`) and kept as small nodes (tree, parents, date).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import BadArgument, NotFound
from app.fs.history.errors import ObjectMissing, WorkSpent
from app.fs.history.gitdir import GitDir
from app.fs.history.objects import read_commit
from app.fs.history.store import RootObjectStore
from app.fs.history.trees import Trees

MAX_CURSOR_HEADS = 64
_CURSOR = re.compile(r"^(\d{1,9}):(\d{1,9}):([0-9a-f]{40}(?:,[0-9a-f]{40}){0,63})$")


@dataclass(frozen=True)
class Cursor:
    """Where a log continues: walk from `heads`, skip `skip` shown commits.

    `shown` is the offset it stands for (commits shown before it)."""

    shown: int
    skip: int
    heads: tuple[bytes, ...]

    def encode(self) -> str:
        return f"{self.shown}:{self.skip}:" + ",".join(h.decode() for h in self.heads)

    @classmethod
    def decode(cls, text: str) -> Cursor:
        m = _CURSOR.match(text)
        if m is None:
            raise BadArgument("invalid cursor: pass next_cursor from a previous git_log result")
        heads = tuple(h.encode() for h in m.group(3).split(","))
        return cls(int(m.group(1)), int(m.group(2)), heads)


@dataclass(frozen=True)
class Node:
    """What the walk keeps of a commit."""

    tree: bytes
    parents: tuple[bytes, ...]
    time: int


@dataclass
class WalkResult:
    commits: list[bytes]
    walked: int
    # None: the budget ran out before we knew; True: another commit would be shown.
    more: bool | None
    queue: tuple[bytes, ...]  # where to continue after the last commit in `commits`
    skipped: int = 0  # of the `skip` asked for
    # where to continue after each commit in `commits` (a page cut by the output goes on there)
    after: list[tuple[bytes, ...]] = field(default_factory=list)
    spent: str | None = None  # why the walk stopped early, when it was the byte budget


class _Frontier:
    """The commits still to visit, newest commit date first, each queued once; the
    parsed commits are kept (up to a bound) for their children's path lookups."""

    def __init__(self, store: RootObjectStore, heads: tuple[bytes, ...]) -> None:
        self.store = store
        self.seq = 0  # ties on the date keep the order they were queued in
        self.queue: list[tuple[int, int, bytes]] = []
        self.seen: set[bytes] = set()
        self.commits: dict[bytes, Node] = {}
        for h in heads:
            self.push(h)

    def get(self, sha: bytes) -> Node | None:
        c = self.commits.get(sha)
        if c is None:
            try:
                info = read_commit(self.store, sha)
            except ObjectMissing:
                return None  # a shallow clone's boundary, or a missing object
            c = Node(info.tree, info.parents, info.commit_time)
            if len(self.commits) > 20_000:
                self.commits.clear()
            self.commits[sha] = c
        return c

    def push(self, sha: bytes) -> None:
        if sha in self.seen:
            return
        c = self.get(sha)
        if c is None:
            return
        self.seen.add(sha)
        heapq.heappush(self.queue, (-c.time, self.seq, sha))
        self.seq += 1

    def pop(self) -> bytes:
        return heapq.heappop(self.queue)[2]

    def heads(self) -> tuple[bytes, ...]:
        """Where a walk continues: the queue, oldest first, at most MAX_CURSOR_HEADS."""
        return tuple(s for _, _, s in sorted(self.queue))[:MAX_CURSOR_HEADS]


def walk(
    git: GitDir,
    trees: Trees,
    heads: tuple[bytes, ...],
    *,
    path: tuple[str, ...],
    skip: int,
    want: int,
    budget: int,
    check: Callable[[], None],
) -> WalkResult:
    """Skip `skip` shown commits, then collect up to `want`, walking at most `budget`."""
    assert git.store is not None
    todo = _Frontier(git.store, heads)
    shown: list[bytes] = []
    after: list[tuple[bytes, ...]] = []
    walked = skipped = 0
    snapshot: tuple[bytes, ...] | None = None
    while todo.queue and walked < budget:
        if walked % 64 == 0:
            check()
        sha = todo.pop()
        try:
            c = todo.get(sha)
            if c is None:
                continue
            parents: list[bytes] = [] if sha in git.shallow else list(c.parents)
            show, follow = _decide(trees, c, parents, path, todo.get)
            if show and snapshot is not None:
                return WalkResult(shown, walked + 1, True, snapshot, skipped, after)  # one more
            for p in follow:
                todo.push(p)
        except WorkSpent as exc:
            if not walked:
                raise  # not one commit fits the call's budget: the answer ends here
            heads = (snapshot or tuple(dict.fromkeys((sha, *todo.heads()))))[:MAX_CURSOR_HEADS]
            return WalkResult(shown, walked, None, heads, skipped, after, exc.message)
        walked += 1
        if show:
            if skipped < skip:
                skipped += 1
            else:
                shown.append(sha)
                after.append(todo.heads())
                if len(shown) == want:
                    snapshot = after[-1]
    if not todo.queue:
        return WalkResult(shown, walked, False, (), skipped, after)
    queue = snapshot if snapshot is not None else todo.heads()
    return WalkResult(shown, walked, None, queue, skipped, after)


def _decide(
    trees: Trees,
    c: Node,
    parents: list[bytes],
    path: tuple[str, ...],
    get: Callable[[bytes], Node | None],
) -> tuple[bool, list[bytes]]:
    if not path:
        return True, parents
    mine = trees.lookup(c.tree, path)
    if not parents:
        return mine is not None, []
    same: list[bytes] = []
    for p in parents:
        pc = get(p)
        theirs = trees.lookup(pc.tree, path) if pc is not None else None
        if theirs == mine:
            same.append(p)
            break
    if same:
        return (False, same) if len(parents) > 1 else (False, parents)
    return True, parents


def start_heads(git: GitDir, cursor: Cursor | None, start: bytes) -> tuple[bytes, ...]:
    if cursor is None:
        return (start,)
    assert git.store is not None
    for h in cursor.heads:
        if not git.store.has(h):
            raise NotFound("the cursor names commits this repository does not have")
    return cursor.heads
