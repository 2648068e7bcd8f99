"""The last lines of a text file, read backwards from its end within the byte budget.

Line breaks are found on the raw bytes, at code-unit boundaries of the
detected encoding (`textio.Sniff`), block by block from the end, so a tail of
a huge file reads only its last blocks. The line count is told when the scan
reached the start of the text or the whole file is in memory; otherwise the
lines are numbered from the end (-1 is the last line).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.fs.text import textio
from app.fs.text.textio import RawLine, Sniff, Source, count_breaks, find_break


def rfind_break(buf: bytes, token: bytes, unit: int, end: int) -> int:
    while True:
        i = buf.rfind(token, 0, end)
        if i < 0 or unit == 1 or i % unit == 0:
            return i
        end = i + len(token) - 1


@dataclass
class Tail:
    lines: list[RawLine]
    total: int | None  # known when the scan reached the start or the file is in memory


def tail(src: Source, sn: Sniff, want: int, keep_total: int) -> Tail:
    """The last `want` lines, read backwards; at most `keep_total` bytes looked at."""
    token, unit, base = sn.newline, sn.unit, sn.base
    tlen = len(token)
    end = src.size
    if end <= base:
        return Tail([], 0)
    last = src.read(end - tlen, tlen) if end - base >= tlen else b""
    trailing = last == token and (end - tlen - base) % unit == 0
    stop = end - tlen if trailing else end  # the text, without its final line break
    limit = keep_total if src.whole else min(keep_total, src.budget - src.used)
    blocks: list[bytes] = []  # last block first
    lo = stop
    found = 0
    cut_at: int | None = None  # file offset where the wanted lines begin
    looked = 0
    while lo > base and cut_at is None:
        new_lo = lo - min(textio.CHUNK, lo - base, limit - looked)
        new_lo += -(new_lo - base) % unit  # stay on a code-unit boundary
        if new_lo >= lo:
            break
        block = src.read(new_lo, lo - new_lo)
        if len(block) < lo - new_lo:
            break
        blocks.append(block)
        looked += len(block)
        hi = len(block)
        while True:
            i = rfind_break(block, token, unit, hi)
            if i < 0:
                break
            found += 1
            if found == want:
                cut_at = new_lo + i + tlen
                break
            hi = i
        lo = new_lo
    if not blocks and lo > base:  # the budget left nothing to read the end with
        return Tail([], None)
    buf = b"".join(reversed(blocks))
    if cut_at is not None:
        body, head_complete = buf[cut_at - lo :], True
    else:
        body, head_complete = buf, lo <= base
    lines = [RawLine(0, raw) for raw in _split(body, token, unit)]
    if not head_complete:
        lines[0].cut = True
    total: int | None = None
    if lo <= base and cut_at is None:
        total = len(lines)
    elif src.data is not None:
        total = count_breaks(src.data, token, unit, base) + (0 if trailing else 1)
    for k, line in enumerate(lines):
        line.number = (total - len(lines) + 1 + k) if total is not None else -(len(lines) - k)
    return Tail(lines, total)


def _split(body: bytes, token: bytes, unit: int) -> list[bytes]:
    if unit == 1:
        return body.split(token)
    out: list[bytes] = []
    pos = 0
    while True:
        i = find_break(body, token, unit, pos)
        if i < 0:
            out.append(body[pos:])
            return out
        out.append(body[pos:i])
        pos = i + len(token)
