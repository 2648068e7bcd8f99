"""Atomic, crash-safe changes to one directory entry, through its parent's handle.

What holds:
- A reader, or a crash at any instant (SIGKILL included), sees the old file or
  the new one, never a mix: the data goes to a temp file in the same
  directory, is fsynced, and is renamed over the name; the directory is then
  fsynced so the rename itself survives a power loss.
- The temp file is `.mcp-tmp-<random>`, created `O_CREAT|O_EXCL|O_NOFOLLOW`
  through the parent's descriptor, so a planted link or file is never written
  through. The name is on the floor deny list (the agent never sees one), the
  file is removed on any failure, and `app.fs.change.sweep` removes a crash's
  leftovers at the next start.
- "Do not replace" holds under races: `ops.rename_noreplace`, decided by the
  kernel (`renameat2(RENAME_NOREPLACE)`, else `link()` + `unlink()` for a file).
  Only a *directory* on a system without `renameat2` falls back to
  check-then-rename, whose window is a few microseconds.

What does not: a writer that bypasses this server between the last identity
check (`guard`) and the rename. The window is microseconds; closing it would
need mandatory locks, which POSIX does not offer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from app.errors import OSRefusal
from app.security import ops
from app.security.ops import rename_noreplace

TEMP_PREFIX = ".mcp-tmp-"
# The kernel drops set-id bits whenever a non-owner writes a file; an agent's
# rewrite must not produce a set-id program either, so only the rwx bits are kept.
KEPT_MODE_BITS = 0o777


log = logging.getLogger("loomfs.fs")


@dataclass(frozen=True)
class Identity:
    """What we saw of a file: if any of it differs later, someone else changed it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def create_temp(dir_fd: int, mode: int) -> tuple[int, str]:
    """A new, empty, exclusively created temp file beside the target."""
    for _ in range(16):
        name = TEMP_PREFIX + secrets.token_hex(8)
        try:
            return ops.create(dir_fd, name, mode), name
        except FileExistsError:
            continue
    raise OSRefusal("could not create a temporary file in the target directory")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(dir_fd: int) -> None:
    """Make a rename or mkdir in this directory durable; best effort where unsupported."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        # Some file systems (and Windows) cannot fsync a directory. The change is
        # already visible; failing the call now would report a write that happened.
        log.warning("directory fsync failed (%s); the change is made", exc.strerror)


def replace_file(
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    replace: bool,
    like: os.stat_result | None = None,
    guard: Callable[[], None] | None = None,
) -> None:
    """Make `name` in `dir_fd` hold exactly `data`, atomically.

    `replace=False` fails with FileExistsError if `name` exists by the time of
    the rename. `like` is the file being replaced: its permission bits (and
    owner, where we may) are kept. `guard` runs just before the rename and
    raises to abort (the lost-update check).
    """
    # A new file gets 0o666 minus the umask, as any editor would give it; a
    # replacement starts private and takes the old mode only once it is complete.
    replace_with(dir_fd, name, lambda fd: _write_all(fd, data), replace=replace,
                 like=like, guard=guard)


def replace_with(
    dir_fd: int,
    name: str,
    fill: Callable[[int], None],
    *,
    replace: bool,
    like: os.stat_result | None = None,
    mode: int | None = None,
    guard: Callable[[], None] | None = None,
) -> None:
    """`replace_file` whose content `fill(fd)` writes (streamed: a copy). `mode`, when
    given, is the new file's permission bits (`like`'s owner is still kept)."""
    private = like is not None or mode is not None
    fd, tmp = create_temp(dir_fd, 0o600 if private else 0o666)
    renamed = False
    try:
        try:
            fill(fd)
            if like is not None and hasattr(os, "fchown"):
                with contextlib.suppress(OSError):  # only root may give a file away
                    os.fchown(fd, like.st_uid, like.st_gid)
            bits = mode if mode is not None else like.st_mode if like is not None else None
            if bits is not None and hasattr(os, "fchmod"):  # Windows before 3.13 has none
                os.fchmod(fd, bits & KEPT_MODE_BITS)
            os.fsync(fd)
        finally:
            os.close(fd)
        if guard is not None:
            guard()
        if replace:
            ops.rename(dir_fd, tmp, dir_fd, name)
        else:
            rename_noreplace(dir_fd, tmp, dir_fd, name)
        renamed = True
    finally:
        if not renamed:
            with contextlib.suppress(OSError):
                ops.unlink(dir_fd, tmp)
    fsync_dir(dir_fd)
