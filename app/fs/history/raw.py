"""One object's bytes, read within what the caller asked for, and checked against its id.

`Want` is the request: at most `cap` bytes handed back; no object claiming more
than `limit` is read; `verify` streams the rest of a cut object through SHA-1
(kept nowhere) to check its id. An object read whole is always checked: a
stream longer or shorter than its header says, or content that is not its
id's, is `CorruptObject`. Since every object read whole is its id's content,
no commit can be its own ancestor and no tree can hold itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from app.fs.history.errors import CorruptObject, ObjectTooLarge, short
from app.fs.history.inflate import Stream

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}
BY_NAME = {v.encode(): k for k, v in NAMES.items()}
MIB = 1 << 20
VERIFY_PIECE = MIB


@dataclass(frozen=True)
class Want:
    cap: int  # bytes handed back at most
    limit: int  # no object claiming more is read (ObjectTooLarge)
    verify: bool = True  # a cut object's rest is hashed to check its id


@dataclass(frozen=True)
class Raw:
    kind: int
    data: bytes
    size: int  # the object's size: checked when complete, its header's claim when cut
    complete: bool


def header(kind: int, size: int) -> bytes:
    return b"%s %d\0" % (NAMES[kind].encode(), size)


def check_id(sha: bytes, kind: int, data: bytes) -> None:
    if hashlib.sha1(header(kind, len(data)) + data).hexdigest().encode() != sha:
        raise CorruptObject(sha, "its content does not match its id")


def too_large(sha: bytes, kind: int, size: int, limit: int) -> ObjectTooLarge:
    return ObjectTooLarge(f"{NAMES.get(kind, 'object')} {short(sha)} is {size} bytes, above "
                          f"{limit}")


def take(stream: Stream, kind: int, size: int, sha: bytes, want: Want, *, is_sha: bool = True
         ) -> Raw:
    """The object whose header said (`kind`, `size`), from its content stream; its id is
    checked unless `is_sha` is false (a delta's base, known by its place in a pack)."""
    if size > want.limit:
        raise too_large(sha, kind, size, want.limit)
    if size <= want.cap:
        data = stream.read(size + 1)  # one byte more tells a stream longer than its claim
        _check_length(sha, size, len(data))
        if is_sha:
            check_id(sha, kind, data)
        return Raw(kind, data, size, True)
    data = stream.read(want.cap)
    if len(data) < want.cap:
        _check_length(sha, size, len(data))
    if want.verify:
        _verify_rest(stream, kind, size, sha, data)
    return Raw(kind, data, size, False)


def _check_length(sha: bytes, size: int, got: int) -> None:
    if got > size:
        raise CorruptObject(sha, f"its data is longer than the {size} bytes its header says")
    if got < size:
        raise CorruptObject(sha, f"its data is shorter than the {size} bytes its header says")


def _verify_rest(stream: Stream, kind: int, size: int, sha: bytes, head: bytes) -> None:
    h = hashlib.sha1(header(kind, size) + head)
    left = size - len(head)
    while left > 0:
        piece = stream.read(min(VERIFY_PIECE, left))
        if not piece:
            _check_length(sha, size, size - left)
        h.update(piece)
        left -= len(piece)
    if not stream.at_end():
        _check_length(sha, size, size + 1)
    if h.hexdigest().encode() != sha:
        raise CorruptObject(sha, "its content does not match its id")
