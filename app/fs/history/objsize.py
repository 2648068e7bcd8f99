"""An object's size read from its header, without inflating the object.

So the store can refuse a huge blob, tree or commit before dulwich loads it.
A pack entry's header holds its type and size (base-128); for a delta, the
size of the result is the second varint of its (inflated) delta data, of
which only the first few bytes are inflated. A loose object's header
(`blob 123\\0`) is the start of its inflated file.
"""

from __future__ import annotations

import os
import zlib


def _varint_size(buf: bytes, pos: int) -> tuple[int, int]:
    """A delta header's size (little-endian base-128), and the position after it."""
    size = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return size, pos


def packed_size(fd: int, offset: int) -> int | None:
    """The size of the object at `offset` in a pack: its header, or for a delta the
    result size at the start of the (inflated) delta data."""
    buf = os.pread(fd, 64, offset)
    if not buf:
        return None
    byte = buf[0]
    kind = (byte >> 4) & 7
    size = byte & 0x0F
    shift, pos = 4, 1
    while byte & 0x80:
        byte = buf[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    if kind not in (6, 7):  # not a delta: the header holds the size
        return size
    if kind == 6:  # OFS_DELTA: skip the base offset
        while buf[pos] & 0x80:
            pos += 1
        pos += 1
    else:  # REF_DELTA: skip the base id
        pos += 20
    data = os.pread(fd, 512, offset + pos)
    try:
        head = zlib.decompressobj().decompress(data, 32)
        _base, p = _varint_size(head, 0)
        result, _ = _varint_size(head, p)
    except (zlib.error, IndexError):
        return None
    return result


def loose_size(head: bytes) -> int | None:
    """The size in a loose object's inflated header (`blob 123\\0...`), or None."""
    try:
        return int(head.split(b"\0", 1)[0].split(b" ", 1)[1])
    except (IndexError, ValueError):
        return None
