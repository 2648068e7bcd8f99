"""The trash for a person: list what was deleted or replaced, and put an item back.

`loom-fs-mcp --trash ROOT` and `--restore ROOT ID [--to PATH]` (`app.cli`), run
by the person on the host; no tool can (the trash is on the floor deny list).
Like `--empty-trash` they work from the root's folder through directory handles:
the trash, a stamp folder and every folder on the way to an item or to where it
goes back are opened one name at a time with no link followed, and the item is
moved back by one `renameat` that never replaces anything
(`rename_noreplace`): an existing file at the original path needs `--to`. A
place the root's deny rules hide (the trash itself under any spelling, `.git`,
a root's own `deny`) or one deeper than `MAX_DEPTH` is refused. The
folders missing on the way back are made. The item's stamp folder is removed
once empty (its record, and for a stamp of the older nested layout the folders
that only held the item).
"""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass

from app.errors import TooDeep
from app.fs.change.atomic import fsync_dir, rename_noreplace
from app.fs.change.inventory import Item, dropped, item_of, stamps
from app.fs.change.layout import RECORD, TRASH, bump_generation, stamp_key
from app.security import ops
from app.security.deny import DenyRules
from app.security.handles import open_below
from app.security.paths import check_depth


class TrashError(Exception):
    """A refusal in words for the person at the terminal."""


@dataclass
class Listing:
    items: list[Item]
    dropped: dict[str, object]


def _open_trash(root_path: str) -> int:
    root_fd = ops.open_root(root_path)
    try:
        return ops.open_dir(root_fd, TRASH)
    finally:
        os.close(root_fd)


def list_trash(root_path: str) -> Listing:
    """Every item, oldest first (FileNotFoundError when the root has no trash)."""
    trash_fd = _open_trash(root_path)
    try:
        found = [item_of(trash_fd, name) for name in stamps(trash_fd)]
        return Listing([i for i in found if i is not None], dropped(trash_fd))
    finally:
        os.close(trash_fd)


def _parts(path: str, what: str) -> list[str]:
    parts = path.strip("/").split("/")
    if not path.strip("/") or any(p in ("", ".", "..") for p in parts):
        raise TrashError(f"{what} '{path}' is not a plain relative path")
    return parts


def _check_dest(dest: list[str], rules: DenyRules) -> None:
    """Refuse a place the root's deny rules hide (any component, folded as the server
    folds names: `.MCP-TRASH` is the trash) or deeper than the server makes paths."""
    where = "/".join(dest)
    hit = rules.path(dest)
    if hit is not None:
        raise TrashError(f"'{where}' matches deny pattern '{hit}'; nothing was restored")
    try:
        check_depth(len(dest))
    except TooDeep as exc:
        raise TrashError(f"{exc.message}; nothing was restored") from None


def restore(root_path: str, item_id: str, to: str | None = None,
            rules: DenyRules | None = None) -> str:
    """Put item `item_id` back at its path (or `to`, relative to the root), never where the
    root's deny `rules` (by default the built-in ones) hide it; the path."""
    parts = _parts(item_id, "ID")
    if stamp_key(parts[0]) is None:
        raise TrashError(f"no item '{item_id}' in the trash (see --trash)")
    target = _parts(to, "--to") if to is not None else None
    trash_fd = _open_trash(root_path)
    try:
        item = item_of(trash_fd, parts[0])
        if item is None or item.id != "/".join(parts):
            raise TrashError(f"no item '{item_id}' in the trash (see --trash)")
        dest = target or item.path.split("/")
        _check_dest(dest, rules or DenyRules())
        stamp_fd = ops.open_dir(trash_fd, item.stamp)
        try:
            _move_back(root_path, stamp_fd, item.inner, dest, to is None)
            tidy(stamp_fd, item.inner[:-1])
        finally:
            os.close(stamp_fd)
        with contextlib.suppress(OSError):
            ops.rmdir(trash_fd, item.stamp)
        bump_generation(trash_fd)  # a server's account of this trash lists it again
        return "/".join(dest)
    finally:
        os.close(trash_fd)


def _move_back(root_path: str, stamp_fd: int, src: list[str], dest: list[str],
               original: bool) -> None:
    src_fd = open_below(stamp_fd, src[:-1])
    try:
        dst_fd = _make_folders(root_path, dest[:-1])
        try:
            try:
                rename_noreplace(src_fd, src[-1], dst_fd, dest[-1])
            except FileExistsError:
                where = "/".join(dest)
                hint = "; restore it elsewhere with --to PATH" if original else ""
                raise TrashError(f"'{where}' exists; nothing was restored{hint}") from None
            fsync_dir(dst_fd)
            fsync_dir(src_fd)
        finally:
            os.close(dst_fd)
    finally:
        os.close(src_fd)


def _make_folders(root_path: str, folders: list[str]) -> int:
    """The folder `folders` below the root, made where missing, no link followed."""
    fd = ops.open_root(root_path)
    for name in folders:
        try:
            nxt = _enter(fd, name)
        finally:
            os.close(fd)
        fd = nxt
    return fd


def _enter(fd: int, name: str) -> int:
    try:
        return ops.open_dir(fd, name)
    except FileNotFoundError:
        ops.mkdir(fd, name, 0o777)
        return ops.open_dir(fd, name)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise TrashError(
                f"'{name}' on the way is not a plain folder (links are not followed)"
            ) from None
        raise


def tidy(stamp_fd: int, folders: list[str]) -> None:
    """Remove the folders that held the item, deepest first, while empty; then the
    record when nothing else is left in the stamp folder."""
    for depth in range(len(folders), 0, -1):
        try:
            parent = open_below(stamp_fd, folders[: depth - 1])
        except OSError:
            return
        try:
            ops.rmdir(parent, folders[depth - 1])
        except OSError:
            return
        finally:
            os.close(parent)
    with ops.scandir(stamp_fd) as it:
        left = {entry.name for entry in it}
    if left <= {RECORD}:
        with contextlib.suppress(OSError):
            ops.unlink(stamp_fd, RECORD)
