"""git_log: a root's history, newest first, optionally limited to a path.

Pages by `offset` or by `cursor` (the walk's queue, `walk.Cursor`), bounded by
`WALK_BUDGET` commits walked per call, the call's byte budget and the output
cap. Every `next_cursor` moves: a page shows at least one commit (a subject
too long for the output is cut to fit) or walked at least one, so a client that
follows it ends. Deny rules apply to the path argument; commit messages and
author names are shown as recorded (a subject is cut at `SUBJECT_MAX`).
"""

from __future__ import annotations

from pydantic import BaseModel

from app.fs.control import Control
from app.fs.history import revs
from app.fs.history.commits import CUT_MARK, subject, text, when
from app.fs.history.gitdir import opened
from app.fs.history.objects import CommitInfo, read_commit
from app.fs.history.trees import Trees
from app.fs.history.walk import Cursor, WalkResult, start_heads, walk
from app.fs.text.paging import RESERVE, cut_to, fitting, json_len
from app.security.paths import join
from app.security.resolve import Root

# Commits one git_log call may walk (a path-limited page over a long history
# stops here and hands back a cursor); about half a second.
WALK_BUDGET = 5000
MIN_ITEM = 90  # characters of the shortest commit in a page (id, date, field names)


class LogCommit(BaseModel):
    id: str
    author: str
    date: str
    subject: str


class LogResult(BaseModel):
    root: str
    commit: str
    path: str
    commits: list[LogCommit]
    offset: int = 0
    limit: int
    returned: int
    has_more: bool = False
    next_offset: int | None = None
    next_cursor: str | None = None
    truncated: bool = False
    walked: int
    note: str | None = None


def git_log(
    root: Root,
    *,
    path: str,
    commit: str,
    offset: int,
    limit: int,
    cursor: str | None,
    cap: int,
    control: Control,
    budget: int | None = None,
) -> LogResult:
    op = "git_log"
    parts = root.authorize(path, perm="read", op=op)
    cur = Cursor.decode(cursor) if cursor else None
    budget = WALK_BUDGET if budget is None else budget
    notes: list[str] = []
    with opened(root, op) as git:
        start = revs.resolve(git, commit)
        trees = Trees(git, root.rules, control.check)
        heads = start_heads(git, cur, start.id)
        skip = cur.skip if cur is not None else offset
        base = cur.shown if cur is not None else offset
        # No more commits than could fit the output are walked for (one is ~90 characters).
        room = cap - RESERVE - 600
        want = max(1, min(limit, room // MIN_ITEM + 1))
        got = walk(
            git, trees, heads, path=parts, skip=skip, want=want, budget=budget,
            check=control.check,
        )
        assert git.store is not None
        items = [_item(read_commit(git.store, sha)) for sha in got.commits]
    if any(c.subject.endswith(CUT_MARK) for c in items):
        notes.append("a subject longer than shown is cut, marked [... cut]")
    fitted = fitting(items, room, json_len)
    if fitted == 0 and items:  # one commit always goes out, cut to fit: the cursor moves
        items[0] = _cut_to_fit(items[0], room)
        fitted = 1
    nxt = _next(got, items, fitted, base, skip, heads, cap, notes)
    items = items[:fitted]
    budget_hit = got.more is None and nxt is not None and len(items) < want
    if budget_hit:
        why = got.spent or f"walked {got.walked} commits (the per-call budget)"
        notes.append(f"{why}; found {len(items)}; older history remains: continue with "
                     "cursor=next_cursor")
    has_more = nxt is not None
    return LogResult(
        root=root.name, commit=start.id.decode(), path=join(parts), commits=items,
        offset=base, limit=limit, returned=len(items), has_more=has_more,
        # An offset moves only with what was shown: a page that only walked continues by cursor.
        next_offset=base + len(items) if has_more and items else None,
        next_cursor=nxt.encode() if nxt is not None else None,
        truncated=budget_hit, walked=got.walked, note="; ".join(notes) or None,
    )


def _next(got: WalkResult, items: list[LogCommit], fitted: int, base: int, skip: int,
          heads: tuple[bytes, ...], cap: int, notes: list[str]) -> Cursor | None:
    if fitted < len(items):
        # Continue from where the walk was after the last commit shown.
        notes.append(f"output limit reached (max_output_chars = {cap})")
        return Cursor(base + fitted, 0, got.after[fitted - 1])
    if got.more is False:
        return None
    left = skip - got.skipped  # of an offset: still to skip when the budget ran out
    return Cursor(base + len(items), left, got.queue) if got.queue else None


def _item(c: CommitInfo) -> LogCommit:
    return LogCommit(id=c.id.decode(), author=text(c.author, c.encoding),
                     date=when(c.author_time, c.author_timezone), subject=subject(c)[0])


def _cut_to_fit(item: LogCommit, room: int) -> LogCommit:
    """The commit with its subject, then its author, cut until it fits `room`."""
    over = json_len(item) + 1 - room
    if over > 0:
        keep = max(len(item.subject) - over - len(CUT_MARK), 0)
        item = item.model_copy(update={"subject": cut_to(item.subject, keep) + CUT_MARK})
    over = json_len(item) + 1 - room
    if over > 0:
        item = item.model_copy(update={"author": cut_to(item.author, len(item.author) - over)})
    return item
