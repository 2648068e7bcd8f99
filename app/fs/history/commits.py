"""A commit as the history tools show it: its text decoded, its date, its subject line."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from app.fs.history.errors import ObjectMissing
from app.fs.history.gitdir import GitDir
from app.fs.history.objects import CommitInfo, read_commit

SUBJECT_MAX = 1000  # characters of a subject line shown; a longer one is cut, visibly
CUT_MARK = " [... cut]"


def text(raw: bytes, encoding: bytes | None = None) -> str:
    """A commit's bytes in the encoding it names (UTF-8 when none, or unknown)."""
    try:
        return raw.decode((encoding or b"utf-8").decode("ascii", "replace"), "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")


def when(seconds: int, offset: int) -> str:
    """ISO 8601 in the commit's own zone; a date or zone no calendar holds is shown as UTC
    at the nearest date one does (a crafted commit may say anything)."""
    if not -86_400 < offset < 86_400:
        offset = 0
    tz = timezone(timedelta(seconds=offset))
    seconds = min(max(seconds, -62_135_596_800 + 86_400), 253_402_300_799 - 86_400)
    return datetime.fromtimestamp(seconds, tz).isoformat()


def subject(c: CommitInfo) -> tuple[str, bool]:
    """The subject line (git's `%s`: the first paragraph on one line), and whether it was cut
    (at SUBJECT_MAX characters, or where the read of the message stopped)."""
    message = text(c.message, c.encoding).strip("\n")
    first, sep, _ = message.partition("\n\n")
    line = " ".join(part.strip() for part in first.splitlines()).strip()
    cut = c.message_cut and not sep
    if len(line) > SUBJECT_MAX:
        line, cut = line[:SUBJECT_MAX], True
    return (line + CUT_MARK if cut else line), cut


def first_parent_tree(git: GitDir, c: CommitInfo) -> bytes | None:
    """What `git show` compares a commit with (None: a root commit, or a shallow boundary)."""
    if not c.parents or c.id in git.shallow:
        return None
    assert git.store is not None
    try:
        return read_commit(git.store, c.parents[0]).tree
    except ObjectMissing:
        return None
