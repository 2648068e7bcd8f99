"""git_log, git_show and git_diff on one root: results built from `store`,
`revs`, `walk` and `trees`, bounded by pages, a commit budget and the output cap.

Deny rules apply to every path at every commit: a denied path is refused as
an argument, pruned from file lists and diffs (counted in `note`), and a file
whose content equals a denied file's in the same comparison has its content
withheld. Commit messages and author names are shown as recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from dulwich.index import Stage, read_index
from dulwich.objects import Blob, Commit
from pydantic import BaseModel

from app.errors import DeniedName, LoomError, NotARegularFile, NotFound, TooLarge
from app.fs import read as read_mod
from app.fs.history import revs, textdiff
from app.fs.history.denied import denied_blobs
from app.fs.history.gitdir import GitDir
from app.fs.history.store import read_small
from app.fs.history.trees import Change, Hidden, Trees, is_tree, valid_name
from app.fs.history.walk import Cursor, start_heads, walk
from app.fs.paging import RESERVE, Control, cut_to, dumps, json_len
from app.security.paths import join, split_request
from app.security.resolve import OpenedFile, SecureRoot

# Commits one git_log call may walk (a path-limited page over a long history
# stops here and hands back a cursor); about half a second with dulwich.
WALK_BUDGET = 5000
MAX_BLOB = 64 * 1024 * 1024  # a blob larger than this is never loaded
DIFF_CUT = "[... diff cut: longer than the output limit]"

Content = Callable[[bytes | None], bytes | None]  # a side's bytes by blob id (None: absent)


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
    offset: int
    returned: int
    has_more: bool
    next_offset: int | None
    hidden_denied: int
    note: str | None = None
    file: read_mod.ReadTextResult | None = None


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


# -- helpers -----------------------------------------------------------------


@contextlib.contextmanager
def _opened(root: SecureRoot, op: str) -> Iterator[GitDir]:
    root.authorize("", perm="read", op=op)
    git = GitDir(root, op=op)
    try:
        yield git
    finally:
        git.close()


def _request(root: SecureRoot, path: str, op: str) -> tuple[str, ...]:
    """A path argument: syntax, confinement and deny, as for any other tool."""
    return root.authorize(path, perm="read", op=op)


def _text(raw: bytes, encoding: bytes | None = None) -> str:
    try:
        return raw.decode((encoding or b"utf-8").decode("ascii", "replace"), "replace")
    except LookupError:
        return raw.decode("utf-8", "replace")


def _when(seconds: int, offset: int) -> str:
    tz = timezone(timedelta(seconds=offset))
    return datetime.fromtimestamp(seconds, tz).isoformat()


def _subject(c: Commit) -> str:
    first = _text(c.message, c.encoding).strip("\n").split("\n\n", 1)[0]
    return " ".join(line.strip() for line in first.splitlines()).strip()


def _blob(git: GitDir, sha: bytes, limit: int | None = None) -> bytes:
    assert git.store is not None
    limit = MAX_BLOB if limit is None else limit
    size = git.store.size(sha)
    if size is not None and size > limit:
        raise TooLarge(f"the file is {size} bytes, above {limit}")
    obj = git.store.object(sha)
    if not isinstance(obj, Blob):
        raise LoomError(f"object {sha.decode()[:12]} is not a file")
    data = obj.as_raw_string()
    if len(data) > limit:
        raise TooLarge(f"the file is {len(data)} bytes, above {limit}")
    return data


def _hidden_note(hidden: Hidden, what: str = "changed paths") -> list[str]:
    notes = []
    if hidden.denied:
        notes.append(f"{hidden.denied} {what} hidden by deny rules")
    if hidden.invalid:
        notes.append(f"{hidden.invalid} entries with invalid names skipped")
    return notes


def _first_parent_tree(git: GitDir, c: Commit) -> bytes | None:
    if not c.parents or c.id in git.shallow:
        return None
    assert git.store is not None
    try:
        parent = git.store.object(c.parents[0])
    except KeyError:
        return None
    return parent.tree if isinstance(parent, Commit) else None


# -- git_log -----------------------------------------------------------------


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
    parts = _request(root, path, op)
    cur = Cursor.decode(cursor) if cursor else None
    budget = WALK_BUDGET if budget is None else budget
    with _opened(root, op) as git:
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
            author=_text(c.author, c.encoding),
            date=_when(c.author_time, c.author_timezone),
            subject=_subject(c),
        )
        for c in got.commits
    ]
    # Fit the output cap, commit by commit.
    room = cap - RESERVE - 600
    used = 0
    fitted = 0
    for item in items:
        used += json_len(item) + 1
        if used > room:
            break
        fitted += 1
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


# -- git_show ----------------------------------------------------------------


def git_show(
    root: SecureRoot,
    *,
    commit: str,
    path: str | None,
    start_line: int,
    end_line: int,
    offset: int,
    cap: int,
    control: Control,
) -> ShowResult:
    op = "git_show"
    parts = _request(root, path, op) if path is not None else None
    if parts is not None and not parts:
        raise NotARegularFile("not a regular file: the root is a directory (omit path)")
    with _opened(root, op) as git:
        c = revs.resolve(git, commit)
        trees = Trees(git, root.rules, control.check)
        hidden = Hidden()
        changes = trees.changes(_first_parent_tree(git, c), c.tree, (), hidden)
        meta: dict[str, Any] = dict(
            root=root.name, id=c.id.decode(), author=_text(c.author, c.encoding),
            committer=_text(c.committer, c.encoding),
            date=_when(c.author_time, c.author_timezone),
            parents=[p.decode() for p in c.parents],
        )
        if parts is not None:
            return _show_file(git, trees, root, c, parts, hidden, meta, start_line, end_line, cap)
    message = _text(c.message, c.encoding)
    files = [FileChange(path=x.path, change=x.change, old_path=x.old_path) for x in changes]
    notes = _hidden_note(hidden)
    room = cap - RESERVE - 800
    msg_cut = False
    if len(message) > room // 2:
        message = cut_to(message, room // 2) + "\n[... message cut]"
        msg_cut = True
    used = json_len(message) + sum(len(p) + 3 for p in meta["parents"])
    page: list[FileChange] = []
    for f in files[offset:]:
        used += json_len(f) + 1
        if used > room:
            break
        page.append(f)
    has_more = offset + len(page) < len(files)
    if has_more:
        notes.append(
            f"{len(files) - offset - len(page)} more changed files: "
            f"continue with offset={offset + len(page)}"
        )
    if msg_cut:
        notes.append("the message was cut to fit the output limit")
    if c.parents and len(c.parents) > 1:
        notes.append("a merge: files are its changes against its first parent")
    return ShowResult(
        **meta, message=message, files=page, offset=offset, returned=len(page),
        has_more=has_more, next_offset=offset + len(page) if has_more else None,
        hidden_denied=hidden.denied, note="; ".join(notes) or None,
    )


def _show_file(
    git: GitDir,
    trees: Trees,
    root: SecureRoot,
    c: Commit,
    parts: tuple[str, ...],
    hidden: Hidden,
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
    if is_tree(mode):
        raise NotARegularFile(f"not a regular file: '{rel}' is a directory at commit {short}")
    if mode == 0o160000:
        raise NotARegularFile(f"not a regular file: '{rel}' is a submodule at commit {short}")
    if sha in hidden.denied_blobs or sha in denied_blobs(git, trees, (c.id,)):
        err = DeniedName(f"{rel}: same content as a file at a denied path in this history")
        root.record("DENY", rel, "git_show", err)
        raise err
    data = _blob(git, sha)
    with _memfile(data) as fd:
        opened = OpenedFile(fd, rel, rel, os.fstat(fd))
        try:
            text = read_mod.read_text(
                opened, root, start=start_line, end=end_line, tail=None, cap=cap - 600
            )
        finally:
            opened.fd = -1  # closed by _memfile
    root.record("ALLOW", rel, "git_show")
    return ShowResult(
        **meta, message=_subject(c), files=[], offset=0, returned=0,
        has_more=False, next_offset=None, hidden_denied=0, note=None, file=text,
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


# -- git_diff ----------------------------------------------------------------


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
    parts = _request(root, path, op)
    hidden = Hidden()
    notes: list[str] = []
    with _opened(root, op) as git:
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
            changes, contents = _worktree_changes(git, trees, root, b.tree, parts, hidden,
                                                  read_budget, notes, control)
            target_id = None
        files, used_all, truncated = _render(git, root, changes[offset:], contents, hidden, cap,
                                             control)
    has_more = offset + len(files) < len(changes)
    if has_more:
        notes.append(f"more changed files: continue with offset={offset + len(files)}")
    # Against the working tree, denied tracked paths are never read, so never compared.
    what = "changed paths" if target is not None else "tracked paths (not compared)"
    notes[:0] = _hidden_note(hidden, what)
    return DiffResult(
        root=root.name, base=b.id.decode(), target=target_id, path=join(parts), files=files,
        offset=offset, returned=len(files), has_more=has_more,
        next_offset=offset + len(files) if has_more else None,
        truncated=truncated or not used_all, hidden_denied=hidden.denied,
        note="; ".join(notes) or None,
    )


def _commit_side(git: GitDir, limit: int) -> Content:
    def content(sha: bytes | None) -> bytes | None:
        return None if sha is None else _blob(git, sha, limit)

    return content


_WORKTREE = b"worktree:"
MAX_INDEX = 64 * 1024 * 1024


def _read_worktree(root: SecureRoot, entry: Change) -> bytes | None:
    """A tracked file's bytes in the working tree (a link: its target), through the
    choke point; None when it is larger than the root's max_read_bytes."""
    if entry.new_mode == 0o120000:
        with root.open_parent(entry.path, op="git_diff", perm="read") as parent:
            return os.readlink(parent.name, dir_fd=parent.fd).encode("utf-8", "surrogateescape")
    with root.open_file(entry.path, op="git_diff") as f:
        if f.st.st_size > root.max_read_bytes:
            return None
        return read_mod.textio.pread_all(f.fd, root.max_read_bytes + 1)


def _index_paths(git: GitDir, trees: Trees, parts: tuple[str, ...]) -> list[tuple[str, int]]:
    """(path, mode) of the index's entries at or below `parts`, less denied and
    invalid names; the index is parsed from its bytes (never by path)."""
    raw = read_small(git.fd, "index", MAX_INDEX)
    if not raw:
        return []
    try:
        entries = list(read_index(io.BytesIO(raw)))
    except Exception:  # a damaged or unknown index format: compare the commit's files only
        return []
    out: list[tuple[str, int]] = []
    for e in entries:
        if e.stage() != Stage.NORMAL:
            continue
        names = [valid_name(n) for n in e.name.split(b"/")]
        if any(n is None for n in names):
            continue
        here = tuple(n for n in names if n is not None)
        if here[: len(parts)] != parts:
            continue
        if any(trees.denied(here[: i + 1]) for i in range(len(here))):
            continue
        out.append(("/".join(here), e.mode))
    return out


def _git_blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().encode()


def _worktree_changes(
    git: GitDir,
    trees: Trees,
    root: SecureRoot,
    base_tree: bytes,
    parts: tuple[str, ...],
    hidden: Hidden,
    read_budget: int,
    notes: list[str],
    control: Control,
) -> tuple[list[Change], Content]:
    """The base commit's files under `parts`, and files added to the index since,
    compared with the working tree, read through the choke point (`open_file`:
    deny rules, in-root links, `max_read_bytes`), as `git diff BASE` does."""
    tracked = trees.files(base_tree, parts, hidden)
    known = {c.path for c in tracked} | hidden.denied_paths
    staged = [
        Change(path, "added", None, None, 0, mode)
        for path, mode in _index_paths(git, trees, parts)
        if path not in known
    ]
    work: dict[bytes, bytes] = {}
    changes: list[Change] = []
    spent = 0
    unread = 0
    for entry in tracked + staged:
        control.check()
        if entry.new_mode == 0o160000:
            continue
        if spent > read_budget:
            unread += 1
            continue
        try:
            data = _read_worktree(root, entry)
        except DeniedName:
            hidden.denied_paths.add(entry.path)
            continue
        except NotFound:
            if entry.new_sha is not None:
                changes.append(
                    Change(entry.path, "deleted", entry.new_sha, None, entry.new_mode, 0)
                )
            continue
        except (LoomError, OSError):
            if entry.new_sha is not None:
                changes.append(
                    Change(entry.path, "type_changed", entry.new_sha, None, entry.new_mode, 0)
                )
            continue
        if data is None:
            unread += 1
            continue
        spent += len(data)
        sha = _git_blob_id(data)
        if sha != entry.new_sha:
            key = _WORKTREE + entry.path.encode()
            work[key] = data
            # Content that history knows at a denied path keeps its own id: withheld below.
            side = sha if sha in hidden.denied_blobs else key
            if entry.new_sha is None:
                changes.append(Change(entry.path, "added", None, side, 0, entry.new_mode))
            else:
                changes.append(Change(entry.path, "modified", entry.new_sha, side,
                                      entry.new_mode, entry.new_mode))
    changes.sort(key=lambda c: c.path.encode("utf-8"))
    if unread:
        notes.append(
            f"{unread} tracked files not compared (larger than max_read_bytes, or the call's "
            "read budget, max_search_bytes, was spent): narrow with path"
        )

    def content(sha: bytes | None) -> bytes | None:
        if sha is None:
            return None
        if sha.startswith(_WORKTREE):
            return work[sha]
        return _blob(git, sha, root.max_read_bytes)

    return changes, content


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


__all__ = ["DiffResult", "LogResult", "ShowResult", "dumps", "git_diff", "git_log", "git_show",
           "split_request"]
