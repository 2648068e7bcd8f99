"""One pack: its index and its data file, and the header of the entry at an offset.

An entry's header holds its kind and a size (base-128): the object's size, or
for a delta the size of its delta data; then, for an offset delta, how far
back its base is, or for a reference delta the base's id. Every offset, read
from the index or computed from a delta, is checked to lie inside the pack
before anything there is read, and a base must lie before its delta.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.fs.history.errors import CorruptObject, Meter, RepoRefused
from app.fs.history.inflate import Stream
from app.fs.history.packidx import PackIndex

OFS_DELTA, REF_DELTA = 6, 7
HEAD_READ = 32  # a kind and size (10 bytes at most), then an offset (10) or an id (20)


@dataclass(frozen=True)
class EntryHead:
    kind: int  # 1-4: a whole object; 6, 7: a delta
    size: int  # the object's size, or the size of the delta's data
    data_at: int  # where its zlib stream starts
    base_at: int | None = None  # an offset delta's base
    base_id: bytes | None = None  # a reference delta's base (hex id)


class Pack:
    def __init__(self, idx_fd: int, data_fd: int, name: str) -> None:
        self.name = name
        self.index = PackIndex(idx_fd, name + ".idx")
        self.fd = data_fd
        self.size = os.fstat(data_fd).st_size
        head = os.pread(data_fd, 12, 0)
        if head[:4] != b"PACK" or head[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
            raise RepoRefused(f"pack '{name}.pack' is damaged: it does not start as a pack")

    def head(self, offset: int, sha: bytes) -> EntryHead:
        """The header of the entry at `offset` (`sha`: the object being read, for errors)."""
        if not 12 <= offset < self.size - 20:
            raise CorruptObject(sha, f"pack '{self.name}' points outside itself")
        buf = os.pread(self.fd, HEAD_READ, offset)
        if not buf:
            raise CorruptObject(sha, "its pack ends early (truncated)")
        byte = buf[0]
        kind = (byte >> 4) & 7
        size = byte & 0x0F
        shift, pos = 4, 1
        while byte & 0x80:
            if pos >= 11 or pos >= len(buf):
                raise CorruptObject(sha, "a pack entry's header is damaged")
            byte = buf[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
        if kind in (1, 2, 3, 4):
            return EntryHead(kind, size, offset + pos)
        if kind == OFS_DELTA:
            dist, pos = _ofs_distance(buf, pos, sha)
            if dist <= 0 or dist > offset - 12:
                raise CorruptObject(sha, "a delta's base is not before it in the pack")
            return EntryHead(kind, size, offset + pos, base_at=offset - dist)
        if kind == REF_DELTA and len(buf) >= pos + 20:
            return EntryHead(kind, size, offset + pos + 20,
                             base_id=buf[pos : pos + 20].hex().encode("ascii"))
        raise CorruptObject(sha, f"a pack entry has an unknown kind ({kind})")

    def stream(self, head: EntryHead, sha: bytes, meter: Meter) -> Stream:
        return Stream(self.fd, head.data_at, self.size - 20, sha, meter)


def _ofs_distance(buf: bytes, pos: int, sha: bytes) -> tuple[int, int]:
    """An offset delta's distance back to its base (git's offset encoding)."""
    if pos >= len(buf):
        raise CorruptObject(sha, "a pack entry's header is damaged")
    byte = buf[pos]
    pos += 1
    dist = byte & 0x7F
    while byte & 0x80:
        if pos >= len(buf) or dist > (1 << 56):
            raise CorruptObject(sha, "a pack entry's header is damaged")
        byte = buf[pos]
        pos += 1
        dist = ((dist + 1) << 7) | (byte & 0x7F)
    return dist, pos
