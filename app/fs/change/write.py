"""`write_file` and `create_directory`: new content through the parent's handle.

Every change goes through `Root.open_parent`, whose final name is never
followed: the entry is inspected with `lstat` through the parent descriptor,
and a symlink, directory or special file there is refused rather than
written through. Content lands with `app.fs.change.atomic.replace_file` (temp file,
fsync, rename, directory fsync).

Lost-update guard: with `expected_sha256`, the file on disk is hashed first
and its identity (inode, size, times) is checked again just before the
rename; any difference is `file changed since it was read` and nothing is
written. The server's own changes of one entry hold its keys
(`app.fs.change.locks`) from the first look to the rename, so of the calls sent with
one hash exactly one wins. Missing folders are made on the way and removed
again if the write fails (`app.fs.change.folders`).
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from pydantic import BaseModel

from app.bounded import read_at_most
from app.errors import (
    AlreadyExists,
    BadArgument,
    FileChanged,
    IsSymlink,
    LoomError,
    NotADirectory,
    NotARegularFile,
    NotFound,
    TooDeep,
    TooLarge,
    os_error,
)
from app.fs.change.atomic import Identity, fsync_dir, replace_file
from app.fs.change.folders import Made, open_parent_making, undone_on_failure
from app.fs.change.locks import changing
from app.fs.change.versions import Keeper
from app.fs.control import Control
from app.fs.hashing import matches, sha256_bytes, sha256_fd
from app.security.paths import check_depth
from app.security.resolve import Parent, Root


class WriteResult(BaseModel):
    path: str
    created: bool  # false: an existing file was replaced
    size: int  # bytes written
    sha256: str  # of the content now on disk: pass it as expected_sha256 next time
    kept_version: str | None = None  # where the replaced content went (under the root)
    note: str | None = None


class DirectoryResult(BaseModel):
    path: str
    created: bool  # false: it was already there


def existing_target(parent: Parent) -> os.stat_result | None:
    """The regular file a write would replace, or None; anything else is refused."""
    try:
        st = parent.lstat()
    except OSError as exc:
        raise os_error(exc, parent.rel) from None
    if st is None:
        return None
    if stat_mod.S_ISLNK(st.st_mode):
        raise IsSymlink()
    if stat_mod.S_ISDIR(st.st_mode):
        raise NotARegularFile(f"not a regular file: '{parent.rel}' is a directory")
    if not stat_mod.S_ISREG(st.st_mode):
        raise NotARegularFile()
    return st


def _open_regular(parent: Parent) -> tuple[int, os.stat_result]:
    """The entry `parent.name` opened read-only (never through a link), if a regular file."""
    try:
        fd = parent.open_file()
    except OSError as exc:
        raise os_error(exc, parent.rel) from None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            raise NotARegularFile()
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_current(parent: Parent, limit: int) -> tuple[bytes, os.stat_result]:
    """The whole current file (at most `limit` bytes) and what it was when read."""
    fd, before = _open_regular(parent)
    try:
        if before.st_size > limit:
            raise TooLarge(
                f"'{parent.rel}' is {before.st_size} bytes, above this root's max_read_bytes "
                f"({limit}); it cannot be edited through this server"
            )
        data = read_at_most(fd, limit)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if data is None or Identity.of(before) != Identity.of(after):
        raise FileChanged()  # it was being written while we read it
    return data, after


def hash_of_current(parent: Parent) -> tuple[str | None, os.stat_result]:
    try:
        fd, st = _open_regular(parent)
    except NotFound:  # a hash was expected, so the file was there when read
        raise FileChanged() from None
    try:
        # Bounded by the size seen: a file growing while we hash it has changed.
        return sha256_fd(fd, st.st_size, st.st_size), st
    finally:
        os.close(fd)


def unchanged_guard(parent: Parent, seen: os.stat_result) -> Callable[[], None]:
    """A check, run just before the rename, that the file is still the one we read."""
    want = Identity.of(seen)

    def guard() -> None:
        now = parent.lstat()
        if now is None or not stat_mod.S_ISREG(now.st_mode) or Identity.of(now) != want:
            raise FileChanged()

    return guard


def encode_content(content: str, root: Root) -> bytes:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise BadArgument("content is not valid Unicode (it holds a lone surrogate)") from None
    if len(data) > root.max_read_bytes:
        raise TooLarge(
            f"content is {len(data)} bytes; root '{root.name}' accepts at most "
            f"{root.max_read_bytes} bytes per file (its max_read_bytes)"
        )
    return data


def refuse_deep(root: Root, parts: tuple[str, ...], op: str) -> None:
    """`check_depth` on a path this call makes (the request's, then where it resolved to
    through in-root links), audited."""
    try:
        check_depth(len(parts))
    except TooDeep as exc:
        root.record("DENY", "/".join(parts), op, exc)
        raise


def _exists(rel: str) -> AlreadyExists:
    return AlreadyExists(f"'{rel}' already exists; pass overwrite=true to replace it")


def _put(
    root: Root, parent: Parent, data: bytes, overwrite: bool, expected: str | None
) -> Keeper | None:
    """Write `data` at the entry (its keys held); what kept the replaced file, None when
    this created the file."""
    for _ in range(2):
        st = existing_target(parent)
        if st is not None and not overwrite:
            raise _exists(parent.rel)
        guard = None
        if expected is not None:
            if st is None:
                raise FileChanged()
            digest, seen = hash_of_current(parent)
            if digest is None or not matches(digest, expected):
                raise FileChanged()
            guard, st = unchanged_guard(parent, seen), seen
        keeper = Keeper(root, parent, st, op="write")
        try:
            replace_file(parent.fd, parent.name, data, replace=st is not None, like=st,
                         guard=keeper.guarded(guard))
        except FileExistsError:
            # Created after our look by another program (this server's calls on one name
            # wait for each other): never ours to replace without overwrite=true; with it,
            # look again (a file there is replaced, anything else refused for what it is).
            if not overwrite:
                raise _exists(parent.rel) from None
            continue
        return keeper if st is not None else None
    raise AlreadyExists(f"'{parent.rel}' kept being recreated by another program; not written")


def write_file(
    root: Root,
    path: str,
    content: str,
    *,
    overwrite: bool = False,
    expected_sha256: str | None = None,
    control: Control | None = None,
) -> WriteResult:
    op = "write_file"
    parts = root.authorize(path, perm="write", op=op)  # permission before the size complaint
    refuse_deep(root, parts, op)
    data = encode_content(content, root)
    expected = expected_sha256.lower() if expected_sha256 else None
    if expected is not None:
        # With a hash the file must exist, so its folder must too: create nothing.
        try:
            parent, made = root.open_parent(path, op=op, perm="write"), Made()
        except NotFound:
            raise FileChanged() from None
    else:
        parent, made = open_parent_making(root, parts, op, control)
    with parent, undone_on_failure(made):
        refuse_deep(root, parent.target_parts, op)
        try:
            with changing(parent):
                keeper = _put(root, parent, data, overwrite, expected)
        except LoomError:
            raise
        except OSError as exc:
            raise os_error(exc, parent.rel) from None
    return WriteResult(
        path=parent.rel, created=keeper is None, size=len(data), sha256=sha256_bytes(data),
        kept_version=keeper.kept if keeper else None, note=keeper.note if keeper else None,
    )


def create_directory(
    root: Root, path: str, *, control: Control | None = None
) -> DirectoryResult:
    """Like `mkdir -p`: missing parents are created, an existing directory is fine;
    `control` is checked at each level made."""
    op = "create_directory"
    parts = root.authorize(path, perm="write", op=op)
    if not parts:
        return DirectoryResult(path="", created=False)  # the root always exists
    refuse_deep(root, parts, op)
    parent, made = open_parent_making(root, parts, op, control)
    with parent, undone_on_failure(made):
        refuse_deep(root, parent.target_parts, op)
        try:
            parent.mkdir()
        except FileExistsError:
            st = parent.lstat()
            if st is not None and stat_mod.S_ISDIR(st.st_mode):
                return DirectoryResult(path=parent.rel, created=False)
            if st is not None and stat_mod.S_ISLNK(st.st_mode):
                # An in-root link to a directory satisfies `mkdir -p`; one leading
                # out or to a file is refused with the choke point's own message.
                root.open_dir(path, op=op, perm="write").close()
                return DirectoryResult(path=parent.rel, created=False)
            raise NotADirectory(f"'{parent.rel}' already exists and is not a directory") from None
        except OSError as exc:
            raise os_error(exc, parent.rel) from None
        fsync_dir(parent.fd)
        return DirectoryResult(path=parent.rel, created=True)
