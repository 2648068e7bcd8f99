"""Where a `search_text` page stopped, as a cursor the next call resumes from.

The walk is breadth-first with each folder's names sorted (`app.security.walk`), so a
file's place in it is `order(parts)`: its depth, then its path by component. A cursor
holds the file a page ended in (relative to the folder searched), how many of its items
the pages so far have shown (content: matching lines; files and counts: 1, the file is
done; 0: the file is not started), and how many items came before it in all (the next
page's `offset`). A call given one reads no file that comes before that file in the walk
(the folders before it are still listed, to find the ones below them: no file in them is
opened) and, in that file, leaves out the items already shown.

A cursor is signed with a key of this process over the call it belongs to (root, query,
path, globs, flags, mode): one from another search, edited, or from before a restart is
refused as invalid, never followed. A next cursor is given only when it lies strictly
after the one the call started from, so every call again moves forward and ends.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from app.errors import BadArgument
from app.fs.search.options import TextOptions

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


def _identity(root: str, opts: TextOptions) -> bytes:
    fields = (root, opts.query, opts.path, opts.file_glob, str(opts.case_sensitive),
              str(opts.regex), str(opts.context), opts.output_mode, str(opts.no_ignore),
              *opts.exclude)
    return "\0".join(fields).encode("utf-8", "surrogatepass")


def _mac(body: str, identity: bytes) -> str:
    return hmac.new(_KEY, identity + b"\1" + body.encode(), hashlib.sha256).hexdigest()[:32]


def encode(at: Resume, root: str, opts: TextOptions) -> str:
    path = "/".join(at.rel).encode("utf-8", "surrogateescape")
    body = f"{at.before}.{at.shown}.{base64.urlsafe_b64encode(path).decode()}"
    return f"{_mac(body, _identity(root, opts))}.{body}"


def decode(text: str, root: str, opts: TextOptions) -> Resume:
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
