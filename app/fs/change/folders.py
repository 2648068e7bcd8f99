"""Folders a change makes on its way (`mkdir -p`), removed again when the change fails.

`write_file d/e/f/g.txt` and `create_directory d/e/f` make the missing folders
through the choke point (`SecureRoot.open_parent`: permission, confinement and
deny on each resolved path). Which folders this call made is known without
trusting a path: a quick look (no link followed, nothing audited) finds the
deepest folder that is plainly there; when the next one is missing, the choke
point makes the rest in one pass and every folder below the last one there is
recorded as made (it was missing a moment before). When a link or an
unreadable folder is on the way, each level is made on its own and counts as
made only if its own `mkdir` succeeded.

When the change then fails (a full disk, a name taken meanwhile, a refusal),
the folders it made are removed deepest first, each only while it is empty
(`rmdir`) and still the folder that was made: the walk goes up through `..`
from the deepest one's handle and compares each folder's device and inode with
what was made, so a folder moved or replaced meanwhile stops the removal
rather than redirects it. One descriptor is held, whatever the depth. Limit: a
folder another writer made on the same new path in the same instant may be
taken for ours and, if still empty, removed (that writer's own write then
fails and says so; nothing written is lost).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from app.errors import os_error
from app.security.paths import join
from app.security.resolve import DIR_FLAGS, Parent, SecureRoot

Ident = tuple[int, int]


def _ident(st: os.stat_result) -> Ident:
    return (st.st_dev, st.st_ino)


@dataclass
class Made:
    """The folders one call made, top first, and a handle on the deepest of them."""

    names: list[str] = field(default_factory=list)
    ids: list[Ident] = field(default_factory=list)  # each folder made
    parents: list[Ident] = field(default_factory=list)  # the folder holding each
    fd: int = -1  # the deepest folder made

    def add(self, parent: Parent) -> None:
        fd = os.open(parent.name, DIR_FLAGS, dir_fd=parent.fd)
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = fd
        self.names.append(parent.name)
        self.ids.append(_ident(os.fstat(fd)))
        self.parents.append(_ident(os.fstat(parent.fd)))

    def record(self, root: SecureRoot, folders: tuple[str, ...], there: int) -> None:
        """Record as made every folder that now exists below the first `there` levels of
        `folders`, which were missing when looked at; best effort, never raises."""
        try:
            fd = root.open_subdir(folders[:there])
        except OSError:
            return
        try:
            for name in folders[there:]:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
                try:
                    pair = _ident(os.fstat(fd)), _ident(os.fstat(child))
                except OSError:
                    os.close(child)
                    raise
                self.names.append(name)
                self.parents.append(pair[0])
                self.ids.append(pair[1])
                os.close(fd)
                fd = child
        except OSError:
            pass
        if self.names:
            self.fd, fd = fd, -1
        if fd >= 0:
            os.close(fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        """rmdir each folder made, deepest first, while it is empty and still itself."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            for i in range(len(self.names) - 1, -1, -1):
                if _ident(os.fstat(fd)) != self.ids[i]:
                    return  # not the folder made below (another call made the one between)
                up = os.open("..", DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = up
                if _ident(os.fstat(fd)) != self.parents[i]:
                    return  # moved elsewhere meanwhile: not ours to follow
                st = os.stat(self.names[i], dir_fd=fd, follow_symlinks=False)
                if _ident(st) != self.ids[i]:
                    return
                os.rmdir(self.names[i], dir_fd=fd)
        except OSError:
            return  # not empty any more, or gone: what is left stays
        finally:
            os.close(fd)


@contextlib.contextmanager
def undone_on_failure(made: Made) -> Iterator[None]:
    """Remove the folders made if the block raises; keep them if it completes."""
    try:
        yield
    except BaseException:
        made.remove()
        raise
    finally:
        made.close()


THERE, MISSING, UNKNOWN = "there", "missing", "unknown"


def _probe(root: SecureRoot, folder: tuple[str, ...]) -> str:
    """Whether a folder is plainly there (no link on the way), certainly missing, or neither
    (a link, a file, no permission). A hint, neither audited nor followed: where it says
    anything but THERE, the choke point decides."""
    try:
        os.close(root.open_subdir(folder))
    except FileNotFoundError:
        return MISSING
    except OSError:
        return UNKNOWN
    return THERE


def _deepest_there(root: SecureRoot, folders: tuple[str, ...]) -> int:
    """How many leading levels of `folders` (not all of them) are plainly there: a binary
    search, as a level is plainly there only if every level above it is."""
    lo, hi = 0, len(folders)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _probe(root, folders[:mid]) == THERE:
            lo = mid
        else:
            hi = mid
    return lo


def open_parent_making(root: SecureRoot, parts: tuple[str, ...], op: str) -> tuple[Parent, Made]:
    """The parent of `parts`, its missing folders made; with what was made, for
    `undone_on_failure`.

    The folders are made by the choke point (`open_parent(create_parents=True)`, one
    pass however deep) when the first missing one is below plain folders; then the
    folders below the last one that was there are recorded as made (on success or
    failure). When a link or an unreadable folder is on the way, each level is made
    on its own (`open_parent` and `mkdir`), and only a `mkdir` that succeeded counts.
    """
    path = join(parts)
    folders = parts[:-1]
    made = Made()
    if _probe(root, folders) == THERE:
        return root.open_parent(path, op=op, perm="write"), made
    there = _deepest_there(root, folders)
    try:
        if _probe(root, folders[: there + 1]) == MISSING:
            try:
                return root.open_parent(path, op=op, perm="write", create_parents=True), made
            finally:
                made.record(root, folders, there)
        for depth in range(there + 1, len(parts)):
            _make_one(root, parts[:depth], op, made)
        return root.open_parent(path, op=op, perm="write"), made
    except BaseException:
        made.remove()
        raise


def _make_one(root: SecureRoot, folder: tuple[str, ...], op: str, made: Made) -> None:
    with root.open_parent(join(folder), op=op, perm="write") as at:
        try:
            os.mkdir(at.name, 0o777, dir_fd=at.fd)
        except FileExistsError:
            return  # there already (or made by another call just now): not ours
        except OSError as exc:
            raise os_error(exc, at.rel) from None
        try:
            made.add(at)
        except OSError as exc:  # made, but no handle on it: undone right here
            with contextlib.suppress(OSError):
                os.rmdir(at.name, dir_fd=at.fd)
            raise os_error(exc, at.rel) from None
