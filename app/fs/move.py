"""`move_file`: one rename inside one root, through both parents' handles.

Source and destination each go through `SecureRoot.open_parent` (permission,
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
pattern no longer matches. Such a move is refused, naming the pattern, when
something below the source is denied by a whole-path rule (or is one of the
server's own files) and would not be denied at its new path. Refusing keeps the
rule auditable (the denied file stays where the operator's pattern says); see
docs/security.md "Deny patterns that name a path". Only directories that a pattern could
reach are looked at (the literal text before its first wildcard decides).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
from collections import deque

from pydantic import BaseModel

from app.errors import (
    AlreadyExists,
    BadArgument,
    DeniedName,
    IsSymlink,
    LoomError,
    NotARegularFile,
    NotFound,
    OSRefusal,
    os_error,
)
from app.fs.atomic import fsync_dir, lstat_at, rename_noreplace
from app.security.resolve import DIR_FLAGS, Parent, SecureRoot
from app.security.walk import kind_of_mode


class MoveResult(BaseModel):
    source: str
    destination: str
    type: str  # file | dir | symlink | other: what was moved
    replaced: bool  # true when overwrite=true replaced an existing file


def _open_destination(root: SecureRoot, destination: str, op: str) -> Parent:
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
    root: SecureRoot, source: str, destination: str, *, overwrite: bool = False
) -> MoveResult:
    op = "move_file"
    # Both requests pass the checks before the disk is touched at all.
    root.authorize(source, perm="write", op=op)
    root.authorize(destination, perm="write", op=op)
    with root.open_parent(source, op=op, perm="write") as src, _open_destination(
        root, destination, op
    ) as dst:
        try:
            s_st = lstat_at(src.fd, src.name)
            if s_st is None:
                raise NotFound(f"no such file or directory: '{src.rel}'")
            kind = kind_of_mode(s_st.st_mode)
            if kind == "dir" and _inside(dst.target_parts, src.target_parts):
                raise BadArgument(f"cannot move '{src.rel}' into its own subtree ('{dst.rel}')")
            if kind == "dir":
                try:
                    _refuse_exposing(root, src, dst)
                except LoomError as exc:
                    root.record("DENY", src.rel, op, exc)  # the audit log says why
                    raise
            d_st = lstat_at(dst.fd, dst.name)
            replaced = d_st is not None
            if d_st is not None:
                if (d_st.st_dev, d_st.st_ino) == (s_st.st_dev, s_st.st_ino):
                    raise BadArgument("source and destination are the same entry")
                _refuse_destination(d_st, dst.rel, overwrite)
                if kind == "dir":
                    raise AlreadyExists(
                        f"destination '{dst.rel}' is a file; a directory never replaces a file"
                    )
                os.rename(src.name, dst.name, src_dir_fd=src.fd, dst_dir_fd=dst.fd)
            else:
                rename_noreplace(src.fd, src.name, dst.fd, dst.name)
        except LoomError:
            raise
        except OSError as exc:
            raise _move_error(exc, src.rel, dst.rel) from None
        fsync_dir(dst.fd)
        if src.parent_parts != dst.parent_parts:
            fsync_dir(src.fd)
        return MoveResult(source=src.rel, destination=dst.rel, type=kind, replaced=replaced)


MAX_CHECKED = 200_000  # entries looked at under a moved directory before giving up


def _refuse_exposing(root: SecureRoot, src: Parent, dst: Parent) -> None:
    """Refuse moving a directory whose content a whole-path rule denies where it is now
    and would not deny where it goes. (The server's own files are also denied by
    identity, which a rename keeps: only their path rule needs this check.)"""
    rules = root.rules
    old, new = src.target_parts, dst.target_parts
    if not rules.may_deny_below(old):
        return
    try:
        top = os.open(src.name, DIR_FLAGS, dir_fd=src.fd)
    except OSError:
        return  # not a plain directory any more: the rename decides
    queue: deque[tuple[int, tuple[str, ...]]] = deque([(top, ())])
    seen = 0
    try:
        while queue:
            fd, below = queue.popleft()
            try:
                try:
                    with os.scandir(fd) as it:
                        entries = list(it)
                except OSError:
                    entries = []
                for e in entries:
                    seen += 1
                    if seen > MAX_CHECKED:
                        raise BadArgument(
                            f"'{src.rel}' holds more than {MAX_CHECKED} entries: too many to "
                            "check that moving it exposes nothing denied; move its parts instead"
                        )
                    if rules.name(e.name) is not None:
                        continue  # denied by its name, which moves with it
                    rel = (*below, e.name)
                    hit = rules.prefixes((*old, *rel))
                    if hit is not None:
                        if rules.prefixes((*new, *rel)) is None:
                            raise _exposes(src.rel, dst.rel, hit)
                        continue  # denied there too, and so is everything below it
                    try:
                        is_dir = e.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if is_dir and rules.may_deny_below((*old, *rel)):
                        with contextlib.suppress(OSError):
                            queue.append((os.open(e.name, DIR_FLAGS, dir_fd=fd), rel))
            finally:
                os.close(fd)
    finally:
        for fd, _ in queue:
            os.close(fd)


def _exposes(src: str, dst: str, pattern: str) -> DeniedName:
    err = DeniedName(pattern)
    err.message = (
        f"cannot move '{src}' to '{dst}': something inside it matches deny pattern "
        f"'{pattern}' and would not at its new path; nothing was moved"
    )
    err.args = (err.message,)
    return err


def _refuse_destination(st: os.stat_result, rel: str, overwrite: bool) -> None:
    if stat_mod.S_ISLNK(st.st_mode):
        raise IsSymlink()
    if stat_mod.S_ISDIR(st.st_mode):
        raise AlreadyExists(
            f"destination '{rel}' already exists and is a directory; give the full new path "
            f"(e.g. '{rel}/<name>'); a directory is never replaced"
        )
    if not overwrite:
        raise _exists(rel)
    if not stat_mod.S_ISREG(st.st_mode):
        raise NotARegularFile(f"not a regular file: destination '{rel}'")


def _exists(rel: str) -> AlreadyExists:
    return AlreadyExists(f"destination '{rel}' already exists; pass overwrite=true to replace it")


def _move_error(exc: OSError, src: str, dst: str) -> LoomError:
    if isinstance(exc, FileExistsError):
        return _exists(dst)
    if exc.errno == errno.EINVAL:
        return BadArgument(f"cannot move '{src}' into its own subtree ('{dst}')")
    if exc.errno == errno.EXDEV:
        return OSRefusal(
            f"cannot move '{src}' to '{dst}': they are on different file systems inside the root"
        )
    if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY):
        return AlreadyExists(f"destination '{dst}' changed while moving; nothing was moved")
    return os_error(exc, src)
