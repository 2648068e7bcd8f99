"""`move_file`: one rename inside one root, through both parents' handles.

Source and destination each go through `Root.open_parent` (permission,
confinement, deny on the request and on the resolved target), and the rename
is `renameat` between the two parent descriptors, so a directory swapped for
a link meanwhile cannot redirect it outside. Neither final name is followed:
a link as source moves the link itself; a link as destination is refused.

"No overwrite" holds under races (`rename_noreplace`). With `overwrite=true`
only a regular file is ever replaced, never a directory. The destination's
folder must already exist (as with `mv`): a refused move creates nothing.
Moving a directory into its own subtree is refused here and, should the tree
change meanwhile, by the kernel (EINVAL).

A deny pattern with `/` (`config/prod.yaml`) names a place, not a name: moving
an ancestor (`config` -> `config2`) would carry the denied file to a path the
pattern no longer matches. Such a move is refused (`app.fs.change.exposure`, which
fails closed: a folder it cannot look into refuses the move too).

Nothing is moved deeper than MAX_DEPTH levels below the root
(`refuse_too_deep`): the destination's depth, plus, for a folder going deeper
than it is, the depth of what it holds, measured by a walk that stops at the
first entry past the bound and fails closed (`app.security.walk.deeper_than`).

Both entries' keys (`app.fs.change.locks`) are held from the first look to the
rename, so a move never interleaves with another change of either entry
through this server (a hash-checked edit of the source, a write at the
destination).
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod

from pydantic import BaseModel

from app.errors import (
    AlreadyExists,
    BadArgument,
    IsSymlink,
    LoomError,
    NotARegularFile,
    NotFound,
    OSRefusal,
    TooDeep,
    os_error,
)
from app.fs.change.atomic import fsync_dir, rename_noreplace
from app.fs.change.exposure import MAX_CHECKED, refuse_exposing
from app.fs.change.locks import changing
from app.fs.change.versions import Keeper
from app.security.paths import MAX_DEPTH
from app.security.resolve import Parent, Root
from app.security.walk import TooManyEntries, deeper_than, kind_of_mode


class MoveResult(BaseModel):
    source: str
    destination: str
    type: str  # file | dir | symlink | other: what was moved
    replaced: bool = False  # true when overwrite=true replaced an existing file
    kept_version: str | None = None  # where the replaced file went (under the root)
    note: str | None = None


def open_destination(root: Root, destination: str, op: str) -> Parent:
    try:
        return root.open_parent(destination, op=op, perm="write")
    except NotFound:
        folder = destination.rstrip("/").rpartition("/")[0]
        raise NotFound(
            f"destination folder '{folder}' does not exist; create it first with create_directory"
        ) from None


def _inside(inner: tuple[str, ...], outer: tuple[str, ...]) -> bool:
    return len(inner) > len(outer) and inner[: len(outer)] == outer


def move_file(
    root: Root, source: str, destination: str, *, overwrite: bool = False
) -> MoveResult:
    op = "move_file"
    # Both requests pass the checks before the disk is touched at all.
    root.authorize(source, perm="write", op=op)
    root.authorize(destination, perm="write", op=op)
    with root.open_parent(source, op=op, perm="write") as src, open_destination(
        root, destination, op
    ) as dst:
        try:
            with changing(src, dst):
                kind, keeper = _move(root, src, dst, overwrite, op)
        except LoomError:
            raise
        except OSError as exc:
            raise _move_error(exc, src.rel, dst.rel) from None
        fsync_dir(dst.fd)
        if src.parent_parts != dst.parent_parts:
            fsync_dir(src.fd)
        return MoveResult(
            source=src.rel, destination=dst.rel, type=kind, replaced=keeper is not None,
            kept_version=keeper.kept if keeper else None, note=keeper.note if keeper else None,
        )


def _move(
    root: Root, src: Parent, dst: Parent, overwrite: bool, op: str
) -> tuple[str, Keeper | None]:
    """The checks and the rename, both entries' keys held: (what moved, what kept the file
    it replaced, or None)."""
    s_st = src.lstat()
    if s_st is None:
        raise NotFound(f"no such file or directory: '{src.rel}'")
    kind = kind_of_mode(s_st.st_mode)
    if kind == "dir" and _inside(dst.target_parts, src.target_parts):
        raise BadArgument(f"cannot move '{src.rel}' into its own subtree ('{dst.rel}')")
    try:
        refuse_too_deep(src, dst, kind)
        if kind == "dir":
            refuse_exposing(root, src, dst)
    except LoomError as exc:
        root.record("DENY", src.rel, op, exc)  # the audit log says why
        raise
    d_st = dst.lstat()
    if d_st is None:
        rename_noreplace(src.fd, src.name, dst.fd, dst.name)
        return kind, None
    if (d_st.st_dev, d_st.st_ino) == (s_st.st_dev, s_st.st_ino):
        raise BadArgument("source and destination are the same entry")
    refuse_destination(d_st, dst.rel, overwrite)
    if kind == "dir":
        raise AlreadyExists(f"destination '{dst.rel}' is a file; a directory never replaces a file")
    keeper = Keeper(root, dst, d_st, op="move")
    keeper()
    src.rename_over(dst)
    return kind, keeper


def refuse_too_deep(src: Parent, dst: Parent, kind: str) -> None:
    """Refuse putting `src` at `dst` when it, or anything a folder holds, would lie deeper
    than MAX_DEPTH. A folder going no deeper than it is cannot make any path deeper than it
    already is, so it is not looked into; one going deeper is walked down to what the
    bound allows (`deeper_than`), failing closed."""
    depth = len(dst.target_parts)
    if depth <= MAX_DEPTH and (kind != "dir" or depth <= len(src.target_parts)):
        return
    if depth <= MAX_DEPTH:
        try:
            top = src.open_dir()
            try:
                if not deeper_than(top, MAX_DEPTH - depth, max_entries=MAX_CHECKED):
                    return
            finally:
                os.close(top)
        except TooManyEntries:
            raise BadArgument(
                f"'{src.rel}' holds more than {MAX_CHECKED} entries: too many to check how "
                f"deep they would lie at '{dst.rel}'; move its parts instead"
            ) from None
        except OSError as exc:
            raise OSRefusal(
                f"cannot move '{src.rel}' to '{dst.rel}': a folder inside it cannot be opened "
                f"or listed ({os_error(exc).message}), so how deep it goes cannot be checked; "
                "nothing was moved"
            ) from None
    what = "it" if depth > MAX_DEPTH else "what it holds"
    raise TooDeep(
        f"cannot move '{src.rel}' to '{dst.rel}': {what} would lie more than {MAX_DEPTH} "
        f"levels below the root (the server makes paths at most {MAX_DEPTH} levels deep); "
        "nothing was moved"
    )


def refuse_destination(st: os.stat_result, rel: str, overwrite: bool) -> None:
    if stat_mod.S_ISLNK(st.st_mode):
        raise IsSymlink()
    if stat_mod.S_ISDIR(st.st_mode):
        raise AlreadyExists(
            f"destination '{rel}' already exists and is a directory; give the full new path "
            f"(e.g. '{rel}/<name>'); a directory is never replaced"
        )
    if not overwrite:
        raise exists_error(rel)
    if not stat_mod.S_ISREG(st.st_mode):
        raise NotARegularFile(f"not a regular file: destination '{rel}'")


def exists_error(rel: str) -> AlreadyExists:
    return AlreadyExists(f"destination '{rel}' already exists; pass overwrite=true to replace it")


def _move_error(exc: OSError, src: str, dst: str) -> LoomError:
    if isinstance(exc, FileExistsError):
        return exists_error(dst)
    if exc.errno == errno.EINVAL:
        return BadArgument(f"cannot move '{src}' into its own subtree ('{dst}')")
    if exc.errno == errno.EXDEV:
        return OSRefusal(
            f"cannot move '{src}' to '{dst}': they are on different file systems inside the root"
        )
    if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY):
        return AlreadyExists(f"destination '{dst}' changed while moving; nothing was moved")
    return os_error(exc, src)
