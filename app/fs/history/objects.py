"""Commits and annotated tags, parsed from at most the bytes a read asks for.

A commit's header (tree, parents, author, committer, encoding) comes first,
then its message. `read_commit` reads `cap` bytes (the message is cut there,
`message_cut` says so; the rest is only hashed to check the id), and reads
again up to `HEADER_MAX` when the header alone is longer; a longer header is
refused. A tag is read for its first lines (what it points to). Malformed
dates and time zones are kept as the epoch and UTC rather than refused: they
are shown, never computed with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.fs.history import store as store_mod
from app.fs.history.errors import CorruptObject, ObjectMissing, ObjectTooLarge, short
from app.fs.history.raw import COMMIT, MIB, NAMES, TAG, Want
from app.fs.history.store import RootObjectStore

HEAD_CAP = 8 * 1024  # a log's read: the header and the start of the message
HEADER_MAX = MIB  # the longest commit header read (parents, signatures, merge tags)
TAG_CAP = 4 * 1024
_ID = re.compile(rb"^[0-9a-f]{40}$")
_TZ = re.compile(rb"^([+-])(\d\d)(\d\d)$")


@dataclass(frozen=True)
class CommitInfo:
    id: bytes
    tree: bytes
    parents: tuple[bytes, ...]
    author: bytes
    committer: bytes
    author_time: int
    author_timezone: int
    commit_time: int
    encoding: bytes | None
    message: bytes  # what was read of it
    message_cut: bool  # the rest was not read
    size: int


class NotACommit(CorruptObject):
    """An object of another kind where a commit was named (`kind` says which)."""

    def __init__(self, sha: bytes, kind: int) -> None:
        super().__init__(sha, f"a {NAMES[kind]}, not a commit")
        self.kind = kind


def _ident(value: bytes) -> tuple[bytes, int, int]:
    """`Name <email> 1700000000 +0100` as (name and email, seconds, offset in seconds)."""
    end = value.rfind(b">")
    who, rest = (value[: end + 1], value[end + 1 :]) if end >= 0 else (value, b"")
    parts = rest.split()
    seconds = int(parts[0]) if parts and parts[0].isdigit() and len(parts[0]) < 19 else 0
    offset = 0
    m = _TZ.match(parts[1]) if len(parts) > 1 else None
    if m is not None:
        offset = (int(m.group(2)) * 3600 + int(m.group(3)) * 60) * (-1 if m.group(1) == b"-"
                                                                    else 1)
    return who, seconds, offset


def parse_commit(sha: bytes, data: bytes, complete: bool, size: int) -> CommitInfo:
    end = data.find(b"\n\n")
    head, message = (data, b"") if end < 0 else (data[:end], data[end + 2 :])
    lines = head.split(b"\n")
    if not lines[0].startswith(b"tree ") or not _ID.match(lines[0][5:]):
        raise CorruptObject(sha, "a commit without a tree")
    parents: list[bytes] = []
    fields: dict[bytes, bytes] = {}
    for line in lines[1:]:
        key, _, value = line.partition(b" ")
        if key == b"parent":
            if not _ID.match(value):
                raise CorruptObject(sha, "a parent that is not an id")
            parents.append(value)
        elif line[:1] != b" ":  # a continuation line (a signature) is skipped
            fields.setdefault(key, value)
    author, a_time, a_tz = _ident(fields.get(b"author", b""))
    committer, c_time, _ = _ident(fields.get(b"committer", b""))
    return CommitInfo(
        id=sha, tree=lines[0][5:], parents=tuple(parents), author=author, committer=committer,
        author_time=a_time, author_timezone=a_tz, commit_time=c_time,
        encoding=fields.get(b"encoding"), message=message, message_cut=not complete, size=size,
    )


def read_commit(store: RootObjectStore, sha: bytes, cap: int = HEAD_CAP) -> CommitInfo:
    """The commit `sha`, its message cut at about `cap` bytes (NotACommit for another kind)."""
    raw = store.read(sha, Want(cap=cap, limit=store_mod.MAX_OBJECT))
    if raw.kind != COMMIT:
        raise NotACommit(sha, raw.kind)
    if not raw.complete and b"\n\n" not in raw.data:
        if cap < HEADER_MAX:
            return read_commit(store, sha, HEADER_MAX)
        raise ObjectTooLarge(f"commit {short(sha)} has a header above {HEADER_MAX} bytes")
    return parse_commit(sha, raw.data, raw.complete, raw.size)


def tag_target(store: RootObjectStore, sha: bytes) -> bytes:
    """What the annotated tag `sha` points to (its `object` line)."""
    raw = store.read(sha, Want(cap=TAG_CAP, limit=store_mod.MAX_OBJECT))
    if raw.kind != TAG:
        raise CorruptObject(sha, "not a tag")
    first = raw.data.split(b"\n", 1)[0]
    if not first.startswith(b"object ") or not _ID.match(first[7:]):
        raise CorruptObject(sha, "a tag that names no object")
    return first[7:]


def kind_of(store: RootObjectStore, sha: bytes) -> int:
    got = store.kind_and_size(sha)
    if got is None:
        raise ObjectMissing(sha)
    return got[0]
