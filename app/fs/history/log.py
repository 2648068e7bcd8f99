"""git_log: a root's history, newest first, optionally limited to a path.

Pages by `offset` or by `cursor` (the walk's queue, `walk.Cursor`), bounded by
`WALK_BUDGET` commits walked per call and by the output cap. Deny rules apply
to the path argument; commit messages and author names are shown as recorded.
"""

from __future__ import annotations

from pydantic import BaseModel

from app.fs.history import revs
from app.fs.history.commits import subject, text, when
from app.fs.history.gitdir import opened
from app.fs.history.trees import Trees
from app.fs.history.walk import Cursor, start_heads, walk
from app.fs.paging import RESERVE, Control, fitting, json_len
from app.security.paths import join
from app.security.resolve import SecureRoot

# Commits one git_log call may walk (a path-limited page over a long history
# stops here and hands back a cursor); about half a second with dulwich.
WALK_BUDGET = 5000


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
    offset: int
    limit: int
    returned: int
    has_more: bool
    next_offset: int | None
    next_cursor: str | None
    truncated: bool
    walked: int
    note: str | None = None


def git_log(
    root: SecureRoot,
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
    with opened(root, op) as git:
        start = revs.resolve(git, commit)
        trees = Trees(git, root.rules, control.check)
        heads = start_heads(git, cur, start.id)
        skip = cur.skip if cur is not None else offset
        base = cur.shown if cur is not None else offset
        got = walk(
            git, trees, heads, path=parts, skip=skip, want=limit, budget=budget,
            check=control.check,
        )
    items = [
        LogCommit(
            id=c.id.decode(),
            author=text(c.author, c.encoding),
            date=when(c.author_time, c.author_timezone),
            subject=subject(c),
        )
        for c in got.commits
    ]
    # Fit the output cap, commit by commit.
    fitted = fitting(items, cap - RESERVE - 600, json_len)
    cut_by_output = fitted < len(items)
    notes = []
    if cut_by_output:
        items = items[:fitted]
        # Continue from this call's own starting point, skipping what was shown.
        nxt: Cursor | None = Cursor(base + fitted, skip + fitted, heads)
        notes.append(f"output limit reached (max_output_chars = {cap})")
    elif got.more is False:
        nxt = None
    else:
        nxt = Cursor(base + len(items), 0, got.queue) if got.queue else None
    budget_hit = got.more is None and nxt is not None and len(items) < limit
    if budget_hit:
        notes.append(
            f"walked {got.walked} commits (the per-call budget) and found {len(items)}; "
            "older history remains: continue with cursor=next_cursor"
        )
    has_more = nxt is not None
    return LogResult(
        root=root.name, commit=start.id.decode(), path=join(parts), commits=items,
        offset=base, limit=limit, returned=len(items), has_more=has_more,
        next_offset=base + len(items) if has_more else None,
        next_cursor=nxt.encode() if nxt is not None else None,
        truncated=budget_hit, walked=got.walked, note="; ".join(notes) or None,
    )
