"""git_diff against the working tree: the base commit's files and the files added to
the index since, read through the choke point and compared by blob id, as
`git diff BASE` does.

Each file is opened with `Root.open_file` (deny rules, in-root links,
`max_read_bytes`), never by a path taken from the repository. The base
commit's files come in path order from the tree walk and the index's entries
from `gitindex.py` (read in windows, none kept); the two are merged as they
come, so nothing is listed whole. A denied tracked path is never read, so
never compared (counted in the note). When the call's read budget
(`max_search_bytes`) is spent the page ends there and `next_cursor` continues
after the last file compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from app.errors import DeniedName, LoomError, NotFound
from app.fs.control import Control
from app.fs.history.changes import iter_changes
from app.fs.history.gitdir import GitDir
from app.fs.history.gitindex import IndexReader
from app.fs.history.listing import PageCursor
from app.fs.history.treeobj import is_dir
from app.fs.history.trees import Change, Hidden, Trees, valid_name
from app.fs.text import textio
from app.security import ops
from app.security.resolve import Root

_WORKTREE = b"worktree:"  # the id of a side read from the working tree: the key, then the path


def _read_worktree(root: Root, entry: Change) -> bytes | None:
    """A tracked file's bytes in the working tree (a link: its target), through the
    choke point; None when it is larger than the root's max_read_bytes."""
    if entry.new_mode == 0o120000:
        with root.open_parent(entry.path, op="git_diff", perm="read") as parent:
            return ops.readlink(parent.fd, parent.name).encode("utf-8", "surrogateescape")
    with root.open_file(entry.path, op="git_diff") as f:
        if f.st.st_size > root.max_read_bytes:
            return None
        return textio.pread_all(f.fd, root.max_read_bytes + 1)


def _staged(index: IndexReader, trees: Trees, parts: tuple[str, ...], after: bytes | None
            ) -> Iterator[tuple[bytes, str, int]]:
    """(path as bytes, path, mode) of the index's files at or below `parts` and after
    `after`, in path order, less denied and invalid names."""
    for name, mode, stage in index.entries():
        if stage or is_dir(mode) or (after is not None and name <= after):
            continue
        here = tuple(valid_name(n) or "" for n in name.split(b"/"))
        if "" in here or here[: len(parts)] != parts:
            continue
        if any(trees.denied(here[: i + 1]) for i in range(len(here))):
            continue
        yield name, "/".join(here), mode


def _git_blob_id(data: bytes) -> bytes:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().encode()


class Side:
    """The working-tree side of one git_diff page."""

    def __init__(self, git: GitDir, trees: Trees, root: Root, base_tree: bytes,
                 parts: tuple[str, ...], hidden: Hidden, read_budget: int,
                 control: Control) -> None:
        assert git.store is not None
        self.git, self.trees, self.root, self.base_tree = git, trees, root, base_tree
        self.parts, self.hidden, self.budget, self.control = parts, hidden, read_budget, control
        self.work: dict[bytes, bytes] = {}
        self.spent = self.unread = 0
        self.last: Change | None = None  # the last file compared
        self.stopped: str | None = None  # why the page ended before the files did
        self.index = IndexReader(git.fd)  # `damaged`: files added after the damage are unseen

    def changes(self, after: PageCursor | None) -> Iterator[Change]:
        """The base commit's files under `parts`, and files added to the index since,
        compared with the working tree, read through the choke point (`open_file`:
        deny rules, in-root links, `max_read_bytes`)."""
        for entry in self._candidates(after):
            self.control.check()
            if entry.new_mode == 0o160000:
                continue
            if self.spent > self.budget:
                self.stopped = ("the call's read budget (max_search_bytes) was spent: "
                                "continue with cursor=next_cursor, or narrow with path")
                return
            change = self._one(entry)
            self.last = entry
            if change is not None:
                yield change

    def _one(self, entry: Change) -> Change | None:
        try:
            data = _read_worktree(self.root, entry)
        except DeniedName:
            self.hidden.denied_paths.add(entry.path)
            return None
        except NotFound:
            if entry.new_sha is None:
                return None
            return Change(entry.path, "deleted", entry.new_sha, None, entry.new_mode, 0)
        except (LoomError, OSError):
            if entry.new_sha is None:
                return None
            return Change(entry.path, "type_changed", entry.new_sha, None, entry.new_mode, 0)
        if data is None:
            self.unread += 1
            return None
        self.spent += len(data)
        return _compare(entry, data, self.work, self.hidden)

    def _candidates(self, after: PageCursor | None) -> Iterator[Change]:
        """The base commit's files, and the index's files it lacks (as added), in path order."""
        top = self.trees.lookup(self.base_tree, self.parts)
        tracked = iter_changes(self.trees, None, top, self.parts, self.hidden,
                               after.parts if after else None, after.where if after else ())
        mark = "/".join(after.parts).encode("utf-8") if after is not None else None
        staged = _staged(self.index, self.trees, self.parts, mark)
        t, s = next(tracked, None), next(staged, None)
        while t is not None or s is not None:
            tkey = t.path.encode("utf-8") if t is not None else None
            if s is None or (tkey is not None and tkey <= s[0]):
                assert t is not None
                if s is not None and tkey == s[0]:
                    s = next(staged, None)
                yield t
                t = next(tracked, None)
            else:
                yield Change(s[1], "added", None, None, 0, s[2])
                s = next(staged, None)

    def content(self, sha: bytes | None) -> bytes | None:
        if sha is None:
            return None
        if sha.startswith(_WORKTREE):
            return self.work.pop(sha, b"")
        assert self.git.store is not None
        return self.git.store.blob(sha, self.root.max_read_bytes)


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
