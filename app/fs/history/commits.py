"""A commit as the history tools show it: its text decoded, its date, its subject line."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dulwich.objects import Commit

from app.fs.history.gitdir import GitDir


def text(raw: bytes, encoding: bytes | None = None) -> str:
    """A commit's bytes in the encoding it names (UTF-8 when none, or unknown)."""
    try:
        return raw.decode((encoding or b"utf-8").decode("ascii", "replace"), "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")


def when(seconds: int, offset: int) -> str:
    tz = timezone(timedelta(seconds=offset))
    return datetime.fromtimestamp(seconds, tz).isoformat()


def subject(c: Commit) -> str:
    first = text(c.message, c.encoding).strip("\n").split("\n\n", 1)[0]
    return " ".join(line.strip() for line in first.splitlines()).strip()


def first_parent_tree(git: GitDir, c: Commit) -> bytes | None:
    """What `git show` compares a commit with (None: a root commit, or a shallow boundary)."""
    if not c.parents or c.id in git.shallow:
        return None
    assert git.store is not None
    try:
        parent = git.store.object(c.parents[0])
    except KeyError:
        return None
    return parent.tree if isinstance(parent, Commit) else None
