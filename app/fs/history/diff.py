"""git_diff: the changes between two commits, or between a commit and the working tree
(`worktree.py`), as unified diffs paged by file and cut to the output cap.

Pages continue by `cursor` (the last path a page covered: the next one starts
after it without walking those before) or by `offset`. Denied paths are pruned
(counted in `note`) and a file whose content equals a denied file's in the
history is listed with its content withheld. A file whose object is missing,
corrupt or too large is listed with a note naming it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from app.errors import NotFound, TooLarge
from app.fs.control import Control
from app.fs.history import revs, textdiff, worktree
from app.fs.history.denied import denied_blobs
from app.fs.history.errors import CorruptObject, ObjectTooLarge
from app.fs.history.gitdir import GitDir, opened
from app.fs.history.listing import Compared, PageCursor, listing, skip
from app.fs.history.trees import Change, Content, Hidden, Trees
from app.fs.text import udiff
from app.fs.text.paging import RESERVE, cut_to, json_len
from app.security.paths import join
from app.security.resolve import Root

DIFF_CUT = "[... diff cut: longer than the output limit]"
COARSE_NOTE = "changed lines too many to align line by line are shown whole (- then +)"


class DiffFile(BaseModel):
    path: str
    change: str
    old_path: str | None = None
    added: int | None = None
    removed: int | None = None
    diff: str | None = None
    note: str | None = None


class DiffResult(BaseModel):
    root: str
    base: str
    target: str | None = None
    path: str
    files: list[DiffFile]
    offset: int = 0
    returned: int
    has_more: bool = False
    next_offset: int | None = None
    next_cursor: str | None = None
    truncated: bool = False
    hidden_denied: int = 0
    note: str | None = None


def git_diff(
    root: Root,
    *,
    base: str,
    target: str | None,
    path: str,
    offset: int,
    cap: int,
    read_budget: int,
    control: Control,
    cursor: str | None = None,
) -> DiffResult:
    op = "git_diff"
    parts = root.authorize(path, perm="read", op=op)
    hidden = Hidden()
    notes: list[str] = []
    with opened(root, op) as git:
        b = revs.resolve(git, base)
        trees = Trees(git, root.rules, control.check)
        if target is not None:
            t = revs.resolve(git, target)
            compared: Compared = (b.tree, t.tree, parts)
            after = PageCursor.decode(cursor, compared) if cursor is not None else None
            hidden.denied_blobs |= denied_blobs(git, trees, (b.id, t.id))
            changes: Iterator[Change] = listing(trees, b.tree, t.tree, parts, hidden, after)
            contents = _commit_side(git, root.max_read_bytes)
            target_id: str | None = t.id.decode()
            side = None
        else:
            compared = (None, b.tree, parts)
            after = PageCursor.decode(cursor, compared) if cursor is not None else None
            hidden.denied_blobs |= denied_blobs(git, trees, (b.id,))
            side = worktree.Side(git, trees, root, b.tree, parts, hidden, read_budget, control)
            changes, contents = side.changes(after), side.content
            target_id = None
        offset = after.shown if after is not None else offset
        if after is None and offset:
            changes = skip(changes, offset)
        files, last, has_more, truncated = _render(root, changes, contents, hidden, cap, control)
        if side is not None and side.unread:
            notes.append(f"{side.unread} tracked files not compared (larger than "
                         "max_read_bytes): read them in windows with read_text_file")
        if side is not None and side.index.damaged:
            notes.append(".git/index is damaged: files added to it after the damage are not "
                         "listed (git cannot read it either)")
        if side is not None and side.stopped is not None:
            notes.append(side.stopped)
            has_more, last = True, side.last or last
    nxt = None
    if has_more and last is not None:
        nxt = PageCursor(offset + len(files), tuple(last.path.split("/")), last.where)
        notes.append("more changed files: continue with cursor=next_cursor" + (
            f" (or offset={offset + len(files)})" if files else ""))
    # Against the working tree, denied tracked paths are never read, so never compared.
    what = "changed paths" if target is not None else "tracked paths (not compared)"
    notes[:0] = hidden.notes(what)
    return DiffResult(
        root=root.name, base=b.id.decode(), target=target_id, path=join(parts), files=files,
        offset=offset, returned=len(files), has_more=has_more,
        next_offset=offset + len(files) if has_more and files else None,
        next_cursor=nxt.encode(compared) if nxt is not None else None,
        truncated=truncated, hidden_denied=hidden.denied, note="; ".join(notes) or None,
    )


def _commit_side(git: GitDir, limit: int) -> Content:
    assert git.store is not None
    store = git.store

    def content(sha: bytes | None) -> bytes | None:
        return None if sha is None else store.blob(sha, limit)

    return content


def _render(
    root: Root,
    changes: Iterator[Change],
    content: Content,
    hidden: Hidden,
    cap: int,
    control: Control,
) -> tuple[list[DiffFile], Change | None, bool, bool]:
    """The files whose diffs fit the output (at least one: cut visibly when alone too long),
    the last of them, whether more are left, and whether one was cut."""
    room = cap - RESERVE - 600
    used = 0
    out: list[DiffFile] = []
    last = None
    pairs = udiff.Pairs()  # the call's alignment allowance, shared by its files
    for ch in changes:
        control.check()
        item = _file_diff(ch, content, hidden, root.max_read_bytes, pairs)
        size = json_len(item) + 1
        if used + size > room:
            if out:
                return out, last, True, False
            # The first file alone is too long: cut its diff, visibly.
            keep = max(room - json_len(item.model_copy(update={"diff": ""})) - len(DIFF_CUT) - 8, 0)
            item = item.model_copy(update={"diff": cut_to(item.diff or "", keep) + "\n" + DIFF_CUT})
            return [item], ch, next(changes, None) is not None, True
        used += size
        out.append(item)
        last = ch
    return out, last, False, False


def _file_diff(ch: Change, content: Content, hidden: Hidden, limit: int,
               pairs: udiff.Pairs) -> DiffFile:
    item = DiffFile(path=ch.path, change=ch.change, old_path=ch.old_path)
    if ch.old_sha in hidden.denied_blobs or ch.new_sha in hidden.denied_blobs:
        item.note = "content withheld: the same content as a denied file"
        return item
    if 0o160000 in (ch.old_mode, ch.new_mode):
        item.note = "submodule"
        return item
    if ch.change == "renamed" and ch.old_sha == ch.new_sha:
        item.added = item.removed = 0
        item.diff = ""
        return item
    try:
        old = content(ch.old_sha) or b""
        new = content(ch.new_sha) or b""
    except TooLarge:
        item.note = f"too large to diff (above max_read_bytes = {limit})"
        return item
    except (NotFound, CorruptObject, ObjectTooLarge) as exc:  # the object is named
        item.note = f"not diffed: {exc.message}"
        return item
    if textdiff.is_binary(old) or textdiff.is_binary(new):
        item.note = "binary files differ"
        return item
    coarse = pairs.coarse
    try:
        text = textdiff.unified(old, new, pairs)
    except ValueError:
        item.note = f"too many changed lines to diff (above {textdiff.MAX_DIFF_LINES})"
        return item
    if pairs.coarse > coarse:
        item.note = COARSE_NOTE
    lines = text.split("\n") if text else []
    item.added = sum(1 for x in lines if x.startswith("+"))
    item.removed = sum(1 for x in lines if x.startswith("-"))
    item.diff = text
    return item
