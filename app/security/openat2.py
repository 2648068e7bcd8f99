"""`openat2(2)` through ctypes, used when a probe shows the kernel allows it.

With `RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS` the kernel
itself refuses any lookup that would leave the directory handle, atomically,
whatever other processes do to the tree meanwhile. Any symlink makes it fail
with ELOOP, and the caller falls back to the component walk, which follows
in-root links under its own checks. ENOSYS/EPERM (seccomp)/EINVAL (old kernel,
unknown flag) mean "not available".
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import sys
import tempfile

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS

_SYSCALL_NUMBERS = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437}
_EAGAIN_RETRIES = 16


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


@functools.cache
def _syscall() -> tuple[object, int] | None:
    if not sys.platform.startswith("linux"):
        return None
    number = _SYSCALL_NUMBERS.get(os.uname().machine)
    if number is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    return fn, number


def _call(dirfd: int, path: str, flags: int, resolve: int, mode: int = 0) -> int:
    found = _syscall()
    if found is None:
        raise OSError(errno.ENOSYS, "openat2 unavailable")
    fn, number = found
    how = _OpenHow(flags | os.O_CLOEXEC, mode, resolve)
    raw = os.fsencode(path)
    for _ in range(_EAGAIN_RETRIES):
        fd = fn(number, dirfd, raw, ctypes.byref(how), ctypes.sizeof(how))  # type: ignore[operator]
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err not in (errno.EAGAIN, errno.EINTR):
            raise OSError(err, os.strerror(err))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


@functools.cache
def available() -> bool:
    """Probe once: does openat2 work here and refuse an escape as it should?"""
    if os.environ.get("LOOMFS_NO_OPENAT2") == "1":
        return False
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "in"))
            dirfd = os.open(os.path.join(tmp, "in"), os.O_RDONLY | os.O_DIRECTORY)
            try:
                fd = _call(dirfd, ".", os.O_RDONLY | os.O_DIRECTORY, STRICT)
                os.close(fd)
                try:
                    fd = _call(dirfd, "..", os.O_RDONLY | os.O_DIRECTORY, STRICT)
                except OSError as exc:
                    return exc.errno == errno.EXDEV
                os.close(fd)
                return False
            finally:
                os.close(dirfd)
    except OSError:
        return False


def open_beneath(dirfd: int, path: str, flags: int, mode: int = 0) -> int:
    """Open `path` under `dirfd`, refusing symlinks and anything outside."""
    return _call(dirfd, path, flags, STRICT, mode)
