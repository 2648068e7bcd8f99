"""Undo from the owner's page: the newest items of a root's trash, their bytes, and
putting one back, so that the restore is itself undoable.

`put_back` goes through the root like a tool's change (`Root.open_parent`: the root's
deny rules on the path and where it resolves, its own files refused, no link followed
on the way, the folders missing on the way made) and holds the entry's keys
(`app.fs.change.locks.changing`) from its look at the entry to its rename, so it
serialises with the server's own calls on that file:

- a deleted entry, or a version of a file that is no longer there, goes back by one
  `renameat` that never replaces anything (`rename_noreplace`): a deleted file never
  lands over an existing one;
- a version of a file that exists replaces it by one `renameat`, after the file it
  replaces has been kept as a version itself (op `restore`, `app.fs.change.versions.keep`),
  so nothing is lost and the restore needs no confirmation. A file the root would not
  keep (versions off, or above its limit for a kept version) is not replaced: the
  refusal says so and `--restore ROOT ID --to PATH` puts the version elsewhere. The
  file is checked to be the one that was kept just before the rename (another program
  may write it meanwhile): if it changed, the extra version is removed and nothing is
  restored.

Reading is bounded: `newest` lists the trash's names (one `scandir`) and reads the
records of only the `limit` newest, each item measured by one walk of at most
`MEASURED` entries (a deleted tree of a million files is "at least" its first thousand);
`read_item` reads at most `limit` bytes of a regular file and says None past it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
from dataclasses import dataclass, field

from app.errors import FileChanged, LoomError
from app.fs.change.atomic import fsync_dir, rename_noreplace
from app.fs.change.inventory import Item, item_of, stamps
from app.fs.change.layout import TRASH, stamp_key
from app.fs.change.ledger import forget, settle
from app.fs.change.locks import changing
from app.fs.change.purge import walk_tree
from app.fs.change.restore import tidy
from app.fs.change.versions import keep
from app.fs.change.write import unchanged_guard
from app.security import ops
from app.security.handles import Parent, open_below
from app.security.paths import check_depth
from app.security.resolve import Root

OP = "owner_restore"  # what the root's checks are asked as
MEASURED = 1000  # entries of one item walked for its size, at most (past it: "at least")


MAX_ID = 512  # a stamp and one name: longer is not an ID


def well_formed(item_id: str) -> bool:
    """`<stamp>/<name>`: the form of an ID the trash hands out (any other is none)."""
    stamp, _, name = item_id.partition("/")
    return (0 < len(item_id) <= MAX_ID and stamp_key(stamp) is not None
            and name not in ("", ".", "..") and "/" not in name and "\0" not in name)


class UndoRefused(Exception):
    """Nothing was restored; `message` says why, for the owner."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Newest:
    items: list[Item] = field(default_factory=list)  # newest first
    total: int = 0  # stamp folders in the trash


@dataclass(frozen=True)
class Restored:
    path: str  # where the item is now, in the root
    replaced: str | None = None  # the trash ID of the content it replaced, kept


def _trash(root: Root) -> int | None:
    """The root's trash (never made here), None when it has none."""
    try:
        return root.open_subdir((TRASH,))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UndoRefused(f"'{TRASH}' in root '{root.name}' is not a plain folder") from None
        raise


def _held_trash(root: Root) -> int:
    """The root's trash, or UndoRefused when it has none."""
    trash_fd = _trash(root)
    if trash_fd is None:
        raise UndoRefused(f"root '{root.name}' has no trash")
    return trash_fd


def newest(root: Root, limit: int) -> Newest:
    """The newest `limit` items of the root's trash, newest first, and the trash's count."""
    trash_fd = _trash(root)
    if trash_fd is None:
        return Newest()
    try:
        names = stamps(trash_fd)
        shown = reversed(names[-limit:] if limit > 0 else [])
        found = (item_of(trash_fd, n, MEASURED) for n in shown)
        return Newest([i for i in found if i is not None], len(names))
    finally:
        os.close(trash_fd)


def _item(trash_fd: int, item_id: str) -> Item:
    stamp = item_id.split("/", 1)[0]
    item = item_of(trash_fd, stamp, MEASURED) if stamp_key(stamp) is not None else None
    if item is None or item.id != item_id:
        raise UndoRefused(f"no item '{item_id}' in the trash (restored or emptied already?)")
    return item


def find(root: Root, item_id: str) -> Item:
    """The item `item_id` (`<stamp>/<name>`) of the root's trash, or UndoRefused."""
    trash_fd = _held_trash(root)
    try:
        return _item(trash_fd, item_id)
    finally:
        os.close(trash_fd)


def read_item(root: Root, item_id: str, limit: int) -> bytes | None:
    """The bytes of item `item_id` when it is a regular file of at most `limit` bytes."""
    trash_fd = _held_trash(root)
    try:
        item = _item(trash_fd, item_id)
        try:
            folder = open_below(trash_fd, (item.stamp, *item.inner[:-1]))
        except OSError:
            return None
        try:
            fd = ops.open_file(folder, item.inner[-1])
        except OSError:
            return None  # a folder, a link: no bytes to show
        finally:
            os.close(folder)
        try:
            st = os.fstat(fd)
            if not stat_mod.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            data = os.read(fd, limit + 1)
            return data if len(data) <= limit else None
        finally:
            os.close(fd)
    finally:
        os.close(trash_fd)


def put_back(root: Root, item_id: str) -> Restored:
    """Restore item `item_id` of the root's trash at the path it came from."""
    item = find(root, item_id)
    try:
        check_depth(len(item.path.split("/")))
        with root.open_parent(item.path, op=OP, perm="write", create_parents=True) as parent:
            with changing(parent):
                return _put_back(root, item, parent)
    except LoomError as exc:  # a refusal of the root's, or too deep
        raise UndoRefused(f"{exc.message}; nothing was restored") from None


def _put_back(root: Root, item: Item, parent: Parent) -> Restored:
    trash_fd = _held_trash(root)
    try:
        item = _item(trash_fd, item.id)  # again, the entry's keys held: not restored meanwhile
        stamp_fd = ops.open_dir(trash_fd, item.stamp)
        try:
            src_fd = open_below(stamp_fd, item.inner[:-1])
            try:
                replaced = _move(root, item, parent, trash_fd, src_fd)
                fsync_dir(parent.fd)
                fsync_dir(src_fd)
            finally:
                os.close(src_fd)
            tidy(stamp_fd, item.inner[:-1])
        finally:
            os.close(stamp_fd)
        with contextlib.suppress(OSError):
            ops.rmdir(trash_fd, item.stamp)
        forget(trash_fd, item.stamp)  # out of the trash's account; other processes re-list
    finally:
        os.close(trash_fd)
    if replaced is not None:
        settle(root, replaced.split("/")[0], "version")
    return Restored(parent.rel, replaced)


def _move(root: Root, item: Item, parent: Parent, trash_fd: int, src_fd: int) -> str | None:
    """The rename back; the trash ID of the version kept of what it replaced, if any."""
    name = item.inner[-1]
    st = parent.lstat()
    if st is None:
        try:
            rename_noreplace(src_fd, name, parent.fd, parent.name)
        except FileExistsError:
            raise UndoRefused(f"'{parent.rel}' was just made by another program; "
                              "nothing was restored") from None
        return None
    if item.kind != "version":
        raise UndoRefused(f"'{parent.rel}' exists: a deleted entry is never restored over it; "
                          f"nothing was restored (--restore {root.name} {item.id} --to PATH "
                          "puts it elsewhere)")
    if not stat_mod.S_ISREG(st.st_mode):
        raise UndoRefused(f"'{parent.rel}' is not a regular file now (a folder or a link); "
                          "nothing was restored")
    _check_keepable(root, parent, st)
    unchanged_guard(parent, st)()  # still the file looked at
    kept = keep(root, parent, st, op="restore")
    try:
        # Kept as a link (the same inode: a write in place lands in the version too) or
        # as a copy of that very inode: a program that replaced the file since did so
        # by a rename, and its file is not ours to replace.
        now = parent.lstat()
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise FileChanged()
        ops.rename(src_fd, name, parent.fd, parent.name)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            walk_tree(trash_fd, kept.split("/")[0], remove=True)  # the version just kept
        if isinstance(exc, LoomError):  # the file is not the one kept: another writer
            raise UndoRefused(f"'{parent.rel}' changed while it was being restored; "
                              "nothing was restored") from None
        raise
    return kept


def _check_keepable(root: Root, parent: Parent, st: os.stat_result) -> None:
    """Refuse to replace a file whose content the root would not keep as a version."""
    policy = root.recovery
    how = f"--restore {root.name} ID --to PATH puts the version elsewhere"
    if not policy.keep_versions:
        raise UndoRefused(f"root '{root.name}' keeps no versions, so '{parent.rel}' would be "
                          f"lost if replaced; nothing was restored ({how})")
    limit = min(policy.version_max_bytes, policy.trash_max_bytes)
    if st.st_size > limit:
        raise UndoRefused(f"'{parent.rel}' ({st.st_size} bytes) is above this root's limit "
                          f"for a kept version ({limit} bytes), so it would be lost if "
                          f"replaced; nothing was restored ({how})")
