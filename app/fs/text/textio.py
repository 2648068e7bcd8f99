"""Text on disk: encoding detection, forward line windows, reads within a byte budget.

Lines are found on the raw bytes (the newline of the detected encoding, at
code-unit boundaries), so lines before a window are counted without being
decoded or kept, and a window near the start of a huge file costs only the
bytes up to it. A `Source` hands out bytes and enforces the per-call budget
(`max_read_bytes`): when the budget runs out the reader stops and says so,
it never loads more. Decoding happens last, on the few lines kept.

Encodings: a BOM decides (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE); without one,
UTF-8 when the bytes seen decode strictly, else GB18030 when they do, else
UTF-8 with replacement characters. Binary means a NUL byte in the first
4 KiB of a file without a UTF-16/32 BOM (UTF-16 text is full of NULs).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Generator
from dataclasses import dataclass

HEAD = 4096  # bytes sniffed for a BOM and for NULs
CHUNK = 1 << 16
# The widest code point in any supported encoding: bounds the bytes kept per char.
MAX_BYTES_PER_CHAR = 4

# The one BOM table (read, edit and search use it): (BOM, encoding as reported, code unit).
BOMS: tuple[tuple[bytes, str, int], ...] = (
    # UTF-32 LE first: its BOM starts with the UTF-16 LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le", 4),
    (codecs.BOM_UTF32_BE, "utf-32-be", 4),
    (codecs.BOM_UTF8, "utf-8-sig", 1),
    (codecs.BOM_UTF16_LE, "utf-16-le", 2),
    (codecs.BOM_UTF16_BE, "utf-16-be", 2),
)
# UTF-16/32: files whose bytes are not ASCII-compatible.
WIDE_BOMS: tuple[tuple[bytes, str], ...] = tuple((b, enc) for b, enc, unit in BOMS if unit > 1)
_CODEC = {"utf-8-sig": "utf-8"}  # the BOM is skipped by offset, the rest is plain UTF-8


def codec_of(encoding: str) -> str:
    """The codec for the text after the BOM of a file reported as `encoding`."""
    return _CODEC.get(encoding, encoding)


@dataclass(frozen=True)
class Sniff:
    bom_encoding: str | None  # decided by a BOM, else None (UTF-8 or GB18030, see `decide`)
    base: int  # where the text starts (after the BOM)
    unit: int  # bytes per code unit: line breaks are looked for at multiples of it
    binary: bool

    @property
    def newline(self) -> bytes:
        enc = self.bom_encoding
        return "\n".encode(codec_of(enc)) if enc else b"\n"


def sniff(head: bytes) -> Sniff:
    for bom, enc, unit in BOMS:
        if head.startswith(bom):
            # UTF-16/32 text is full of NULs; after a UTF-8 BOM a NUL still means binary.
            return Sniff(enc, len(bom), unit, unit == 1 and b"\0" in head[len(bom) : HEAD])
    return Sniff(None, 0, 1, b"\0" in head[:HEAD])


def _decodes(data: bytes, encoding: str, final: bool) -> bool:
    try:
        codecs.getincrementaldecoder(encoding)("strict").decode(data, final)
    except UnicodeDecodeError:
        return False
    return True


def decide(sn: Sniff, samples: list[tuple[bytes, bool]]) -> str:
    """The encoding to report; `samples` are (bytes, ends at a character boundary)."""
    if sn.bom_encoding:
        return sn.bom_encoding
    for enc in ("utf-8", "gb18030"):
        if all(_decodes(data, enc, final) for data, final in samples):
            return enc
    return "utf-8"  # undecodable bytes show as U+FFFD


def decode(raw: bytes, encoding: str, *, complete: bool = True) -> str:
    """Decode one line; a line cut short may end inside a character: drop that part."""
    dec = codecs.getincrementaldecoder(_CODEC.get(encoding, encoding))("replace")
    text = dec.decode(raw, complete)
    if complete and text.endswith("\r"):
        text = text[:-1]
    return text


class Source:
    """Bytes of one open file, at most `budget` of them read per call.

    The first bytes read (the head, sniffed for BOM and NULs) are kept and
    served again without being read twice.
    """

    def __init__(
        self, fd: int, size: int, budget: int, data: bytes | None = None, head: bytes = b""
    ) -> None:
        self.fd = fd
        self.size = size
        self.budget = budget
        self.data = data  # the whole file, when it fit in the budget
        self.head = head
        self.used = len(head)
        self.exhausted = False  # a read was cut short by the budget

    @classmethod
    def open(cls, fd: int, size: int, budget: int) -> Source:
        """Read a file that fits in the budget at once; stream anything larger."""
        if size <= budget:
            data = pread_all(fd, budget + 1)
            if len(data) <= budget:
                return cls(fd, len(data), budget, data=data)
            # It grew past the budget since fstat: what was read is the head.
            return cls(fd, max(size, len(data)), budget, head=data[:budget])
        return cls(fd, size, budget, head=os.pread(fd, min(HEAD, budget), 0))

    @property
    def whole(self) -> bool:
        return self.data is not None

    def read(self, offset: int, n: int) -> bytes:
        if self.data is not None:
            return self.data[offset : offset + n]
        cached = b""
        if offset < len(self.head):
            cached = self.head[offset : offset + n]
            if len(cached) == n:
                return cached
            offset += len(cached)
            n -= len(cached)
        left = self.budget - self.used
        if n > left:
            n = left
            self.exhausted = True
        if n <= 0:
            return cached
        chunk = os.pread(self.fd, n, offset)
        self.used += len(chunk)
        return cached + chunk if cached else chunk


def pread_all(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < limit:
        chunk = os.pread(fd, min(limit - got, 1 << 20), got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def find_break(buf: bytes, token: bytes, unit: int, pos: int) -> int:
    """Next line break at or after `pos` that sits on a code-unit boundary."""
    while True:
        i = buf.find(token, pos)
        if i < 0 or unit == 1 or i % unit == 0:
            return i
        pos = i + 1


_WIDE_NEWLINE = {
    "\n".encode(enc): enc for enc in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
}


def count_breaks(buf: bytes, token: bytes, unit: int, start: int = 0) -> int:
    """Line breaks in buf[start:], which starts on a code-unit boundary."""
    if unit == 1:
        return buf.count(token, start)
    # One C-level decode and count: a Python loop over the breaks of a file of
    # empty lines would cost seconds.
    whole = len(buf) - (len(buf) - start) % unit
    return buf[start:whole].decode(_WIDE_NEWLINE[token], "replace").count("\n")


@dataclass
class RawLine:
    number: int  # 1-based; negative when counted from the end of a file
    data: bytes
    cut: bool = False  # only the start (or, in a tail, the end) of the line was kept
    complete: bool = True  # False: the budget ended inside this line


@dataclass
class Scan:
    """How far a forward scan got."""

    lines_seen: int = 0  # complete lines, plus a last line without a break at EOF
    eof: bool = False


def forward(
    src: Source, sn: Sniff, start: int, keep: int, scan: Scan
) -> Generator[RawLine, None, None]:
    """Yield lines numbered >= `start`, each with at most `keep` raw bytes kept.

    Ends at EOF (`scan.eof`) or when the budget runs out; a line the budget
    cut in two is yielded with `complete=False`. Lines before `start` are
    counted, never kept.
    """
    token, unit = sn.newline, sn.unit
    tlen = len(token)
    offset = sn.base
    number = 1
    open_ = False  # the current line has at least one byte
    pieces: list[bytes] = []
    held = 0
    cut = False
    while True:
        chunk = src.read(offset, CHUNK)
        if not chunk:
            break
        offset += len(chunk)
        if number < start:
            # A whole chunk before the window: one C-level count, nothing kept.
            n = count_breaks(chunk, token, unit)
            if number + n < start:
                # bytes follow the last break unless the chunk ends on a break on the unit grid
                ends_on_break = chunk.endswith(token) and (len(chunk) - tlen) % unit == 0
                open_ = not ends_on_break if n else True
                number += n
                scan.lines_seen = number - 1
                continue
        pos = 0
        while True:
            i = find_break(chunk, token, unit, pos)
            end = len(chunk) if i < 0 else i
            if end > pos:
                open_ = True
                if number >= start:
                    room = keep - held
                    if room > 0:
                        piece = chunk[pos : min(end, pos + room)]
                        pieces.append(piece)
                        held += len(piece)
                    if end - pos > room:
                        cut = True
            if i < 0:
                break
            scan.lines_seen = number
            if number >= start:
                yield RawLine(number, b"".join(pieces), cut)
            number += 1
            pieces, held, cut, open_ = [], 0, False, False
            pos = i + tlen
    if src.exhausted:
        if number >= start and open_:
            yield RawLine(number, b"".join(pieces), cut, complete=False)
        return
    scan.eof = True
    if open_:
        scan.lines_seen = number
        if number >= start:
            yield RawLine(number, b"".join(pieces), cut)
