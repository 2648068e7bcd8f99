"""What copying one file is, for `copy_file` (`app.fs.change.copy`) and its folder copy
(`app.fs.change.copy_tree`): the source opened without following a link, its bytes
streamed into a temp file beside the destination and renamed into place, the
destination's keys held from the first look to the rename; see `app.fs.change.copy`
for the guarantees.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from app.errors import BadArgument, FileChanged, NotARegularFile, TooLarge, os_error
from app.fs.change.atomic import Identity, replace_with
from app.fs.change.locks import changing
from app.fs.change.move import refuse_destination
from app.fs.change.versions import Keeper
from app.fs.change.write import unchanged_guard
from app.fs.control import Control, Pay
from app.security.resolve import Parent, Root

CHUNK = 1 << 20
MAX_COPY_BYTES = 1 << 30  # one call copies at most this much, a file or a folder


class Copied:
    """What one call copied so far: the byte budget's charge."""

    __slots__ = ("bytes", "files", "kept", "pay")

    def __init__(self, pay: Pay | None = None) -> None:
        self.files = 0
        self.bytes = 0
        self.kept: Keeper | None = None  # what kept the file a single copy replaced
        self.pay = pay  # the byte budget: paid a file's size before its first byte is written


def open_source(parent: Parent) -> tuple[int, os.stat_result]:
    """The entry `parent.name` opened read-only, never through a link; a regular file."""
    try:
        fd = parent.open_file()
    except OSError as exc:
        raise os_error(exc, parent.rel) from None
    st = os.fstat(fd)
    if not stat_mod.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotARegularFile(f"not a regular file: '{parent.rel}'")
    return fd, st


def stream(
    src_fd: int, seen: os.stat_result, rel: str, control: Control, done: Copied
) -> Callable[[int], None]:
    """A `fill` for `replace_with`: the source's bytes, exactly `seen.st_size` of them, or
    `FileChanged` when the file moved under the copy."""

    def fill(fd: int) -> None:
        left = seen.st_size + 1  # one byte more than expected shows a file that grew
        total = 0
        while left > 0:
            control.check()
            chunk = os.read(src_fd, min(CHUNK, left))
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
            total += len(chunk)
            left -= len(chunk)
        if total != seen.st_size or Identity.of(os.fstat(src_fd)) != Identity.of(seen):
            raise FileChanged(f"'{rel}' changed while it was copied; nothing was written")
        done.bytes += total

    return fill


def copy_one(
    root: Root, src: Parent, dst: Parent, *, overwrite: bool, control: Control,
    done: Copied,
) -> None:
    """One regular file from `src` to `dst` (both parents' handles), atomically."""
    fd, s_st = open_source(src)
    try:
        if s_st.st_size > MAX_COPY_BYTES - done.bytes:
            raise TooLarge(
                f"'{src.rel}' is {s_st.st_size} bytes; one copy_file call copies at most "
                f"{MAX_COPY_BYTES} bytes"
            )
        with changing(dst, wait=control.check):
            d_st = dst.lstat()
            if d_st is not None:
                if (d_st.st_dev, d_st.st_ino) == (s_st.st_dev, s_st.st_ino):
                    raise BadArgument("source and destination are the same file")
                refuse_destination(d_st, dst.rel, overwrite)
            guard = unchanged_guard(dst, d_st) if d_st is not None else None
            if done.pay is not None:
                done.pay(s_st.st_size, src.rel)  # refused: nothing of this file written
            keeper = Keeper(root, dst, d_st, op="copy")
            replace_with(dst.fd, dst.name, stream(fd, s_st, src.rel, control, done),
                         replace=d_st is not None, mode=s_st.st_mode,
                         guard=keeper.guarded(guard))
            if d_st is not None:
                done.kept = keeper
        done.files += 1
    finally:
        os.close(fd)
