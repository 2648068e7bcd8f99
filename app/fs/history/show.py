"""git_show: one commit (its message and changed files, paged), or one file as it was
at that commit, read like read_text_file.

The changed files are a page of `changes.listing`, continued by `cursor` (the
last path shown: the next page starts after it without walking the ones
before) or by `offset`. The message is read up to `MESSAGE_READ` bytes (the rest
is noted, never inflated into memory). A file's content is read up to the
root's `max_read_bytes` (all a window may show) and refused when it is the same
as a file's at a denied path anywhere in the history (`denied.py`); the blob
is served from memory, never from a root.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from app.errors import DeniedName, NotARegularFile, NotFound
from app.fs.control import Control
from app.fs.history import revs
from app.fs.history.commits import first_parent_tree, subject, text, when
from app.fs.history.denied import denied_blobs
from app.fs.history.gitdir import GitDir, opened
from app.fs.history.listing import PageCursor, listing, skip
from app.fs.history.objects import CommitInfo
from app.fs.history.treeobj import is_dir
from app.fs.history.trees import Change, Hidden, Trees
from app.fs.reading import read as read_mod
from app.fs.text.paging import RESERVE, cut_to, json_len
from app.security.paths import join
from app.security.resolve import OpenedFile, Root

MESSAGE_READ = 128 * 1024  # bytes of a commit read for its message


class FileChange(BaseModel):
    path: str
    change: str
    old_path: str | None = None


class ShowResult(BaseModel):
    root: str
    id: str
    author: str
    committer: str
    date: str
    message: str
    parents: list[str]
    files: list[FileChange]
    offset: int = 0
    returned: int
    has_more: bool = False
    next_offset: int | None = None
    next_cursor: str | None = None
    hidden_denied: int = 0
    note: str | None = None
    file: read_mod.ReadTextResult | None = None


def git_show(
    root: Root,
    *,
    commit: str,
    path: str | None,
    start_line: int,
    end_line: int,
    offset: int,
    cap: int,
    control: Control,
    cursor: str | None = None,
) -> ShowResult:
    op = "git_show"
    parts = root.authorize(path, perm="read", op=op) if path is not None else None
    if parts is not None and not parts:
        raise NotARegularFile("not a regular file: the root is a directory (omit path)")
    with opened(root, op) as git:
        c = revs.resolve(git, commit, MESSAGE_READ if parts is None else None)
        trees = Trees(git, root.rules, control.check)
        meta: dict[str, Any] = dict(
            root=root.name, id=c.id.decode(), author=text(c.author, c.encoding),
            committer=text(c.committer, c.encoding),
            date=when(c.author_time, c.author_timezone),
            parents=[p.decode() for p in c.parents],
        )
        if parts is not None:
            return _show_file(git, trees, root, c, parts, meta, start_line, end_line, cap)
        hidden = Hidden()
        compared = (first_parent_tree(git, c), c.tree, ())
        after = PageCursor.decode(cursor, compared) if cursor is not None else None
        offset = after.shown if after is not None else offset
        changes = listing(trees, compared[0], c.tree, (), hidden, after)
        if after is None and offset:
            changes = skip(changes, offset)
        message, notes = _message(c, cap)
        room = cap - RESERVE - 800 - json_len(message) - sum(len(p) + 3 for p in meta["parents"])
        page, last, has_more = _page(changes, room)
    notes[:0] = hidden.notes()
    nxt = None
    if has_more and last is not None:
        nxt = PageCursor(offset + len(page), tuple(last.path.split("/")), last.where)
        notes.append("more changed files: continue with cursor=next_cursor "
                     f"(or offset={offset + len(page)})")
    if len(c.parents) > 1:
        notes.append("a merge: files are its changes against its first parent")
    return ShowResult(
        **meta, message=message, files=page, offset=offset, returned=len(page),
        has_more=has_more, next_offset=offset + len(page) if has_more else None,
        next_cursor=nxt.encode(compared) if nxt is not None else None,
        hidden_denied=hidden.denied, note="; ".join(notes) or None,
    )


def _message(c: CommitInfo, cap: int) -> tuple[str, list[str]]:
    whole = text(c.message, c.encoding)
    notes = []
    half = (cap - RESERVE - 800) // 2
    message = cut_to(whole, half) if len(whole) > half else whole
    if len(message) < len(whole) or c.message_cut:
        message += "\n[... message cut]"
        notes.append("the message was cut to fit the output limit" + (
            f" (a message is read up to its first {MESSAGE_READ // 1024} KiB)"
            if c.message_cut else ""))
    return message, notes


def _page(changes: Iterator[Change], room: int
          ) -> tuple[list[FileChange], Change | None, bool]:
    """The changes that fit `room` (at least one, so the cursor always moves), the last
    of them, and whether any is left."""
    page: list[FileChange] = []
    last = None
    used = 0
    for x in changes:
        item = FileChange(path=x.path, change=x.change, old_path=x.old_path)
        size = json_len(item) + 1
        if page and used + size > room:
            return page, last, True
        page.append(item)
        last = x
        used += size
    return page, last, False


def _show_file(
    git: GitDir,
    trees: Trees,
    root: Root,
    c: CommitInfo,
    parts: tuple[str, ...],
    meta: dict[str, Any],
    start_line: int,
    end_line: int,
    cap: int,
) -> ShowResult:
    rel = join(parts)
    entry = trees.lookup(c.tree, parts)
    short = c.id.decode()[:12]
    if entry is None:
        raise NotFound(f"no such file at commit {short}: '{rel}'")
    mode, sha = entry
    if is_dir(mode):
        raise NotARegularFile(f"not a regular file: '{rel}' is a directory at commit {short}")
    if mode == 0o160000:
        raise NotARegularFile(f"not a regular file: '{rel}' is a submodule at commit {short}")
    if sha in denied_blobs(git, trees, (c.id,)):
        err = DeniedName(f"{rel}: same content as a file at a denied path in this history")
        root.record("DENY", rel, "git_show", err)
        raise err
    assert git.store is not None
    data = git.store.blob_start(sha, root.max_read_bytes)
    with _memfile(data) as fd:
        blob_file = OpenedFile(fd, rel, rel, os.fstat(fd))
        try:
            shown = read_mod.read_text(
                blob_file, root, start=start_line, end=end_line, tail=None, cap=cap - 600
            )
        finally:
            blob_file.fd = -1  # closed by _memfile
    root.record("ALLOW", rel, "git_show")
    return ShowResult(
        **meta, message=subject(c)[0], files=[], offset=0, returned=0,
        has_more=False, next_offset=None, hidden_denied=0, note=None, file=shown,
    )


@contextlib.contextmanager
def _memfile(data: bytes) -> Iterator[int]:
    """A file descriptor holding `data`, in memory where the system allows (never in a root)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("loomfs-blob", getattr(os, "MFD_CLOEXEC", 0))
        try:
            view = memoryview(data)
            written = 0
            while written < len(data):
                written += os.write(fd, view[written:])
            yield fd
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        yield f.fileno()
