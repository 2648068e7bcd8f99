"""A file's text as the trigram index takes it: read a window at a time, decoded as a search
decodes it, and handed to SQLite in rows of at most `PART_CHARS` + `OVERLAP` characters.

SQLite's full-text table holds every distinct trigram of a row in memory until the row is
written (about 130 bytes each): a file of 8 MiB of random CJK text has 2.8 million, which
took 480 MB. So a file is never in memory whole, and a longer text is cut into parts, each
a row of its own: part `n` holds characters `n * PART_CHARS` to `(n + 1) * PART_CHARS +
OVERLAP`, so every trigram of the file, those spanning a boundary included, is whole in
one part, and so is every string of up to `OVERLAP` + 1 characters. A text of one part is
the row `fid`, as it always was; the parts of a longer one are rows `part_row(fid, n)`,
above `PARTS`, where a query asks a longer string's trigrams one at a time and joins them
per file (`trigram.held_by`).

What a file gives is what `text_of` makes of its bytes, whatever the windows: UTF-16/32 by
its BOM, else UTF-8, bad bytes replaced (an incremental decoder gives what a whole decode
gives), NUL read as a space; binary when its first 4 KiB hold a NUL; nothing when it holds
more than the limit.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator

from app.fs.text.textio import HEAD, WIDE_BOMS

WINDOW = 1 << 16  # bytes read and decoded at a time
PART_CHARS = 1 << 16  # characters a part starts with (and the OVERLAP after them)
OVERLAP = 256  # characters of the next part a part holds too: a trigram starting in its
# last two characters ends there, and a string of up to OVERLAP + 1 characters lies whole
# in one part (a query finds it without asking each trigram alone)
PARTS = 1 << 48  # rowids of parts start here; file ids stay far below 2**(63 - PART_BITS)
PART_BITS = 16  # parts of one file: at most 2**16 (8 MiB gives at most 129)


def part_row(fid: int, n: int) -> int:
    return PARTS + (fid << PART_BITS) + n


def part_rows(fid: int) -> tuple[int, int]:
    """The first and last rowid the parts of file `fid` may have."""
    return part_row(fid, 0), part_row(fid, (1 << PART_BITS) - 1)


def file_of(rowid: int) -> int:
    """The file id a row of `grams` belongs to."""
    return rowid if rowid < PARTS else (rowid - PARTS) >> PART_BITS


def text_of(data: bytes) -> tuple[bool, str]:
    """What a file's bytes give the index, in one piece: (binary, text)."""
    for bom, enc in WIDE_BOMS:
        if data.startswith(bom):
            return False, data[len(bom):].decode(enc, "replace")
    if data.find(b"\0", 0, HEAD) >= 0:
        return True, ""
    return False, data.decode("utf-8", "replace").replace("\0", " ")


class FileText:
    """The text of the file open at `fd`, at most `limit` bytes, in rows (`rows`). After
    them: `binary`, `over` (more than `limit` bytes: no text), `read` (bytes read)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.binary = self.over = False
        self.read = 0

    def _windows(self) -> Iterator[bytes]:
        """The bytes, WINDOW at a time (the first one at least HEAD, when the file holds
        it); `over` once more than `limit` were read (at most `limit` + 1 ever are)."""
        head: bytes | None = b""
        while self.read <= self.limit:
            data = os.read(self.fd, min(WINDOW, self.limit + 1 - self.read))
            if not data:
                break
            self.read += len(data)
            if head is not None:
                head += data
                if len(head) < HEAD:
                    continue
                data, head = head, None
            if self.read > self.limit:
                break
            yield data
        self.over = self.read > self.limit
        if head and not self.over:
            yield head

    def _texts(self) -> Iterator[str]:
        windows = self._windows()
        first = next(windows, b"")
        enc, skip, nul = "utf-8", 0, True
        for bom, wide in WIDE_BOMS:
            if first.startswith(bom):
                enc, skip, nul = wide, len(bom), False
                break
        else:
            if first.find(b"\0", 0, HEAD) >= 0:
                self.binary = True
                return
        dec = codecs.getincrementaldecoder(enc)("replace")
        text = dec.decode(first[skip:])
        yield text.replace("\0", " ") if nul else text
        for data in windows:
            text = dec.decode(data)
            yield text.replace("\0", " ") if nul else text
        text = dec.decode(b"", True)
        yield text.replace("\0", " ") if nul else text

    def rows(self, fid: int) -> Iterator[tuple[int, str]]:
        """(rowid, text) of each row of file `fid`: one (`fid`) for a text of one part,
        else one a part. None for a binary file; those yielded so far are void when the
        file turns out `over` the limit (the caller drops them)."""
        held: str | None = None  # the part before, held until it is known not the last
        n = 0
        buf = ""
        for text in self._texts():
            buf += text
            while len(buf) >= PART_CHARS + OVERLAP:
                if held is not None:
                    yield part_row(fid, n), held
                    n += 1
                held, buf = buf[:PART_CHARS + OVERLAP], buf[PART_CHARS:]
        if self.over:
            return
        last = len(buf) <= OVERLAP  # then every trigram starting in `buf` is in `held`
        if held is None or (n == 0 and last):
            if held or buf:
                yield fid, held or buf
            return
        yield part_row(fid, n), held
        if not last:
            yield part_row(fid, n + 1), buf
