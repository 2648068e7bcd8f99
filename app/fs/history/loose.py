"""Loose objects: `objects/xx/yyyy…`, each a zlib stream of `kind size\\0content`.

Opened with no link followed beneath the call's `objects` handle; the header
is read from the first inflated bytes (at most 32), and the content within
the caller's `Want` (`raw.take`): the size in the header is a claim, checked
as the stream is read, never believed.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from contextlib import contextmanager

from app.fs.history.errors import CorruptObject, Meter
from app.fs.history.inflate import Stream
from app.fs.history.raw import BY_NAME, Raw, Want, take
from app.security import ops

MAX_HEADER = 32  # `commit 18446744073709551615\0` fits
_HEX = frozenset("0123456789abcdef")


@contextmanager
def opened(objects_fd: int, sha: bytes) -> Iterator[int | None]:
    """The loose object file of `sha` (a regular file, no link), or None."""
    hexsha = sha.decode("ascii")
    try:
        sub = ops.open_dir(objects_fd, hexsha[:2])
    except OSError:
        yield None
        return
    try:
        fd = ops.open_file(sub, hexsha[2:])
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.EMLINK, errno.ENOTDIR,
                             errno.EISDIR):
            raise
        fd = -1
    finally:
        os.close(sub)
    if fd < 0:
        yield None
        return
    try:
        yield fd if stat_mod.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def head(fd: int, sha: bytes, meter: Meter) -> tuple[int, int, Stream]:
    """(kind, claimed size, the stream positioned at the content)."""
    stream = Stream(fd, 0, os.fstat(fd).st_size, sha, meter)
    start = stream.read(MAX_HEADER)
    kind_name, space, rest = start.partition(b" ")
    size_text, nul, content = rest.partition(b"\0")
    kind = BY_NAME.get(kind_name)
    if (kind is None or not space or not nul or not size_text.isdigit()
            or (size_text.startswith(b"0") and size_text != b"0")):
        raise CorruptObject(sha, "its header is not `kind size`")
    stream.unread(content)
    return kind, int(size_text), stream


def read(objects_fd: int, sha: bytes, want: Want, meter: Meter) -> Raw | None:
    with opened(objects_fd, sha) as fd:
        if fd is None:
            return None
        kind, size, stream = head(fd, sha, meter)
        return take(stream, kind, size, sha, want)


def kind_and_size(objects_fd: int, sha: bytes, meter: Meter) -> tuple[int, int] | None:
    with opened(objects_fd, sha) as fd:
        if fd is None:
            return None
        kind, size, _ = head(fd, sha, meter)
        return kind, size


def with_prefix(objects_fd: int, prefix: str, most: int) -> list[bytes]:
    """Loose ids starting with `prefix` (2 hex digits or more), at most `most`; names only."""
    try:
        fd = ops.open_dir(objects_fd, prefix[:2])
    except OSError:
        return []
    found: list[bytes] = []
    try:
        with ops.scandir(fd) as it:
            for e in it:
                if (len(e.name) == 38 and e.name.startswith(prefix[2:])
                        and set(e.name) <= _HEX):
                    found.append((prefix[:2] + e.name).encode("ascii"))
                    if len(found) >= most:
                        break
    finally:
        os.close(fd)
    return found
