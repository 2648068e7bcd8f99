"""The paths of `.git/index` (versions 2, 3 and 4), read in windows, one entry at a time.

The index is untrusted like the rest of the repository and may be large: it is
read through its handle in windows of `WINDOW` bytes (never whole), each entry
parsed and handed on, none kept, no path longer than `MAX_NAME` (a version-4
path is a cut of the one before and a suffix: it may not grow with each entry).
Only what git_diff needs is read: the path, the mode and the stage. A damaged
or unknown index ends the listing early (`damaged` says so); what was read
before stands.
"""

from __future__ import annotations

import os
import stat as stat_mod
import struct
from collections.abc import Iterator

from app.security import ops

WINDOW = 256 * 1024
ENTRY_FIXED = 62  # stat data, mode, id, flags
MAX_NAME = 64 * 1024


class IndexReader:
    def __init__(self, git_fd: int) -> None:
        self.git_fd = git_fd
        self.damaged = False

    def entries(self) -> Iterator[tuple[bytes, int, int]]:
        """(path, mode, stage) of each entry, in the index's order (by path)."""
        try:
            fd = ops.open_file(self.git_fd, "index")
        except OSError:
            return
        try:
            if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                raise _Damaged
            yield from self._entries(_Window(fd))
        except _Damaged:
            self.damaged = True
        finally:
            os.close(fd)

    def _entries(self, w: _Window) -> Iterator[tuple[bytes, int, int]]:
        head = w.take(12)
        if head[:4] != b"DIRC":
            raise _Damaged
        version, count = struct.unpack(">II", head[4:])
        if version not in (2, 3, 4):
            raise _Damaged
        prev = b""
        for _ in range(count):
            start = w.pos
            fixed = w.take(ENTRY_FIXED)
            (mode,) = struct.unpack(">I", fixed[24:28])
            (flags,) = struct.unpack(">H", fixed[60:62])
            if flags & 0x4000:
                if version < 3:
                    raise _Damaged
                w.take(2)
            if version == 4:
                strip = w.varint()
                if strip > len(prev):
                    raise _Damaged
                name = prev[: len(prev) - strip] + w.until_nul()
                if len(name) > MAX_NAME:  # grown in pieces: each later entry would copy it
                    raise _Damaged
            else:
                name = w.until_nul()
                w.take((8 - (w.pos - start) % 8) % 8)  # the padding after the NUL
            prev = name
            yield name, mode, (flags >> 12) & 3


class _Damaged(Exception):
    pass


class _Window:
    """The file's bytes from `pos` on, read `WINDOW` bytes at a time."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pos = 0
        self.buf = b""
        self.at = 0  # file offset of buf[0]

    def _fill(self, n: int) -> None:
        have = self.at + len(self.buf) - self.pos
        if have >= n:
            return
        keep = self.buf[self.pos - self.at :]
        more = os.pread(self.fd, max(WINDOW, n - have), self.pos + len(keep))
        self.buf, self.at = keep + more, self.pos
        if len(self.buf) < n:
            raise _Damaged

    def take(self, n: int) -> bytes:
        self._fill(n)
        i = self.pos - self.at
        self.pos += n
        return self.buf[i : i + n]

    def until_nul(self) -> bytes:
        """The bytes up to a NUL (which is consumed), at most MAX_NAME."""
        while True:
            i = self.pos - self.at
            end = self.buf.find(b"\0", i, i + MAX_NAME)
            if end >= 0:
                self.pos += end - i + 1
                return self.buf[i:end]
            if len(self.buf) - i >= MAX_NAME:
                raise _Damaged
            self._fill(len(self.buf) - i + 1)

    def varint(self) -> int:
        byte = self.take(1)[0]
        value = byte & 0x7F
        while byte & 0x80:
            if value > MAX_NAME:
                raise _Damaged
            byte = self.take(1)[0]
            value = ((value + 1) << 7) | (byte & 0x7F)
        return value
