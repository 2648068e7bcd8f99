"""The pages of git_show's file list and of git_diff: changes in path order, renames
paired, and the cursor that says where the next page starts.

`listing` pairs exact renames (same content and mode, as `git diff -M100%`)
when the comparison has at most `RENAME_SCAN` changes; past that it streams
from the cursor without pairing, and says so. A cursor holds how many files
were shown, the last path shown and where the walk found it (byte positions
in the trees along its path), signed with a key of this process for the trees
compared: a cursor that is not this server's (or that names other trees) is
still followed, by the path alone.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Iterator
from itertools import islice

from app.errors import BadArgument
from app.fs.history.changes import Where, iter_changes
from app.fs.history.trees import MAX_PATH, Change, Hidden, Trees, join, valid_name

RENAME_SCAN = 10_000
_key: list[bytes] = []
_key_lock = threading.Lock()


Compared = tuple[bytes | None, bytes | None, tuple[str, ...]]  # old tree, new tree, prefix


def _mac(text: str, compared: Compared) -> str:
    with _key_lock:
        if not _key:
            _key.append(secrets.token_bytes(32))
    old, new, prefix = compared
    msg = "|".join((text, (old or b"-").decode(), (new or b"-").decode(), join(prefix)))
    return hmac.new(_key[0], msg.encode("utf-8", "surrogatepass"),
                    hashlib.sha256).hexdigest()[:24]


class PageCursor:
    """Where a file list continues: `shown` files before it, the last `path` shown, and
    where the walk found it (`where`, when the cursor is this server's)."""

    def __init__(self, shown: int, parts: tuple[str, ...], where: Where = ()) -> None:
        self.shown, self.parts, self.where = shown, parts, where

    def encode(self, trees: Compared) -> str:
        pos = ";".join(f"{a},{b}" for a, b in self.where)
        body = f"{self.shown}:{pos}:{join(self.parts)}"
        return f"{_mac(body, trees)}:{body}"

    @classmethod
    def decode(cls, text: str, trees: Compared) -> PageCursor:
        prefix = trees[2]
        mac, _, body = text.partition(":")
        count, _, rest = body.partition(":")
        pos, sep, path = rest.partition(":")
        parts = tuple(path.split("/"))
        if (not sep or not count.isdigit() or len(count) > 9 or len(path) > MAX_PATH + 256
                or any(valid_name(p.encode("utf-8", "surrogatepass")) != p for p in parts)
                or parts[: len(prefix)] != prefix or len(parts) <= len(prefix)):
            raise BadArgument("invalid cursor: pass next_cursor from a previous result")
        where: Where = ()
        if pos and hmac.compare_digest(mac, _mac(body, trees)):
            where = tuple((int(a), int(b)) for a, b in (p.split(",") for p in pos.split(";")))
        return cls(int(count), parts, where)


def pair_renames(changes: list[Change]) -> list[Change]:
    """Exact renames (same content and mode), as `git diff -M100%` finds them."""
    added: dict[tuple[bytes | None, int], list[int]] = {}
    for i, c in enumerate(changes):
        if c.change == "added" and c.new_sha is not None:
            added.setdefault((c.new_sha, c.new_mode), []).append(i)
    taken: set[int] = set()
    renamed: dict[int, Change] = {}
    for i, c in enumerate(changes):
        if c.change != "deleted":
            continue
        cands = [j for j in added.get((c.old_sha, c.old_mode), []) if j not in taken]
        if cands:
            j = cands[0]
            taken.update((i, j))
            n = changes[j]
            renamed[j] = Change(n.path, "renamed", c.old_sha, n.new_sha, c.old_mode, n.new_mode,
                                c.path, n.where)
    return [renamed.get(i, c) for i, c in enumerate(changes) if i in renamed or i not in taken]


def listing(trees: Trees, old: bytes | None, new: bytes | None, parts: tuple[str, ...],
            hidden: Hidden, after: PageCursor | None = None) -> Iterator[Change]:
    """The changes between two trees (None: empty) at or below `parts`, in path order,
    those up to the cursor left out; renames paired in comparisons small enough."""
    old_e = trees.lookup(old, parts) if old is not None else None
    new_e = trees.lookup(new, parts) if new is not None else None
    scratch = Hidden()
    first = list(islice(iter_changes(trees, old_e, new_e, parts, scratch), RENAME_SCAN + 1))
    if len(first) <= RENAME_SCAN:
        hidden.merge(scratch)
        mark = join(after.parts).encode("utf-8") if after is not None else None
        for c in pair_renames(first):
            if mark is None or c.path.encode("utf-8") > mark:
                yield c
        return
    hidden.unpaired = True
    yield from iter_changes(trees, old_e, new_e, parts, hidden,
                            after.parts if after else None, after.where if after else ())


def skip(changes: Iterator[Change], offset: int) -> Iterator[Change]:
    """`changes` less its first `offset` (a page asked for by offset, not by cursor)."""
    for _ in islice(changes, offset):
        pass
    return changes
