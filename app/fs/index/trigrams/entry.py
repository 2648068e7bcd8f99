"""One file's entry in the trigram index's view, packed in one int.

An entry says: the file's stat signature when it was indexed (size, mtime, ctime, inode),
its row id, what became of it (text, binary, not indexed) and the commit that wrote it.
Held as a tuple of tuples and ints it cost some 300 bytes a file; packed in one Python int
(an `int` subclass without a `__dict__`) it costs about 90, with the same fields read as
attributes. The packing is exact: a signature whose fields fall outside 64 bits (a time
past the year 2262) is stored as one no file's signature equals, so that file is always
read, never trusted.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.fs.index.access import STALE, Signature

_B64 = 1 << 64
_HALF = 1 << 63
NEVER = 1 << 256  # stored for a signature that cannot be packed: equal to no key
_STATE, _ID, _KEY = 2, 63, 257  # bits of each field, lowest first; the generation on top
ID_AT, KEY_AT = _STATE, _STATE + _ID
GEN_AT = KEY_AT + _KEY
STATE_MASK, ID_MASK, KEY_MASK = (1 << _STATE) - 1, (1 << _ID) - 1, (1 << _KEY) - 1
UNMATCHED: Signature = (-1, -1, -1, -1)  # what `sig` answers for NEVER
_STALE_FIELD = STALE + _HALF  # the key's mtime field of a signature stored stale


def key(size: int, mtime: int, ctime: int, ino: int) -> int:
    """The signature as one int: equal keys exactly when the signatures are equal; -1 when
    it cannot be packed, which equals no stored key (each is 0 or more)."""
    if 0 <= size < _B64 and 0 <= ino < _B64 and -_HALF <= mtime < _HALF and -_HALF <= ctime < _HALF:
        return size | (mtime + _HALF) << 64 | (ctime + _HALF) << 128 | ino << 192
    return -1


class Entry(int):
    """(sig, id, state, gen), packed."""

    __slots__ = ()

    def __new__(cls, sig: Signature, id: int, state: int, gen: int) -> Entry:
        if not (0 <= id <= ID_MASK and 0 <= state <= STATE_MASK and gen >= 0):
            raise ValueError("an index entry out of range")
        k = key(*sig)
        k = NEVER if k < 0 else k
        return super().__new__(cls, state | id << ID_AT | k << KEY_AT | gen << GEN_AT)

    @property
    def sig(self) -> Signature:
        k = (self >> KEY_AT) & KEY_MASK
        if k == NEVER:
            return UNMATCHED
        return (k & (_B64 - 1), (k >> 64 & (_B64 - 1)) - _HALF,
                (k >> 128 & (_B64 - 1)) - _HALF, k >> 192)

    @property
    def id(self) -> int:
        return (self >> ID_AT) & ID_MASK

    @property
    def state(self) -> int:
        return self & STATE_MASK

    @property
    def gen(self) -> int:
        return self >> GEN_AT


def racy(view: Mapping[str, int]) -> dict[str, int]:
    """The paths stored stale (read within the racy window of their last change: no search
    trusts them until a build reads them again past it), each with its ctime."""
    out: dict[str, int] = {}
    m = _B64 - 1
    for p, e in view.items():
        k = e >> KEY_AT & KEY_MASK
        if k >> 64 & m == _STALE_FIELD and k != NEVER:
            out[p] = (k >> 128 & m) - _HALF
    return out
