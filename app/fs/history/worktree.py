"""git_diff against the working tree: the base commit's files and the files added to
the index since, read through the choke point and compared by blob id, as
`git diff BASE` does.

Each file is opened with `SecureRoot.open_file` (deny rules, in-root links,
`max_read_bytes`), never by a path taken from the repository; the index is
parsed from its bytes. A denied tracked path is never read, so never compared
(counted in the note); reading stops at the call's read budget.
"""

from __future__ import annotations

import hashlib
import io
import os

from dulwich.index import Stage, read_index

from app.errors import DeniedName, LoomError, NotFound
from app.fs import textio
from app.fs.history.gitdir import GitDir
from app.fs.history.store import read_small
from app.fs.history.trees import Change, Content, Hidden, Trees, valid_name
from app.fs.paging import Control
from app.security.resolve import SecureRoot

_WORKTREE = b"worktree:"  # the id of a side read from the working tree: the key, then the path
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
        return textio.pread_all(f.fd, root.max_read_bytes + 1)


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


def changes(
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
    work: dict[bytes, bytes] = {}
    found: list[Change] = []
    spent = 0
    unread = 0
    for entry in _candidates(git, trees, base_tree, parts, hidden):
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
                found.append(Change(entry.path, "deleted", entry.new_sha, None, entry.new_mode, 0))
            continue
        except (LoomError, OSError):
            if entry.new_sha is not None:
                found.append(
                    Change(entry.path, "type_changed", entry.new_sha, None, entry.new_mode, 0)
                )
            continue
        if data is None:
            unread += 1
            continue
        spent += len(data)
        change = _compare(entry, data, work, hidden)
        if change is not None:
            found.append(change)
    found.sort(key=lambda c: c.path.encode("utf-8"))
    if unread:
        notes.append(
            f"{unread} tracked files not compared (larger than max_read_bytes, or the call's "
            "read budget, max_search_bytes, was spent): narrow with path"
        )
    return found, _content(git, work, root.max_read_bytes)


def _candidates(
    git: GitDir, trees: Trees, base_tree: bytes, parts: tuple[str, ...], hidden: Hidden
) -> list[Change]:
    """The base commit's files under `parts`, then the index's files that it lacks (as added)."""
    tracked = trees.files(base_tree, parts, hidden)
    known = {c.path for c in tracked} | hidden.denied_paths
    staged = [
        Change(path, "added", None, None, 0, mode)
        for path, mode in _index_paths(git, trees, parts)
        if path not in known
    ]
    return tracked + staged


def _compare(entry: Change, data: bytes, work: dict[bytes, bytes], hidden: Hidden
             ) -> Change | None:
    """The change from `entry` (base side) to the working tree's `data`, kept in `work`."""
    sha = _git_blob_id(data)
    if sha == entry.new_sha:
        return None
    key = _WORKTREE + entry.path.encode()
    work[key] = data
    # Content that history knows at a denied path keeps its own id: withheld below.
    side = sha if sha in hidden.denied_blobs else key
    if entry.new_sha is None:
        return Change(entry.path, "added", None, side, 0, entry.new_mode)
    return Change(entry.path, "modified", entry.new_sha, side, entry.new_mode, entry.new_mode)


def _content(git: GitDir, work: dict[bytes, bytes], limit: int) -> Content:
    assert git.store is not None
    store = git.store

    def content(sha: bytes | None) -> bytes | None:
        if sha is None:
            return None
        if sha.startswith(_WORKTREE):
            return work[sha]
        return store.blob(sha, limit)

    return content
