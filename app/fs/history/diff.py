"""git_diff: the changes between two commits, or between a commit and the working tree
(`worktree.py`), as unified diffs paged by file and cut to the output cap.

Denied paths are pruned (counted in `note`) and a file whose content equals a
denied file's in the history is listed with its content withheld.
"""

from __future__ import annotations

from pydantic import BaseModel

from app.errors import TooLarge
from app.fs.history import revs, textdiff, worktree
from app.fs.history.denied import denied_blobs
from app.fs.history.gitdir import GitDir, opened
from app.fs.history.trees import Change, Content, Hidden, Trees
from app.fs.paging import RESERVE, Control, cut_to, json_len
from app.security.paths import join
from app.security.resolve import SecureRoot

DIFF_CUT = "[... diff cut: longer than the output limit]"


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
    target: str | None
    path: str
    files: list[DiffFile]
    offset: int
    returned: int
    has_more: bool
    next_offset: int | None
    truncated: bool
    hidden_denied: int
    note: str | None = None


def git_diff(
    root: SecureRoot,
    *,
    base: str,
    target: str | None,
    path: str,
    offset: int,
    cap: int,
    read_budget: int,
    control: Control,
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
            hidden.denied_blobs |= denied_blobs(git, trees, (b.id, t.id))
            changes = trees.changes(b.tree, t.tree, parts, hidden)
            contents = _commit_side(git, root.max_read_bytes)
            target_id: str | None = t.id.decode()
        else:
            hidden.denied_blobs |= denied_blobs(git, trees, (b.id,))
            changes, contents = worktree.changes(git, trees, root, b.tree, parts, hidden,
                                                 read_budget, notes, control)
            target_id = None
        files, used_all, truncated = _render(git, root, changes[offset:], contents, hidden, cap,
                                             control)
    has_more = offset + len(files) < len(changes)
    if has_more:
        notes.append(f"more changed files: continue with offset={offset + len(files)}")
    # Against the working tree, denied tracked paths are never read, so never compared.
    what = "changed paths" if target is not None else "tracked paths (not compared)"
    notes[:0] = hidden.notes(what)
    return DiffResult(
        root=root.name, base=b.id.decode(), target=target_id, path=join(parts), files=files,
        offset=offset, returned=len(files), has_more=has_more,
        next_offset=offset + len(files) if has_more else None,
        truncated=truncated or not used_all, hidden_denied=hidden.denied,
        note="; ".join(notes) or None,
    )


def _commit_side(git: GitDir, limit: int) -> Content:
    assert git.store is not None
    store = git.store

    def content(sha: bytes | None) -> bytes | None:
        return None if sha is None else store.blob(sha, limit)

    return content


def _render(
    git: GitDir,
    root: SecureRoot,
    changes: list[Change],
    content: Content,
    hidden: Hidden,
    cap: int,
    control: Control,
) -> tuple[list[DiffFile], bool, bool]:
    room = cap - RESERVE - 600
    used = 0
    out: list[DiffFile] = []
    truncated = False
    for ch in changes:
        control.check()
        item = _file_diff(ch, content, hidden, root.max_read_bytes)
        size = json_len(item) + 1
        if used + size > room:
            if out:
                return out, True, truncated
            # The first file alone is too long: cut its diff, visibly.
            keep = max(room - json_len(item.model_copy(update={"diff": ""})) - len(DIFF_CUT) - 8, 0)
            item = item.model_copy(update={"diff": cut_to(item.diff or "", keep) + "\n" + DIFF_CUT})
            out.append(item)
            return out, True, True
        used += size
        out.append(item)
    return out, True, truncated


def _file_diff(ch: Change, content: Content, hidden: Hidden, limit: int) -> DiffFile:
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
    if textdiff.is_binary(old) or textdiff.is_binary(new):
        item.note = "binary files differ"
        return item
    try:
        text = textdiff.unified(old, new)
    except ValueError:
        item.note = f"too many changed lines to diff (above {textdiff.MAX_DIFF_LINES})"
        return item
    lines = text.split("\n") if text else []
    item.added = sum(1 for x in lines if x.startswith("+"))
    item.removed = sum(1 for x in lines if x.startswith("-"))
    item.diff = text
    return item
