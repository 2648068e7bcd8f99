"""`delete`: move an entry into the root's trash; nothing is ever erased.

The entry goes to `<root>/.mcp-trash/<UTC stamp>[-N]/<name>`, flat: `name` is
its last component, and the record beside it says where it really lived
(through in-root links), so an item costs the same whatever its depth. Each
delete gets a stamp directory of its own, made with `mkdir` (which fails when
the name exists, so two deletes in the same second take `STAMP` and `STAMP-1`
and never collide, across threads and processes alike). The move is one
`renameat` between the entry's parent handle and a handle on the fresh trash
directory; a link moves as itself, never its target.

`.mcp-trash` is on the floor deny list, so no request can reach or empty it;
the server reaches it only from the root's handle with no link followed
(`open_subdir`), so a `.mcp-trash` planted as a link is refused, not used.
Each stamp directory also holds a one-line record (`RECORD`: what it holds,
a delete or a replaced file's version, the path it lived at, its name here,
the operation that put it there and the client that asked), which
`loom-fs-mcp --trash` lists and `--restore` reads (`app.fs.change.restore`);
`.mcp-trash/.gitignore` (`*`) keeps the trash out of `git status`. A refused
delete removes the stamp directory it made: nothing is left behind. The
entry's keys (`app.fs.change.locks`) are held from the look to the rename, as
for every change through the server.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from datetime import datetime, timezone

from pydantic import BaseModel

from app.audit import current_client, current_grant
from app.errors import LoomError, NotFound, OSRefusal, os_error
from app.fs.change.atomic import fsync_dir, rename_noreplace
from app.fs.change.layout import IGNORE, RECORD, TRASH
from app.fs.change.ledger import settle
from app.fs.change.locks import changing
from app.security import ops
from app.security.paths import join
from app.security.resolve import Root

MAX_SAME_SECOND = 100_000


class DeleteResult(BaseModel):
    path: str
    trashed_to: str  # relative to the root; the agent cannot reach it, the owner can restore it


def stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")


def open_trash(root: Root) -> int:
    """The trash directory's handle, created on first use (the server's own access)."""
    with contextlib.suppress(FileExistsError):
        ops.mkdir(root.handle.fd, TRASH, 0o700)
    try:
        fd = root.open_subdir((TRASH,))
    except OSError:
        raise OSRefusal(
            f"the trash cannot be used: '{TRASH}' in this root is not a plain directory"
        ) from None
    try:
        _write_new(fd, IGNORE, b"*\n")
    except FileExistsError:
        pass
    except OSError:
        os.close(fd)
        raise
    return fd


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    """A new small file, never through a link; FileExistsError when the name is taken.
    Not fsynced: a record lost to a power cut leaves its item listed by its place."""
    fd = ops.create(dir_fd, name)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


# The last `-N` this process used in the current second: a new stamp folder always sorts
# after the ones before it, even when an older one of that second has been removed since.
_last: dict[tuple[int, int, str], int] = {}
_last_lock = threading.Lock()


def _new_stamp_dir(trash_fd: int, base: str) -> str:
    st = os.fstat(trash_fd)
    key = (st.st_dev, st.st_ino, base)
    with _last_lock:
        start = _last.get(key, 0)
    for n in range(start, MAX_SAME_SECOND):
        name = base if n == 0 else f"{base}-{n}"
        try:
            ops.mkdir(trash_fd, name, 0o700)
        except FileExistsError:
            continue
        with _last_lock:
            if len(_last) > 1024:
                _last.clear()  # past seconds' counts are done with
            _last[key] = max(_last.get(key, 0), n + 1)
        return name
    raise OSRefusal("too many deletes within one second")


def who() -> dict[str, str]:
    """Who asked, as the audit log names them: the client (its `[[clients]]` name when
    the token chose one, else the peer or "stdio"), and then the peer apart."""
    grant, peer = current_grant.get(), current_client.get()
    return {"client": peer} if grant is None else {"client": grant or "?", "peer": peer}


class Slot:
    """A new stamp folder in the root's trash with its record written: `fd` is the folder
    that receives the entry, flat, under its own last name (`name`), whatever the depth
    it lived at. `undo` removes what was made (a refused change leaves nothing behind)."""

    def __init__(self, root: Root, parts: tuple[str, ...], kind: str,
                 now: datetime | None = None, size: int | None = None,
                 op: str = "delete") -> None:
        self.name = parts[-1]
        self.fds = [open_trash(root)]
        self.made: list[str] = []  # what we created: the stamp folder, then its record
        try:
            self.stamp = _new_stamp_dir(self.fds[0], stamp(now))
            self.made.append(self.stamp)
            self.fds.append(ops.open_dir(self.fds[0], self.stamp))
            fields: dict[str, object] = {"kind": kind, "path": join(parts), "name": self.name,
                                         "op": op, **who()}
            if size is not None:
                fields["bytes"] = size
            _write_new(self.fds[1], RECORD, json.dumps(fields, ensure_ascii=False).encode()
                       + b"\n")
            self.made.append(RECORD)
        except BaseException:
            self.undo()
            self.close()
            raise
        self.id = join((self.stamp, self.name))  # the item's path under the trash

    @property
    def fd(self) -> int:
        return self.fds[1]

    def sync(self) -> None:
        for fd in self.fds:  # each got a new entry: the stamp folder, the entry
            fsync_dir(fd)

    def undo(self) -> None:
        with contextlib.suppress(OSError):
            if RECORD in self.made:
                ops.unlink(self.fds[1], RECORD)
            if self.made:
                ops.rmdir(self.fds[0], self.stamp)
        self.made.clear()

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


def delete(root: Root, path: str, *, now: datetime | None = None) -> DeleteResult:
    op = "delete"
    with root.open_parent(path, op=op, perm="delete") as parent, changing(parent):
        if parent.lstat() is None:
            raise NotFound(f"no such file or directory: '{parent.rel}'")
        slot: Slot | None = None
        moved = False
        try:
            slot = Slot(root, parent.target_parts, "delete", now)
            rename_noreplace(parent.fd, parent.name, slot.fd, parent.name)
            moved = True
            fsync_dir(parent.fd)
            slot.sync()
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
            if slot is not None:
                if not moved:
                    slot.undo()
                slot.close()
    settle(root, slot.stamp, "delete")  # the trash's account, trimmed past its caps
    return DeleteResult(path=parent.rel, trashed_to=join((TRASH, slot.id)))
