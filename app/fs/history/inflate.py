"""zlib streams inflated in pieces, never past what the caller asks for.

A header is a claim: a loose object saying `blob 10` may inflate to gigabytes.
`Stream.read(n)` hands back at most `n` more bytes (`decompress(data,
max_length)`), reading the compressed input from the file in pieces as it goes;
what is past `n` stays compressed. Every byte read or produced is spent on the
call's `Meter`.
"""

from __future__ import annotations

import os
import zlib

from app.fs.history.errors import CorruptObject, Meter

CHUNK = 64 * 1024
FIRST_CHUNK = 2048  # most objects are small: the input read grows from this to CHUNK


class Stream:
    """The zlib stream starting at `offset` in the file `fd` (not past `end`)."""

    def __init__(self, fd: int, offset: int, end: int, sha: bytes, meter: Meter) -> None:
        self.fd = fd
        self.pos = offset
        self.end = end
        self.sha = sha
        self.meter = meter
        self._z = zlib.decompressobj()
        self._input = b""
        self._ahead = b""  # produced but handed back by `unread`
        self._chunk = FIRST_CHUNK

    @property
    def eof(self) -> bool:
        return self._z.eof and not self._ahead

    def unread(self, data: bytes) -> None:
        self._ahead = data + self._ahead

    def read(self, n: int) -> bytes:
        """Up to `n` more bytes (fewer only at the end of the stream)."""
        out = [self._ahead[:n]]
        self._ahead = self._ahead[n:]
        got = len(out[0])
        while got < n and not self._z.eof:
            if not self._input:
                self._input = self._next_input()
            try:
                piece = self._z.decompress(self._input, n - got)
            except zlib.error:
                raise CorruptObject(self.sha, "its compressed data is damaged") from None
            self._input = self._z.unconsumed_tail
            self.meter.spend(len(piece))
            out.append(piece)
            got += len(piece)
        return b"".join(out)

    def _next_input(self) -> bytes:
        want = min(self._chunk, self.end - self.pos)
        self._chunk = min(self._chunk * 2, CHUNK)
        data = os.pread(self.fd, want, self.pos) if want > 0 else b""
        if not data:
            raise CorruptObject(self.sha, "its compressed data ends early (truncated)")
        self.pos += len(data)
        self.meter.spend(len(data))
        return data

    def at_end(self) -> bool:
        """Whether the stream holds nothing more (inflates one byte at most to know)."""
        if self._ahead:
            return False
        extra = self.read(1)
        if extra:
            self.unread(extra)
            return False
        return True
