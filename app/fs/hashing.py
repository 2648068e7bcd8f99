"""Content hashes for the lost-update guard (`sha256` / `expected_sha256`)."""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20


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
