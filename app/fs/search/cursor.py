"""Where a search's page stopped, as a cursor the next call resumes from.

The walk is breadth-first with each folder's names sorted (`app.security.walk`), so an
entry's place in it is `order(parts)`: its depth, then its path by component. A cursor
holds the entry a page ended in (relative to the folder searched), how many of its items
the pages so far have shown (`search_text`'s content: matching lines; files and counts: 1,
the file is done; 0: the entry is not started, as every `search_files` cursor), and how
many items came before it in all (the next page's `offset`). A call given one looks at
no entry that comes before that one in the walk (`walk.resumed`: the folders before it
are still listed, to find the ones below them; nothing in them is matched or opened)
and, in that file, leaves out the items already shown.

A cursor is signed with a key of this process over the call it belongs to (the tool,
root, query or pattern, path, globs, flags, mode): one from another search, edited, or
from before a restart is refused as invalid, never followed. A next cursor is given only
when it lies strictly after the one the call started from (`following`), so every call
again moves forward and ends.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.search.options import WalkOptions

_KEY = secrets.token_bytes(32)
MAX_CURSOR = 8192  # characters: a path of 4,096 bytes in base64 and the rest
INVALID = "invalid cursor: pass next_cursor from a previous result of the same search"


def order(parts: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """A file's place in the walk (breadth-first, names sorted)."""
    return len(parts), parts


@dataclass(frozen=True)
class Resume:
    """Where a call resumes: `rel` (the file's path under the folder searched, split),
    `shown` of its items already given, `before` items in all before them."""

    rel: tuple[str, ...]
    shown: int
    before: int

    def key(self, start: tuple[str, ...]) -> tuple[tuple[int, tuple[str, ...]], int]:
        return order((*start, *self.rel)), self.shown


def _identity(root: str, opts: WalkOptions) -> bytes:
    return json.dumps([root, *opts.identity()]).encode()  # ASCII: one spelling per list


def _mac(body: str, identity: bytes) -> str:
    return hmac.new(_KEY, identity + b"\1" + body.encode(), hashlib.sha256).hexdigest()[:32]


def encode(at: Resume, root: str, opts: WalkOptions) -> str:
    path = "/".join(at.rel).encode("utf-8", "surrogateescape")
    body = f"{at.before}.{at.shown}.{base64.urlsafe_b64encode(path).decode()}"
    return f"{_mac(body, _identity(root, opts))}.{body}"


def decode(text: str, root: str, opts: WalkOptions) -> Resume:
    """The position a cursor names; BadArgument (and nothing else) when it is not one this
    server gave for this search."""
    if len(text) > MAX_CURSOR or not text.isascii():  # a cursor this server gives is ASCII
        raise BadArgument(INVALID)
    mac, _, body = text.partition(".")
    if not hmac.compare_digest(mac, _mac(body, _identity(root, opts))):
        raise BadArgument(INVALID)
    before, _, rest = body.partition(".")
    shown, _, path = rest.partition(".")
    try:
        rel = base64.urlsafe_b64decode(path.encode("ascii")).decode("utf-8", "surrogateescape")
    except (binascii.Error, UnicodeError, ValueError):
        raise BadArgument(INVALID) from None
    parts = tuple(rel.split("/"))
    if (not before.isdigit() or not shown.isdigit() or len(before) > 12 or len(shown) > 12
            or any(p in ("", ".", "..") or "\0" in p for p in parts)):
        raise BadArgument(INVALID)
    return Resume(parts, int(shown), int(before))


def following(nxt: tuple[tuple[str, ...], int] | None, before: int, resume: Resume | None,
              start: tuple[str, ...], root: str, opts: WalkOptions) -> str | None:
    """The cursor of the page after this one, from `nxt` (the entry it starts in and its
    items shown) and `before` (items before it); None when there is no next page or the
    one named would not lie strictly after `resume`, where the call started."""
    if nxt is None:
        return None
    at = Resume(*nxt, before)
    if resume is not None and at.key(start) <= resume.key(start):
        return None
    return encode(at, root, opts)
