"""The one bounded read of a descriptor: a size a file claims is not a bound, its reads are.

`read_at_most(fd, limit)` reads at most `limit` + 1 bytes whatever `fstat` said, and tells
"more than `limit`" apart from "exactly `limit`". The token file, the config file and an
edit's read of the current file use it.
"""

from __future__ import annotations

import os

CHUNK = 1 << 20  # one read's most, so that a large limit is not one large allocation


def read_at_most(fd: int, limit: int) -> bytes | None:
    """All of `fd`'s bytes from where it stands, or None when it holds more than `limit`: the
    bound is in the reads (at most `limit` + 1 bytes are ever read), not in a size claimed."""
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = os.read(fd, min(CHUNK, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return None if got > limit else b"".join(chunks)
