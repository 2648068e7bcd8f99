"""Folders a change makes on its way (`mkdir -p`), removed again when the change fails.

`write_file d/e/f/g.txt` and `create_directory d/e/f` make the missing folders
walking down from the root's handle one name at a time, each level opened from
the one above it with no link followed (never again from the top, so a path d
levels deep costs O(d) opens), with a cancel check at each level. A level that
is a link, a file or unreadable is handed to the choke point
(`Root.open_dir`: permission, confinement and deny on the resolved path,
its own refusal when it is not a folder) and the walk goes on from the folder it
resolved to. Below the first missing level nothing can be a link: before the
first folder is made, the depth the whole path will reach there (where it really
leads) is checked against `MAX_DEPTH`, and each new folder's path against the
root's deny rules. A folder counts as made only when its own `mkdir` succeeded;
the entry itself is then opened through the choke point (`open_parent`).

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

from app.errors import AlreadyExists, DeniedName, os_error
from app.fs.control import Control, NoControl
from app.security import ops
from app.security.paths import check_depth, join
from app.security.resolve import Parent, Root

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

    def push(self, name: str, parent_fd: int, fd: int) -> None:
        """`name`, just made in the folder `parent_fd` and opened as `fd` (still the
        caller's): recorded, and a handle on it kept as the deepest made."""
        ids = _ident(os.fstat(fd)), _ident(os.fstat(parent_fd))
        mine = os.dup(fd)
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = mine
        self.names.append(name)
        self.ids.append(ids[0])
        self.parents.append(ids[1])

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
                up = ops.open_up(fd)
                os.close(fd)
                fd = up
                if _ident(os.fstat(fd)) != self.parents[i]:
                    return  # moved elsewhere meanwhile: not ours to follow
                st = ops.lstat(fd, self.names[i])
                if _ident(st) != self.ids[i]:
                    return
                ops.rmdir(fd, self.names[i])
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


def _plain_folder(root: Root, folders: tuple[str, ...]) -> bool:
    """Whether every folder is plainly there (no link on the way): a hint, neither audited
    nor followed, for the common case where nothing needs making."""
    try:
        os.close(root.open_subdir(folders))
    except OSError:
        return False
    return True


def open_parent_making(
    root: Root, parts: tuple[str, ...], op: str, control: Control | None = None
) -> tuple[Parent, Made]:
    """The parent of `parts`, its missing folders made; with what was made, for
    `undone_on_failure`. TooDeep, before anything is made, when the entry would lie
    deeper than MAX_DEPTH where the path really leads."""
    path = join(parts)
    made = Made()
    if _plain_folder(root, parts[:-1]):
        return root.open_parent(path, op=op, perm="write"), made
    try:
        _make_missing(root, parts, op, made, control or NoControl())
        return root.open_parent(path, op=op, perm="write"), made
    except BaseException:
        made.remove()
        raise


def _make_missing(
    root: Root, parts: tuple[str, ...], op: str, made: Made, control: Control
) -> None:
    """Walk down the folders of `parts` carrying the handle, making those missing."""
    fd = root.fresh_top()
    phys: list[str] = []  # where `fd` really is, below the root
    i, tries = 0, 0
    try:
        while i < len(parts) - 1:
            control.check()
            name = parts[i]
            try:
                nxt = ops.open_dir(fd, name)
            except FileNotFoundError:
                nxt = _make_one(root, parts, i, fd, phys, made)
                if nxt < 0:  # made meanwhile by another call: look again
                    tries += 1
                    if tries > 2:
                        raise AlreadyExists(
                            f"'{join(parts[: i + 1])}' kept changing while it was made"
                        ) from None
                    continue
            except OSError:  # a link, a file, no permission: the choke point decides
                with root.open_dir(join(parts[: i + 1]), op=op, perm="write") as there:
                    nxt, there.fd = there.fd, -1
                    phys = list(there.parts)
            else:
                phys.append(name)
            os.close(fd)
            fd, i = nxt, i + 1
    finally:
        os.close(fd)


def _make_one(
    root: Root, parts: tuple[str, ...], i: int, fd: int, phys: list[str], made: Made
) -> int:
    """Make `parts[i]` in the folder `fd` (at `phys`) and open it; -1 when it exists."""
    name = parts[i]
    check_depth(len(phys) + len(parts) - i)  # the entry's depth: no link lies below here
    hit = root.rules.path((*phys, name))
    if hit is not None:
        raise DeniedName(hit)
    rel = join(parts[: i + 1])
    try:
        ops.mkdir(fd, name, 0o777)
    except FileExistsError:
        return -1  # there already (or made by another call just now): not ours
    except OSError as exc:
        raise os_error(exc, rel) from None
    try:
        nxt = ops.open_dir(fd, name)
        try:
            made.push(name, fd, nxt)
        except OSError:
            os.close(nxt)
            raise
    except OSError as exc:  # made, but no handle on it: undone right here
        with contextlib.suppress(OSError):
            ops.rmdir(fd, name)
        raise os_error(exc, rel) from None
    return nxt
