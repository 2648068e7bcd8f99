"""The host's files that are on no root: the only path system calls outside `app/security`.

The server's own state (the audit log, the indexes' files and folders), the config file
and the links on its path, the kernel's writeback settings, `/dev/null`. Each is named
by a host path the operator gave or the server chose, never by a path a client sent, so
none goes through a root's choke point (`app/security/ops.py` makes the calls on roots).
Keeping them here, as thin calls, is what lets tests/security/test_syscalls.py fail on a
path system call anywhere else: whoever adds one decides which of the two it is.

A read of a file's bytes here carries its bound (`read_small`): the config file, read at
start and on every reload, is a claim of the file system like any other, and a path
swapped for a FIFO or for something endless must not hold the server.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from app.bounded import read_at_most

NOT_REGULAR = "not a regular file"


class TooLarge(OSError):
    """A file larger than the bound its reader gave."""


def open_fd(path: str, flags: int, mode: int = 0o600) -> int:
    return os.open(path, flags | os.O_CLOEXEC, mode)


def make_dirs(path: str, mode: int = 0o777) -> None:
    os.makedirs(path, mode=mode, exist_ok=True)


def make_dir(path: str, mode: int) -> None:
    os.mkdir(path, mode)


def lstat(path: str) -> os.stat_result:
    return os.lstat(path)


def size(path: str) -> int:
    return os.stat(path).st_size


def chmod(path: str, mode: int) -> None:
    os.chmod(path, mode)


def unlink(path: str) -> None:
    os.unlink(path)


def readlink(path: str) -> str:
    return os.readlink(path)


def devnull() -> int:
    """A descriptor of /dev/null, for reading."""
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def read_small(path: str, most: int, hold: Callable[[int], object] | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `most` of them: opened without
    waiting (a FIFO in its place does not block), refused as `OSError(NOT_REGULAR)` when it
    is not a regular file and `TooLarge` past `most`, whatever its size claims. `hold` is
    given the descriptor of the very file read, before any refusal."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if hold is not None:
            hold(fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, NOT_REGULAR)
        data = read_at_most(fd, most)
        if data is None:
            raise TooLarge(0, f"larger than {most} bytes")
        return data
    finally:
        os.close(fd)


def seen_as(path: str) -> tuple[int, int, int, int] | None:
    """What the file at `path` is now, to tell whether it changed since (device, inode,
    size, modification time; no link followed), None when there is nothing there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_tail(path: str, most: int) -> tuple[bytes, int]:
    """The last `most` bytes (at most) of the regular file at `path` and the offset they
    start at: one seek from the end, never the whole file. Opened without following a
    last link (`O_NOFOLLOW`) and without waiting; a file that is not regular is refused
    as `OSError(NOT_REGULAR)`. The bound is in the reads: at most `most` bytes are read,
    whatever the file grows to meanwhile."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, NOT_REGULAR)
        start = max(0, info.st_size - most)
        os.lseek(fd, start, os.SEEK_SET)
        chunks: list[bytes] = []
        got = 0
        while got < most:
            chunk = os.read(fd, most - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), start
    finally:
        os.close(fd)
