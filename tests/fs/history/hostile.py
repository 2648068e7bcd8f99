"""Hostile repositories, written byte by byte (no `git` involved).

A repository here is whatever a crafted clone may hold: loose objects whose
header lies about their size, zlib streams that inflate a thousandfold, packs
whose delta chains pass through huge or self-referring bases, commits with
huge messages or crafted ids, trees wide, deep, unsorted or naming objects
that do not exist. `CASES` names the shapes; `build(case, path)` writes one
as a repository at `path` (a `.git` with `HEAD` on `refs/heads/main`) and
returns what the tools should be asked (`Probe`). The same writers serve
hypothesis strategies in the tests.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20
KINDS = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
OFS_DELTA, REF_DELTA = 6, 7
STAMP = "Eve <eve@example.org> 1700000000 +0000"


def sha_of(kind: str, content: bytes) -> str:
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(content)) + content).hexdigest()


def commit_bytes(tree: str, parents: Iterable[str] = (), message: bytes = b"a commit\n",
                 when: int = 1_700_000_000) -> bytes:
    stamp = f"Eve <eve@example.org> {when} +0000"
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    head += f"author {stamp}\ncommitter {stamp}\n\n"
    return head.encode() + message


def tree_bytes(entries: Iterable[tuple[str, bytes, str]], *, keep_order: bool = False) -> bytes:
    """A tree of (mode, name, hex id) entries, in git's order unless `keep_order`."""
    items = list(entries)
    if not keep_order:
        items.sort(key=lambda e: e[1] + (b"/" if e[0] == "40000" else b""))
    return b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(s) for m, n, s in items)


def varint(n: int) -> bytes:
    """A delta header's size: little-endian base-128."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def copy_op(offset: int, size: int) -> bytes:
    """A delta's copy instruction (size 0x10000 is written as no size bytes)."""
    op, args = 0x80, bytearray()
    for i in range(4):
        if (offset >> (8 * i)) & 0xFF:
            op |= 1 << i
            args.append((offset >> (8 * i)) & 0xFF)
    if size != 0x10000:
        for i in range(3):
            if (size >> (8 * i)) & 0xFF:
                op |= 0x10 << i
                args.append((size >> (8 * i)) & 0xFF)
    return bytes([op]) + bytes(args)


def insert_ops(data: bytes) -> bytes:
    return b"".join(bytes([len(data[i:i + 127])]) + data[i:i + 127]
                    for i in range(0, len(data), 127))


def delta(src_size: int, dst_size: int, ops: bytes) -> bytes:
    return varint(src_size) + varint(dst_size) + ops


def _deflate(chunks: Iterable[bytes]) -> bytes:
    z = zlib.compressobj(9)
    return b"".join([*(z.compress(c) for c in chunks), z.flush()])


def zeros(total: int, piece: int = MIB) -> Iterator[bytes]:
    block = b"\0" * piece
    while total > 0:
        yield block[:total]
        total -= piece


@dataclass
class Entry:
    """One pack entry: a whole object (`kind` 1-4) or a delta (6: `base` is the index of
    an earlier entry; 7: `base` is a hex id). `size` overrides the header's size."""

    sha: str
    kind: int
    payload: bytes | Callable[[], Iterable[bytes]]
    base: int | str | None = None
    size: int | None = None
    raw: bytes | None = None  # the compressed bytes as written instead of deflating payload


def _pack_header(kind: int, size: int) -> bytes:
    out = bytearray([(kind << 4) | (size & 0x0F)])
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def _ofs(distance: int) -> bytes:
    out = bytearray([distance & 0x7F])
    distance >>= 7
    while distance:
        distance -= 1
        out.insert(0, 0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(out)


@dataclass
class Repo:
    path: Path
    packs: int = 0
    loose_written: list[str] = field(default_factory=list)

    @property
    def git(self) -> Path:
        return self.path / ".git"

    @classmethod
    def init(cls, path: Path) -> Repo:
        g = path / ".git"
        for sub in ("objects/pack", "objects/info", "refs/heads", "refs/tags"):
            (g / sub).mkdir(parents=True, exist_ok=True)
        (g / "HEAD").write_text("ref: refs/heads/main\n")
        return cls(path)

    def ref(self, name: str, sha: str) -> None:
        p = self.git / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(sha + "\n")

    def loose(self, kind: str, content: bytes = b"", *, name: str | None = None,
              header: bytes | None = None, body: Iterable[bytes] | None = None,
              raw: bytes | None = None) -> str:
        """A loose object: `header` replaces `kind size\\0`, `body` streams the content,
        `name` files it under another id, `raw` is the file's bytes as written."""
        sha = name or sha_of(kind, content)
        data = raw
        if data is None:
            head = header if header is not None else b"%s %d\0" % (kind.encode(), len(content))
            data = _deflate([head, *(body if body is not None else [content])])
        d = self.git / "objects" / sha[:2]
        d.mkdir(exist_ok=True)
        (d / sha[2:]).write_bytes(data)
        self.loose_written.append(sha)
        return sha

    def blob(self, content: bytes) -> str:
        return self.loose("blob", content)

    def tree(self, entries: Iterable[tuple[str, bytes, str]], **kw: bool) -> str:
        return self.loose("tree", tree_bytes(entries, **kw))

    def commit(self, tree: str, parents: Iterable[str] = (), message: bytes = b"a commit\n",
               when: int = 1_700_000_000) -> str:
        return self.loose("commit", commit_bytes(tree, parents, message, when))

    def pack(self, entries: list[Entry], *, idx_offsets: dict[str, int] | None = None) -> None:
        """A pack and its version-2 index; `idx_offsets` overrides where the index says
        an object is."""
        body = bytearray(b"PACK" + struct.pack(">II", 2, len(entries)))
        offsets: list[int] = []
        crcs: list[int] = []
        for e in entries:
            start = len(body)
            offsets.append(start)
            chunks = e.payload() if callable(e.payload) else [e.payload]
            data = e.raw if e.raw is not None else _deflate(chunks)
            size = e.size
            if size is None:
                size = len(e.payload) if isinstance(e.payload, bytes) else 0
            head = _pack_header(e.kind, size)
            if e.kind == OFS_DELTA:
                assert isinstance(e.base, int)
                head += _ofs(start - (offsets[e.base] if e.base >= 0 else start))
            elif e.kind == REF_DELTA:
                assert isinstance(e.base, str)
                head += bytes.fromhex(e.base)
            body += head + data
            crcs.append(zlib.crc32(bytes(body[start:])))
        body += hashlib.sha1(body).digest()
        where = {e.sha: o for e, o in zip(entries, offsets, strict=True)}
        where.update(idx_offsets or {})
        crc = {e.sha: c for e, c in zip(entries, crcs, strict=True)}
        names = sorted(where)
        fan = [0] * 256
        for n in names:
            fan[int(n[:2], 16)] += 1
        total = 0
        idx = bytearray(b"\377tOc" + struct.pack(">I", 2))
        for i in range(256):
            total += fan[i]
            idx += struct.pack(">I", total)
        idx += b"".join(bytes.fromhex(n) for n in names)
        idx += b"".join(struct.pack(">I", crc.get(n, 0)) for n in names)
        idx += b"".join(struct.pack(">I", where[n]) for n in names)
        idx += body[-20:]
        idx += hashlib.sha1(idx).digest()
        base = self.git / "objects" / "pack" / f"pack-{self.packs:040d}"
        self.packs += 1
        base.with_suffix(".pack").write_bytes(bytes(body))
        base.with_suffix(".idx").write_bytes(bytes(idx))


def fake_id(seed: str) -> str:
    """An id no object has: for pack entries nobody looks up by id."""
    return hashlib.sha1(b"fake " + seed.encode()).hexdigest()


@dataclass
class Probe:
    """What to ask of a built repository: a commit, a path at it, and a base for diffs."""

    commit: str = "HEAD"
    path: str | None = "f.txt"
    base: str | None = None
    error: str | None = None  # a regex the error must match, when every tool must refuse
