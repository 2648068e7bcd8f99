"""Content hashes for the lost-update guard (`sha256` / `expected_sha256`)."""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20
SHORT = 16  # hex digits of a short sha256: what a result's text shows, 64 bits


def short(digest: str) -> str:
    """The first `SHORT` hex digits of a sha256: enough to tell versions of one file apart."""
    return digest[:SHORT]


def is_hash_or_prefix(value: str) -> bool:
    """A whole sha256 in hex, or its first `SHORT` or more digits (a shorter prefix is
    ambiguous: refused, never matched)."""
    return SHORT <= len(value) <= 64 and all(c in "0123456789abcdefABCDEF" for c in value)


def matches(digest: str, expected: str) -> bool:
    """Whether `expected` (a whole sha256 or a prefix `is_hash_or_prefix` accepts) names
    `digest`, the hex sha256 of the content on disk."""
    return is_hash_or_prefix(expected) and digest.startswith(expected.lower())


def sha256_fd(fd: int, size: int, limit: int) -> str | None:
    """sha256 of a whole open file when it fits in `limit` bytes, else None.

    Reads with pread from offset 0, so the descriptor's position is untouched.
    """
    if size > limit:
        return None
    h = hashlib.sha256()
    offset = 0
    while True:
        chunk = os.pread(fd, CHUNK, offset)
        if not chunk:
            break
        h.update(chunk)
        offset += len(chunk)
        if offset > limit:  # grew while we read: no honest answer
            return None
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
