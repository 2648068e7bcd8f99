"""A tree object's entries, parsed one at a time from its bytes.

A tree is read whole (it is at most `store.MAX_TREE` bytes) and kept as bytes:
its entries are parsed as they are asked for, from any entry's position on, so
a tree of 300,000 entries costs its bytes, not 300,000 Python objects, and a
listing or scan can stop in the middle and go on later from where it stopped.
Parsing is work like inflating: each entry is spent on the call's `Meter`
(`ENTRY_COST` bytes), so no shape of trees keeps one call parsing for long.
A lookup in a large tree bisects a sparse table of every `MARK_EVERY`th entry
made in one pass, then parses a few hundred entries.

Entries must be in git's order (names compared as bytes, a tree's name
followed by `/`) and unique: a tree out of order is refused as corrupt, since
its listing could not be paged by position and two entries could claim one
path.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator

from app.fs.history.errors import CorruptObject, Meter

_ENTRY = re.compile(rb"([0-7]{1,7}) ([^\0]+)\0(.{20})", re.S)
_MODES = {m: int(m, 8) for m in (b"100644", b"100755", b"40000", b"120000", b"160000")}
DIR_MODE = 0o040000
SMALL = 64 * 1024  # a tree up to this many bytes gets a name index for lookups
MARK_EVERY = 256
ENTRY_COST = 512  # bytes of the call's budget one parsed entry costs (about a microsecond)

Item = tuple[bytes, int, bytes, int]  # name, mode, binary id, where the next entry starts


def hexid(raw: bytes) -> bytes:
    return raw.hex().encode("ascii")


def is_dir(mode: int) -> bool:
    return mode & 0o170000 == DIR_MODE


def sort_key(name: bytes, mode: int) -> bytes:
    return name + b"/" if is_dir(mode) else name


class Tree:
    __slots__ = ("_marks", "_names", "meter", "raw", "sha")

    def __init__(self, sha: bytes, raw: bytes, meter: Meter) -> None:
        self.sha = sha
        self.raw = raw
        self.meter = meter
        self._names: dict[bytes, tuple[int, bytes]] | None = None
        self._marks: tuple[list[bytes], list[int]] | None = None

    def entries(self, start: int = 0) -> Iterator[Item]:
        """(name, mode, binary id, end) from the entry at `start` on; CorruptObject at the
        first malformed or out-of-order entry. Ids stay binary: most are never needed."""
        raw, pos, prev, n = self.raw, start, b"", 0
        match, end = _ENTRY.match, len(raw)
        # Each entry is matched where the last one ended: a search (`finditer`) would try
        # every later byte after a malformed entry, each trying a name up to the tree's end.
        while pos < end and (m := match(raw, pos)) is not None:
            n += 1
            mode_text, name, sha = m.groups()
            mode = _MODES.get(mode_text) or int(mode_text, 8)
            key = name + b"/" if mode & 0o170000 == DIR_MODE else name
            if key <= prev:
                raise CorruptObject(self.sha, "a tree whose entries are out of order or repeated")
            prev, pos = key, m.end()
            if n % MARK_EVERY == 0:
                self.meter.spend(MARK_EVERY * ENTRY_COST)
            yield name, mode, sha, pos
        if pos != end:
            raise CorruptObject(self.sha, f"a tree entry at byte {pos} is malformed")

    def find(self, name: bytes) -> tuple[int, bytes] | None:
        """(mode, hex id) of the entry called `name`, or None."""
        if len(self.raw) <= SMALL:
            if self._names is None:
                self._names = {n: (mode, sha) for n, mode, sha, _ in self.entries()}
            got = self._names.get(name)
            return None if got is None else (got[0], hexid(got[1]))
        if self._marks is None:
            self._marks = self._marked()
        keys, offsets = self._marks
        i = bisect_right(keys, name) - 1
        last = name + b"/"
        for n, mode, sha, _ in self.entries(offsets[i] if i >= 0 else 0):
            if n == name:
                return mode, hexid(sha)
            if sort_key(n, mode) > last:
                return None
        return None

    def _marked(self) -> tuple[list[bytes], list[int]]:
        keys: list[bytes] = []
        offsets: list[int] = []
        at = 0
        for i, (n, mode, _, end) in enumerate(self.entries()):
            if i % MARK_EVERY == 0:
                keys.append(sort_key(n, mode))
                offsets.append(at)
            at = end
        return keys, offsets

    @property
    def cost(self) -> int:
        """Bytes it holds in a cache: a small tree may grow a name index of about twice its size."""
        return len(self.raw) * (3 if len(self.raw) <= SMALL else 1)
