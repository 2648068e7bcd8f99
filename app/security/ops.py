"""The path system calls made on a root: each takes a folder the caller holds open and
one name in it, and nothing else does (tests/security/test_syscalls.py reads `app/`).

A name is one component: not empty, no `/`, no NUL, not `.` or `..` (`BadName`
otherwise, before any system call), so no call here walks a path, follows a link
on the way, or climbs out of the folder it was given. No call follows a final
link either: opens carry `O_NOFOLLOW`, stats and mode changes look at the entry
itself, links are made with `linkat` without `AT_SYMLINK_FOLLOW`; a mode or a time is
changed on a descriptor one of these opened (`os.fchmod`), never by name. Reaching the
folder itself (`Root`, the walk, `Descent`) is what decides what a call
may touch; this module makes sure that the last step stays in it.

Renames come in three kinds: `rename` replaces what the new name held,
`rename_noreplace` refuses (`FileExistsError`) when the new name exists, decided
by the kernel (`renameat2(RENAME_NOREPLACE)`; else `link` + `unlink` for a file,
and check-then-rename for a folder on a system without it), `exchange` swaps two
entries atomically (`RENAME_EXCHANGE`; `OSError(ENOSYS)` where there is none).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import stat as stat_mod
import sys
from collections.abc import Callable, Iterator

from app.errors import InvalidPath

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not hang the call; the fstat that follows refuses it.
FILE_FLAGS = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC
# A root's folder held for the server's life (`DirHandle`): the configured path as it is.
HELD_FLAGS = os.O_RDONLY
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
_ALWAYS = _O_NOFOLLOW | _O_CLOEXEC  # added to every open's flags

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_RENAMEAT2_SYSCALL = {"x86_64": 316, "aarch64": 276, "arm64": 276}
# Answers meaning "this kernel or file system has no such rename": use the fallback.
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, getattr(errno, "ENOTSUP", -1), errno.EOPNOTSUPP}


def supported() -> bool:
    """Whether this platform has the calls by folder descriptor everything here uses."""
    needed = (os.open, os.stat, os.mkdir, os.rename, os.unlink, os.readlink, os.rmdir, os.link)
    return all(fn in os.supports_dir_fd for fn in needed) and os.scandir in os.supports_fd


class BadName(InvalidPath):
    """A name given to an entry's operation that is not one component (a caller's bug)."""


def one(name: str) -> str:
    """`name` when it is one component of a path, else `BadName`."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name \
            or "\0" in name:
        raise BadName("not one name of a folder")
    return name


# -- looking -----------------------------------------------------------------------


def lstat(dir_fd: int, name: str) -> os.stat_result:
    """The entry itself (a link is a link)."""
    return os.stat(one(name), dir_fd=dir_fd, follow_symlinks=False)


def lstat_or_none(dir_fd: int, name: str) -> os.stat_result | None:
    """`lstat`, or None when there is no such entry."""
    try:
        return lstat(dir_fd, name)
    except FileNotFoundError:
        return None


def readlink(dir_fd: int, name: str) -> str:
    return os.readlink(one(name), dir_fd=dir_fd)


def scandir(dir_fd: int) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
    """The entries of the folder held at `dir_fd` (a listing of its own: `dir_fd` itself
    is neither moved nor closed)."""
    return os.scandir(dir_fd)


# -- opening -----------------------------------------------------------------------


def open_root(path: str, flags: int = DIR_FLAGS) -> int:
    """A root's own folder by its host path (the one the operator configured, already
    resolved): the one open here by path. `flags` are the caller's; the default,
    `DIR_FLAGS`, does not follow a last link (the commands run on the host: `--trash`,
    `--restore`, `--empty-trash`), the handle a `Root` holds passes `HELD_FLAGS`, which
    does. `O_DIRECTORY` and `O_CLOEXEC` are added whatever the flags: what opens is a
    folder, and no child process inherits it."""
    return os.open(path, flags | _O_DIRECTORY | _O_CLOEXEC)


def open_at(dir_fd: int, name: str, flags: int, mode: int = 0o600) -> int:
    """A descriptor of `name` opened with `flags`, never through a final link."""
    return os.open(one(name), flags | _ALWAYS, mode, dir_fd=dir_fd)


def open_file(dir_fd: int, name: str) -> int:
    """`name` opened to read (a FIFO does not block; the caller's fstat says what it is)."""
    return os.open(one(name), FILE_FLAGS, dir_fd=dir_fd)


def open_dir(dir_fd: int, name: str) -> int:
    """The folder `name`; `NotADirectoryError`/`ELOOP` when it is a file or a link."""
    return os.open(one(name), DIR_FLAGS, dir_fd=dir_fd)


def reopen(dir_fd: int) -> int:
    """A new open file description of the folder held at `dir_fd` (its own offset)."""
    return os.open(".", DIR_FLAGS, dir_fd=dir_fd)


def open_up(dir_fd: int) -> int:
    """The folder holding the one held at `dir_fd` (its `..`), for a walk back up that
    checks by device and inode where it arrived; the one step `one` refuses by name."""
    return os.open("..", DIR_FLAGS, dir_fd=dir_fd)


def create(dir_fd: int, name: str, mode: int = 0o600) -> int:
    """A new empty file `name`, opened to write; `FileExistsError` if anything is there."""
    return os.open(one(name), NEW_FLAGS, mode, dir_fd=dir_fd)


# -- changing ----------------------------------------------------------------------


def set_times(fd: int, atime_ns: int, mtime_ns: int) -> None:
    """The times of the file held at `fd` (a descriptor's, never a name's)."""
    os.utime(fd, ns=(atime_ns, mtime_ns))


def mkdir(dir_fd: int, name: str, mode: int = 0o777) -> None:
    os.mkdir(one(name), mode, dir_fd=dir_fd)


def unlink(dir_fd: int, name: str) -> None:
    """Remove the file or link `name` (a link's target is untouched)."""
    os.unlink(one(name), dir_fd=dir_fd)


def rmdir(dir_fd: int, name: str) -> None:
    os.rmdir(one(name), dir_fd=dir_fd)


def link(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """A hard link `dst` to the entry `src` itself (a link is linked, never its target)."""
    os.link(one(src), one(dst), src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)


def rename(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Rename `src` to `dst`, replacing what `dst` held (POSIX `renameat`)."""
    os.rename(one(src), one(dst), src_dir_fd=src_fd, dst_dir_fd=dst_fd)


def rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Rename `src` to `dst`; `FileExistsError` if `dst` exists, decided atomically."""
    one(src), one(dst)
    fn = _renameat2()
    if fn is not None:
        if fn(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in _UNSUPPORTED:
            raise OSError(err, os.strerror(err))
    st = lstat(src_fd, src)
    if not stat_mod.S_ISDIR(st.st_mode):
        try:
            link(src_fd, src, dst_fd, dst)
        except NotImplementedError:  # no linkat() on this platform
            pass
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                raise
        else:
            unlink(src_fd, src)
            return
    # Directories (and file systems without hard links): check, then rename.
    if lstat_or_none(dst_fd, dst) is not None:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
    rename(src_fd, src, dst_fd, dst)


def exchange(a_fd: int, a: str, b_fd: int, b: str) -> None:
    """Swap the entries `a` and `b` atomically (both must exist)."""
    one(a), one(b)
    fn = _renameat2()
    if fn is None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    if fn(a_fd, os.fsencode(a), b_fd, os.fsencode(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    fn = getattr(libc, "renameat2", None)
    if fn is not None:
        fn.restype = ctypes.c_int
        fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        return fn
    number = _RENAMEAT2_SYSCALL.get(os.uname().machine)
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    def via_syscall(a: int, b: bytes, c: int, d: bytes, flags: int) -> int:
        return int(syscall(ctypes.c_long(number), a, b, c, d, ctypes.c_uint(flags)))

    return via_syscall


__all__ = [
    "DIR_FLAGS", "FILE_FLAGS", "HELD_FLAGS", "NEW_FLAGS", "BadName", "create", "exchange", "link",
    "lstat", "lstat_or_none", "mkdir", "one", "open_at", "open_dir", "open_file", "open_root",
    "open_up", "readlink",
    "rename", "rename_noreplace", "reopen", "rmdir", "scandir", "set_times", "supported",
    "unlink",
]
