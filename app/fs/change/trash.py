"""`delete`: move an entry into the root's trash; nothing is ever erased.

The entry goes to `<root>/.mcp-trash/<UTC stamp>[-N]/<relative path>`, where
the relative path is where it really lived (through in-root links). Each
delete gets a stamp directory of its own, made with `mkdir` (which fails when
the name exists, so two deletes in the same second take `STAMP` and `STAMP-1`
and never collide, across threads and processes alike). The move is one
`renameat` between the entry's parent handle and a handle on the fresh trash
directory; a link moves as itself, never its target.

`.mcp-trash` is on the floor deny list, so no request can reach or empty it;
the server reaches it only from the root's handle with no link followed
(`open_subdir`), so a `.mcp-trash` planted as a link is refused, not used.
Restoring is manual, on the host. A refused delete removes the stamp
directory it made: nothing is left behind. The entry's keys (`app.fs.change.locks`)
are held from the look to the rename, as for every change through the server.
"""

from __future__ import annotations

import contextlib
import errno
import os
from datetime import datetime, timezone

from pydantic import BaseModel

from app.errors import LoomError, NotFound, OSRefusal, os_error
from app.fs.change.atomic import fsync_dir, rename_noreplace
from app.fs.change.locks import changing
from app.security.paths import join
from app.security.resolve import DIR_FLAGS, SecureRoot

TRASH = ".mcp-trash"
MAX_SAME_SECOND = 100_000


class DeleteResult(BaseModel):
    path: str
    trashed_to: str  # relative to the root; the agent cannot reach it, the owner can restore it


def stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")


def open_trash(root: SecureRoot) -> int:
    """The trash directory's handle, created on first use (the server's own access)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(TRASH, 0o700, dir_fd=root.handle.fd)
    try:
        return root.open_subdir((TRASH,))
    except OSError:
        raise OSRefusal(
            f"the trash cannot be used: '{TRASH}' in this root is not a plain directory"
        ) from None


def _new_stamp_dir(trash_fd: int, base: str) -> str:
    for n in range(MAX_SAME_SECOND):
        name = base if n == 0 else f"{base}-{n}"
        try:
            os.mkdir(name, 0o700, dir_fd=trash_fd)
        except FileExistsError:
            continue
        return name
    raise OSRefusal("too many deletes within one second")


def delete(root: SecureRoot, path: str, *, now: datetime | None = None) -> DeleteResult:
    op = "delete"
    with root.open_parent(path, op=op, perm="delete") as parent, changing(parent):
        if parent.lstat() is None:
            raise NotFound(f"no such file or directory: '{parent.rel}'")
        trash_fd = open_trash(root)
        made: list[tuple[int, str]] = []  # (dir fd, name) of what we created, to undo
        fds = [trash_fd]
        moved = False
        try:
            name = _new_stamp_dir(trash_fd, stamp(now))
            made.append((trash_fd, name))
            fds.append(os.open(name, DIR_FLAGS, dir_fd=trash_fd))
            # Recreate where it lived, so the owner can see where to put it back.
            for folder in parent.parent_parts:
                os.mkdir(folder, 0o700, dir_fd=fds[-1])
                made.append((fds[-1], folder))
                fds.append(os.open(folder, DIR_FLAGS, dir_fd=fds[-1]))
            rename_noreplace(parent.fd, parent.name, fds[-1], parent.name)
            moved = True
            fsync_dir(parent.fd)
            for fd in fds:  # each got a new entry: the stamp, the folders, the entry
                fsync_dir(fd)
        except LoomError:
            raise
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise OSRefusal(
                    f"'{parent.rel}' is on another file system than the root's trash; "
                    "not deleted"
                ) from None
            raise os_error(exc, parent.rel) from None
        finally:
            if not moved:
                for dir_fd, made_name in reversed(made):
                    with contextlib.suppress(OSError):
                        os.rmdir(made_name, dir_fd=dir_fd)
            for fd in fds:
                os.close(fd)
        trashed = join((TRASH, name, *parent.target_parts))
        return DeleteResult(path=parent.rel, trashed_to=trashed)
