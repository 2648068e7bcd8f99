"""A listed file's text as the index stores it: read, decoded and cut into words window by
window, so what one file costs is bounded whatever it holds.

The bytes are read WINDOW at a time, twice: once to decide the encoding as
`fetch` does (BOM, else the whole file as UTF-8, else as GB18030, else UTF-8
with replacement characters; `textio.decide`), once to decode and prepare the
words (`tokens.expand`). The prepared text is handed to SQLite in parts of at
most PART_CHARS characters, each one row of the full-text table: SQLite
tokenizes a row at once and holds its distinct words in memory until the row
is written, so a row's size is what bounds SQLite's memory, not the file's.

A run of word characters (SQLite's: letters, digits, `_`, combining marks,
private-use characters) longer than MAX_RUN characters is not indexed: an
8 MiB "word" (a minified file, a blob of base64, one letter followed by
millions of combining marks) is no word anyone searches for, and SQLite would
hold it whole, in memory and in the index, and compare it on every prefix
query. Runs are found with a class wider than SQLite's tokenizer's (every
Unicode mark, not only its diacritics; characters newer than its Unicode
tables), so no token SQLite makes is longer; tests/fs/index/test_bounds.py asks
SQLite itself about every character of the BMP.

Not bounded here: the file's size, which `per_file` caps before this is called
(a part is read at a time, so a larger cap costs time, not memory).
"""

from __future__ import annotations

import codecs
import functools
import os
import re
import unicodedata
from collections.abc import Callable, Iterator

from app.fs.index.fulltext import tokens
from app.fs.index.storage import PART_BITS
from app.fs.text import textio

WINDOW = 1 << 16  # bytes read, decoded and prepared at a time
PART_CHARS = 1 << 17  # prepared characters per row of the full-text table
MAX_RUN = tokens.LONGEST_WORD  # the longest run of word characters indexed
MAX_PARTS = 1 << PART_BITS  # rows per file: the rest of a longer text is not indexed
TITLE_HEAD = 8192  # characters of a file's start its title is looked for in


_WORDY = ("L", "N", "M", "Co", "Cn")  # categories that are, or may be, inside a token


@functools.cache
def _run_chars() -> str:
    """A regex class of every character that may continue an SQLite token. SQLite's
    tokenizer keeps letters, digits, `_`, its diacritics and private-use characters, by
    tables of its own Unicode version: a character assigned since (Python knows it as a
    symbol, SQLite as unassigned) may be a token character to it. So a BMP character is
    left out only when both Unicode 3.2 and Python's own version call it a separator
    (punctuation, symbol, space, control); every character beyond the BMP is in. Spelt
    as ranges, not with `\\w`, so `re` tests a character with one bitmap lookup."""
    old, new = unicodedata.ucd_3_2_0.category, unicodedata.category
    ranges: list[str] = []
    start = prev = -2
    for cp in range(0x10000):
        c = chr(cp)
        if not (
            c.isalnum() or c == "_" or new(c).startswith(_WORDY) or old(c).startswith(_WORDY)
        ):
            continue
        if cp != prev + 1:
            if start >= 0:
                ranges.append(_span(start, prev))
            start = cp
        prev = cp
    ranges.append(_span(start, prev))
    return "".join(ranges) + "\\U00010000-\\U0010ffff"


def _span(first: int, last: int) -> str:
    a, b = re.escape(chr(first)), re.escape(chr(last))
    return a if first == last else f"{a}-{b}"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    r = _run_chars()
    # A run is matched only where it starts (the lookbehind), so each costs its length once.
    long_run = re.compile(f"(?<![{r}])[{r}]{{{MAX_RUN + 1},}}")
    tail = re.compile(f"(?<![{r}])[{r}]+\\Z")
    outside = re.compile(f"[^{r}]")
    return long_run, tail, outside


class Runs:
    """Drops the runs longer than MAX_RUN from text that comes in windows, as if it came
    whole: a run cut by a window's end is carried to the next (at most MAX_RUN characters
    of it), and the rest of one already too long is skipped. In ASCII text a run is a
    word, and `tokens.expand` drops the long ones without another pass over the text."""

    def __init__(self) -> None:
        self.carry = ""
        self.skipping = False  # inside a run already known to be too long

    def feed(self, text: str, final: bool) -> str:
        long_run, tail, outside = _patterns()
        if self.skipping:
            m = outside.search(text)
            if m is None:
                return ""
            text, self.skipping = text[m.start() :], False
        text, self.carry = self.carry + text, ""
        if not final and text:
            m = tail.search(text, max(0, len(text) - MAX_RUN))
            if m is not None:  # a run that may go on in the next window: carried there
                text, self.carry = text[: m.start()], text[m.start() :]
            elif outside.match(text, len(text) - 1) is None:
                self.skipping = True  # the last run is already too long: dropped below
        return text if text.isascii() else long_run.sub(" ", text)


class Source:
    """The first `limit` bytes of an open file, WINDOW at a time. The first window is read
    once and kept: a file that fits in it is read once, and decoded at once."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.span = min(max(WINDOW, textio.HEAD), limit)  # at least the head BOMs are in
        self.first = os.pread(fd, self.span, 0) if limit > 0 else b""
        # A short read of a regular file is its end.
        self.whole = len(self.first) < self.span or len(self.first) >= limit

    def texts(self) -> Iterator[tuple[str, bool]] | None:
        """The text, a window at a time, each with whether it is the last; None for a
        binary file."""
        if self.whole:
            decoded = tokens.as_text(self.first, True)
            return None if decoded is None else iter([(decoded[0], True)])
        found = self.encoding()
        if found is None:
            return None
        codec, base = found
        dec = codecs.getincrementaldecoder(codec)("replace")
        return ((dec.decode(data, last), last) for data, last in self.windows(base))

    def windows(self, start: int) -> Iterator[tuple[bytes, bool]]:
        """The bytes from `start` on, each window with whether it is the last."""
        at = start
        while at < self.limit:
            if at < len(self.first):
                data, ended = self.first[at:], self.whole
            else:
                data = os.pread(self.fd, min(WINDOW, self.limit - at), at)
                ended = not data
            at += len(data)
            yield data, ended or at >= self.limit
            if ended:
                return

    def encoding(self) -> tuple[str, int] | None:
        """(codec, where the text starts) as `fetch` decides them (`textio.decide`: a BOM,
        else the whole text as UTF-8, else as GB18030, else UTF-8 with replacement
        characters), or None for a binary file. Nothing is kept but the first window."""
        sn = textio.sniff(self.first[: textio.HEAD])
        if sn.binary:
            return None
        if sn.bom_encoding:
            return textio.codec_of(sn.bom_encoding), sn.base
        for enc in ("utf-8", "gb18030"):
            if self._decodes(sn.base, enc):
                return enc, sn.base
        return "utf-8", sn.base

    def _decodes(self, start: int, enc: str) -> bool:
        dec = codecs.getincrementaldecoder(enc)("strict")
        try:
            for data, last in self.windows(start):
                if enc == "utf-8" and data.isascii() and not dec.getstate()[0]:
                    continue  # ASCII is UTF-8, and nothing is pending: no decode needed
                dec.decode(data, last)
            dec.decode(b"", True)
        except UnicodeDecodeError:
            return False
        return True


def parts(
    fd: int, limit: int, rel: str, check: Callable[[], None]
) -> Iterator[tuple[str, str]]:
    """(title, prepared text) of each row of the file open at `fd`, its first `limit` bytes
    read; one row with no text for a binary file. `check` is called between rows."""
    texts = Source(fd, limit).texts()
    if texts is None:
        yield tokens.title_of(rel, ""), ""
        return
    runs = Runs()
    head = ""
    title: str | None = None
    body: list[str] = []
    size = rows = 0
    for text, last in texts:
        if len(head) < TITLE_HEAD:
            head += text[: TITLE_HEAD - len(head)]
        piece = tokens.expand(runs.feed(text, last))
        body.append(piece)
        size += len(piece)
        if size >= PART_CHARS and not last:
            title = title if title is not None else tokens.title_of(rel, head)
            yield title, "".join(body)
            body, size, rows = [], 0, rows + 1
            if rows == MAX_PARTS:
                return
            check()
    yield (title if title is not None else tokens.title_of(rel, head)), "".join(body)


def prepare(text: str) -> str:
    """What `parts` stores of a whole text, in one piece (its long runs dropped, its
    compound words followed by their parts)."""
    return tokens.expand(Runs().feed(text, True))
