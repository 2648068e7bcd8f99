"""A pack's index (`.idx`, versions 1 and 2), looked up with `pread`, never loaded whole.

The index is untrusted like the rest of the repository: its table sizes are
checked against the file's size when it is opened, and an offset it gives is
checked against the pack's size before anything there is read. A lookup reads
the 1 KiB fan-out table once, then one bucket of names (when small) or the
names a binary search visits; an abbreviated id is resolved from the names
alone, without reading any object. The file is read with `pread`, not mapped:
a file truncated by another process during a call is a short read here, not
a fatal signal.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left

from app.fs.history.errors import RepoRefused

V2_MAGIC = b"\377tOc"
BUCKET_READ = 64 * 1024  # a bucket of names up to this is read at once
TABLE_READ = 4 << 20  # a version-2 table of names up to this is read once and kept (200,000)


class PackIndex:
    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name
        self._table: bytes | None = None
        size = os.fstat(fd).st_size
        head = os.pread(fd, 8, 0)
        self.v2 = head[:4] == V2_MAGIC
        if self.v2 and head[4:8] != b"\0\0\0\2":
            self._bad("an index version this server does not read")
        fan_at = 8 if self.v2 else 0
        raw = os.pread(fd, 1024, fan_at)
        if len(raw) != 1024:
            self._bad("its fan-out table is cut short")
        self.fan = struct.unpack(">256I", raw)
        self.count = n = self.fan[255]
        if any(a > b for a, b in zip(self.fan, self.fan[1:], strict=False)):
            self._bad("its fan-out table is not in order")
        if self.v2:
            self.names_at, self.stride = 1032, 20
            self.offsets_at = 1032 + 24 * n
            self.large_at = 1032 + 28 * n
            self.large = (size - 40 - self.large_at) // 8
            if size < self.large_at + 40 or (size - 40 - self.large_at) % 8:
                self._bad("its tables do not fit its size")
        else:
            self.names_at, self.stride = 1028, 24
            self.offsets_at, self.large_at, self.large = 1024, 0, 0
            if size != 1024 + 24 * n + 40:
                self._bad("its tables do not fit its size")

    def _bad(self, why: str) -> None:
        raise RepoRefused(f"pack index '{self.name}' is damaged: {why}")

    def _name(self, i: int) -> bytes:
        if self._table is not None:
            return self._table[i * 20 : i * 20 + 20]
        got = os.pread(self.fd, 20, self.names_at + i * self.stride)
        if len(got) != 20:
            self._bad("it is shorter than its tables")
        return got

    def _names(self, lo: int, hi: int) -> list[bytes]:
        block = os.pread(self.fd, (hi - lo) * self.stride, self.names_at + lo * self.stride)
        if len(block) != (hi - lo) * self.stride:
            self._bad("it is shorter than its tables")
        s = self.stride
        return [block[k * s : k * s + 20] for k in range(hi - lo)]

    def _lower_bound(self, key: bytes) -> int:
        """The first position whose name is >= `key` (20 bytes or a shorter prefix)."""
        first = key[0]
        lo = self.fan[first - 1] if first else 0
        hi = self.fan[first]
        if self.v2 and self.count * 20 <= TABLE_READ:
            if self._table is None:
                self._table = os.pread(self.fd, self.count * 20, self.names_at)
                if len(self._table) != self.count * 20:
                    self._bad("it is shorter than its tables")
            table = self._table
            while lo < hi:
                mid = (lo + hi) // 2
                if table[mid * 20 : mid * 20 + 20] < key:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        if (hi - lo) * self.stride <= BUCKET_READ:
            return lo + bisect_left(self._names(lo, hi), key)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._name(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def offset(self, sha: bytes) -> int | None:
        """The pack offset of the object with this binary id, or None."""
        i = self._lower_bound(sha)
        if i >= self.count or i >= self.fan[sha[0]] or self._name(i) != sha:
            return None
        return self._offset_at(i)

    def _offset_at(self, i: int) -> int:
        at = self.offsets_at + i * (4 if self.v2 else 24)
        raw = os.pread(self.fd, 4, at)
        if len(raw) != 4:
            self._bad("it is shorter than its tables")
        (off,) = struct.unpack(">I", raw)
        if self.v2 and off & 0x80000000:
            k = off & 0x7FFFFFFF
            if k >= self.large:
                self._bad("an offset points past its table of large offsets")
            (off,) = struct.unpack(">Q", os.pread(self.fd, 8, self.large_at + 8 * k))
        return int(off)

    def with_prefix(self, prefix: str, most: int) -> list[bytes]:
        """Hex ids starting with `prefix` (2 hex digits or more), at most `most`."""
        even = bytes.fromhex(prefix + "0" * (len(prefix) % 2))
        i = self._lower_bound(even)
        found: list[bytes] = []
        end = self.fan[even[0]]
        while i < end and len(found) < most:
            hexsha = self._name(i).hex()
            if not hexsha.startswith(prefix):
                break
            found.append(hexsha.encode("ascii"))
            i += 1
        return found
