"""textio's parts on their own, each against a model written apart from the code.

The read tests (test_read_text.py) drive these through read_text_file; here every
function is held to its own contract: BOM sniffing and the NUL rule at the 4 KiB
edge, the encoding decision on samples cut anywhere, decode/encode round trips
in every supported encoding, a `Source` that never reads past its budget and says
when it stopped, and line breaks found only on code-unit boundaries.
"""

from __future__ import annotations

import codecs
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.fs.text import tail, textio

# The model's own table: (BOM, encoding, code unit), spelled out from the Unicode standard.
REF_BOMS = [
    (b"\xff\xfe\x00\x00", "utf-32-le", 4),
    (b"\x00\x00\xfe\xff", "utf-32-be", 4),
    (b"\xef\xbb\xbf", "utf-8-sig", 1),
    (b"\xff\xfe", "utf-16-le", 2),
    (b"\xfe\xff", "utf-16-be", 2),
]
NEWLINES = {
    "utf-8-sig": b"\n",
    "utf-16-le": b"\n\x00",
    "utf-16-be": b"\x00\n",
    "utf-32-le": b"\n\x00\x00\x00",
    "utf-32-be": b"\x00\x00\x00\n",
}
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
BOM_OF = {enc: bom for bom, enc, _ in REF_BOMS} | {"utf-8": b""}
UNIT_OF = {enc: unit for _, enc, unit in REF_BOMS} | {"utf-8": 1}


def ref_sniff(head: bytes) -> tuple[str | None, int, int, bool]:
    """The longest BOM the head starts with decides; NULs count only without a wide BOM."""
    matches = [(bom, enc, unit) for bom, enc, unit in REF_BOMS if head.startswith(bom)]
    if not matches:
        return None, 0, 1, 0 in head[:4096]
    bom, enc, unit = max(matches, key=lambda m: len(m[0]))
    return enc, len(bom), unit, unit == 1 and 0 in head[len(bom) : 4096]


@contextmanager
def memfile(data: bytes) -> Iterator[int]:
    fd = os.memfd_create("textio")
    try:
        os.write(fd, data)
        yield fd
    finally:
        os.close(fd)


# -- the BOM table and sniffing -------------------------------------------------------------


def test_the_bom_table_is_the_standards() -> None:
    assert tuple(REF_BOMS) == textio.BOMS
    assert tuple((b, e) for b, e, u in REF_BOMS if u > 1) == textio.WIDE_BOMS


@pytest.mark.parametrize(("encoding", "newline"), sorted(NEWLINES.items()))
def test_the_newline_is_encoded_in_the_boms_encoding(encoding: str, newline: bytes) -> None:
    bom = BOM_OF[encoding]
    assert textio.sniff(bom + b"x").newline == newline
    assert textio.sniff(b"x").newline == b"\n"
    assert textio.codec_of(encoding) == ("utf-8" if encoding == "utf-8-sig" else encoding)


heads = st.tuples(
    st.sampled_from([b""] + [bom for bom, _, _ in REF_BOMS]),
    st.binary(max_size=24),
    st.integers(0, 4200),
    st.sampled_from([b"", b"\x00", b"a\x00", b"\x00\x00"]),
).map(lambda t: t[0] + t[1] + b"a" * t[2] + t[3])


@settings(max_examples=400, deadline=None)
@given(head=heads)
def test_sniff_matches_the_model(head: bytes) -> None:
    sn = textio.sniff(head)
    assert (sn.bom_encoding, sn.base, sn.unit, sn.binary) == ref_sniff(head)


@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])
@pytest.mark.parametrize(("at", "binary"), [(4094, True), (4095, True), (4096, False)])
def test_a_nul_counts_up_to_byte_4095_of_the_file(bom: bytes, at: int, binary: bool) -> None:
    data = bom + b"a" * (at - len(bom)) + b"\x00" + b"a" * 10
    assert data.index(0) == at
    assert textio.sniff(data).binary is binary


@pytest.mark.parametrize(("bom", "enc", "unit"), REF_BOMS)
def test_a_wide_bom_is_text_whatever_its_nuls(bom: bytes, enc: str, unit: int) -> None:
    sn = textio.sniff(bom + b"a\x00" * 32)
    assert (sn.bom_encoding, sn.base, sn.unit) == (enc, len(bom), unit)
    assert sn.binary is (unit == 1)


# -- deciding the encoding ------------------------------------------------------------------

NO_BOM = textio.sniff(b"plain")
chars = st.text(alphabet=st.sampled_from("ab \n\r\té✓中😀"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=chars, cuts=st.lists(st.integers(0, 200), max_size=4))
def test_utf8_cut_anywhere_is_still_utf8_when_the_cut_is_not_final(
    text: str, cuts: list[int]
) -> None:
    data = text.encode("utf-8")
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    # Samples as a streamed read takes them: each may end inside a character (not final).
    if all(_starts_clean(p) for p in pieces):
        assert textio.decide(NO_BOM, [(p, False) for p in pieces]) == "utf-8"
    assert textio.decide(NO_BOM, [(data, True)]) == "utf-8"


def _starts_clean(piece: bytes) -> bool:
    return not piece or piece[0] & 0xC0 != 0x80


def test_a_character_cut_at_the_end_is_utf8_only_when_more_may_follow() -> None:
    cut = "ok ✓".encode()[:-1]
    assert textio.decide(NO_BOM, [(cut, False)]) == "utf-8"
    # As a complete sample the cut bytes are not UTF-8; their end is a GB18030 character.
    assert textio.decide(NO_BOM, [(cut, True)]) == "gb18030"


def test_gb18030_then_utf8_with_replacement() -> None:
    gb = "配置文件".encode("gb18030")
    assert textio.decide(NO_BOM, [(b"plain", True), (gb, True)]) == "gb18030"
    assert textio.decide(NO_BOM, [(b"\x80\xff\xfe\x81", True)]) == "utf-8"
    assert textio.decide(NO_BOM, [(gb, True), (b"\xff", True)]) == "utf-8"
    assert textio.decide(NO_BOM, []) == "utf-8"


@pytest.mark.parametrize(("bom", "enc", "unit"), REF_BOMS)
def test_a_bom_decides_whatever_the_samples(bom: bytes, enc: str, unit: int) -> None:
    assert textio.decide(textio.sniff(bom), [("配".encode("gb18030"), True)]) == enc


# -- decoding -------------------------------------------------------------------------------

line_chars = st.text(alphabet=st.sampled_from("ab \t\ré✓中😀\ufeff"), max_size=30)


@settings(max_examples=300, deadline=None)
@given(text=line_chars, encoding=st.sampled_from(ENCODINGS))
def test_decode_inverts_encode_in_every_encoding(text: str, encoding: str) -> None:
    raw = text.encode(textio.codec_of(encoding))
    want = text[:-1] if text.endswith("\r") else text
    assert textio.decode(raw, encoding) == want
    # A line the reader cut short keeps its CR: the break may follow.
    assert textio.decode(raw, encoding, complete=False) == text


@settings(max_examples=300, deadline=None)
@given(text=line_chars.filter(bool), encoding=st.sampled_from(ENCODINGS), drop=st.integers(1, 3))
def test_a_line_cut_inside_its_last_character(text: str, encoding: str, drop: int) -> None:
    raw = text.encode(textio.codec_of(encoding))
    last = len(text[-1].encode(textio.codec_of(encoding)))
    if drop >= last:
        return
    cut = raw[:-drop]
    # Cut short by the reader: the partial character is dropped, nothing invented.
    assert textio.decode(cut, encoding, complete=False) == text[:-1]
    # A complete line that ends mid-character shows the damage.
    assert textio.decode(cut, encoding).endswith("\ufffd")


def test_decode_replaces_bytes_the_encoding_does_not_take() -> None:
    assert textio.decode(b"a\xffb", "utf-8") == "a\ufffdb"
    assert textio.decode(b"a\xffb\r", "utf-8-sig") == "a\ufffdb"


# -- Source: the byte budget ----------------------------------------------------------------

reads = st.lists(st.tuples(st.integers(0, 9000), st.integers(0, 5000)), max_size=6)


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 9000), budget=st.integers(1, 9000), plan=reads)
def test_a_source_serves_exact_bytes_and_never_reads_past_its_budget(
    size: int, budget: int, plan: list[tuple[int, int]]
) -> None:
    data = bytes((i * 7 + i // 251) % 256 for i in range(size))
    got_total = 0
    real = os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        nonlocal got_total
        out = real(fd, n, off)
        got_total += len(out)
        return out

    with memfile(data) as fd, mock.patch.object(textio.os, "pread", counting):
        src = textio.Source.open(fd, size, budget)
        assert src.whole is (size <= budget)
        if src.whole:
            assert src.data == data and src.size == size
        else:
            assert src.head == data[: min(textio.HEAD, budget)] and src.size == size
        cut_before = False
        for offset, n in plan:
            got = src.read(offset, n)
            want = data[offset : offset + n]
            assert want.startswith(got)
            if src.whole or offset + n <= len(src.head):
                assert got == want
            short = len(got) < len(want)
            # Short only when the budget is spent; then it says so.
            assert not short or (src.exhausted and src.used == budget)
            if not short and not cut_before and offset + n <= size:
                assert not src.exhausted
            cut_before = cut_before or src.exhausted
        assert got_total <= budget
        if not src.whole:
            assert src.used == got_total


def test_a_read_that_fits_the_budget_exactly_is_not_cut() -> None:
    data = bytes(range(256)) * 40
    with memfile(data) as fd:
        src = textio.Source.open(fd, len(data), 5000)
        assert src.read(0, 4096) == data[:4096] and src.used == 4096
        assert src.read(4096, 904) == data[4096:5000]
        assert (src.used, src.exhausted) == (5000, False)
        assert src.read(5000, 1) == b"" and src.exhausted


def test_the_head_is_served_again_without_a_second_read() -> None:
    data = bytes(range(256)) * 40
    with memfile(data) as fd:
        src = textio.Source.open(fd, len(data), 6000)
        with mock.patch.object(textio.os, "pread", side_effect=AssertionError("read twice")):
            assert src.read(0, 4096) == data[:4096]
            assert src.read(100, 50) == data[100:150]
        # Straddling the head: the cached part, then the file.
        assert src.read(4000, 200) == data[4000:4200]
        assert src.used == 4096 + 104


def test_a_file_that_grew_past_the_budget_is_streamed() -> None:
    data = b"x" * 3000
    with memfile(data) as fd:
        # fstat said 1000 bytes; the file has 3000 now, over the 2000-byte budget: one
        # byte past the budget tells, and what was read is the head.
        src = textio.Source.open(fd, 1000, 2000)
        assert not src.whole
        assert src.head == data[:2000] and src.size == 2001 and src.used == 2000
        assert src.read(1990, 100) == data[1990:2000] and src.exhausted


def test_a_file_that_shrank_is_read_whole_at_its_new_size() -> None:
    with memfile(b"abc") as fd:
        src = textio.Source.open(fd, 10, 100)
        assert src.whole and src.data == b"abc" and src.size == 3


@pytest.mark.parametrize("limit", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20])
def test_pread_all_reads_up_to_its_limit(limit: int) -> None:
    data = os.urandom((2 << 20) + 17)
    calls = 0
    real = os.pread

    def bounded(fd: int, n: int, off: int) -> bytes:
        nonlocal calls
        calls += 1
        assert calls <= 8, "pread_all does not advance"  # fail fast instead of filling memory
        return real(fd, n, off)

    with memfile(data) as fd, mock.patch.object(textio.os, "pread", bounded):
        assert textio.pread_all(fd, limit) == data[:limit]


# -- line breaks on code-unit boundaries ----------------------------------------------------


def ref_breaks(buf: bytes, token: bytes, unit: int, start: int = 0) -> list[int]:
    t = len(token)
    return [i for i in range(start, len(buf) - t + 1)
            if (i - start) % unit == 0 and buf[i : i + t] == token]


wide = st.sampled_from(sorted(NEWLINES.items()))
noisy = st.lists(st.sampled_from([b"\n", b"\x00", b"a", b"\xd8", b"\xff"]), max_size=40).map(
    b"".join)


@settings(max_examples=400, deadline=None)
@given(case=wide, buf=noisy, pos=st.integers(0, 44))
def test_find_break_finds_the_next_aligned_break(
    case: tuple[str, bytes], buf: bytes, pos: int
) -> None:
    enc, token = case
    unit = UNIT_OF[enc]
    pos -= pos % unit
    after = [i for i in ref_breaks(buf, token, unit) if i >= pos]
    assert textio.find_break(buf, token, unit, pos) == (after[0] if after else -1)


@settings(max_examples=400, deadline=None)
@given(case=wide, buf=noisy, start=st.integers(0, 12))
def test_count_breaks_counts_the_aligned_breaks(
    case: tuple[str, bytes], buf: bytes, start: int
) -> None:
    enc, token = case
    unit = UNIT_OF[enc]
    assert textio.count_breaks(buf, token, unit, start) == len(ref_breaks(buf, token, unit,
                                                                          start))


NL16BE, NL32LE = "\n".encode("utf-16-be"), "\n".encode("utf-32-le")


@pytest.mark.parametrize(("buf", "token", "start", "count"), [
    (b"a" + NL32LE, NL32LE, 1, 1),
    (b"a" + NL32LE + b"\n", NL32LE, 1, 1),  # half a unit at the end is no break
    (b"abc" + NL16BE * 2 + b"\x00", NL16BE, 3, 2),
    (NL32LE[:3], NL32LE, 0, 0),
])
def test_count_breaks_counts_from_start_in_whole_code_units(
    buf: bytes, token: bytes, start: int, count: int
) -> None:
    assert textio.count_breaks(buf, token, len(token), start) == count


# -- forward: line windows ------------------------------------------------------------------


def ref_lines(body: bytes, token: bytes, unit: int) -> list[bytes]:
    """Every line of `body` (no final empty piece after a last break)."""
    out, pos = [], 0
    for i in ref_breaks(body, token, unit):
        if i >= pos:
            out.append(body[pos:i])
            pos = i + len(token)
    if pos < len(body):
        out.append(body[pos:])
    return out


def model_file(
    text: str, encoding: str, tailing: bytes, cut: int | None
) -> tuple[bytes, int, bool, textio.Sniff]:
    """A file of `text` in `encoding` with its BOM, then `tailing` (stray bytes: a break off
    the code-unit grid, half a unit); its budget (`cut` bytes short of it, or all of it),
    whether it is streamed, and how it sniffs."""
    data = BOM_OF[encoding] + text.encode(textio.codec_of(encoding)) + tailing
    budget = len(data) if cut is None else max(len(data) - cut, 1)
    return data, budget, budget < len(data), textio.sniff(data[: textio.HEAD])


noise = st.sampled_from([b"", b"\n", b"\x00", b"\n\x00", b"x\n\x00", b"\x00\n", b"\xd8"])
texts = st.lists(st.text(alphabet=st.sampled_from("ab é✓中\r"), max_size=9), max_size=14).map(
    "\n".join)


@settings(max_examples=400, deadline=None)
@given(text=texts, encoding=st.sampled_from(ENCODINGS), tailing=st.just(b"") | noise,
       start=st.integers(1, 16), keep=st.integers(0, 20),
       chunk=st.sampled_from([4, 8, 12, 1 << 16]), cut=st.one_of(st.none(), st.integers(1, 60)))
# a chunk skipped before the window whose bytes end like a break, off the UTF-16 unit grid
@example(text="\n", encoding="utf-16-le", tailing=b"x\n\x00", start=3, keep=0, chunk=8, cut=None)
def test_forward_yields_the_lines_of_the_model(
    text: str, encoding: str, tailing: bytes, start: int, keep: int, chunk: int,
    cut: int | None,
) -> None:
    data, budget, streamed, sn = model_file(text, encoding, tailing, cut)
    token, unit = sn.newline, sn.unit
    seen = data[:budget] if streamed else data
    body = seen[sn.base :] if len(seen) >= sn.base else b""
    lines = ref_lines(body, token, unit)
    ends_open = bool(body) and not _ends_with_break(body, token, unit)
    with memfile(data) as fd, mock.patch.object(textio, "CHUNK", chunk):
        src = textio.Source.open(fd, len(data), budget)
        scan = textio.Scan()
        got = list(textio.forward(src, sn, start, keep, scan))
    expect = []
    for number, raw in enumerate(lines, 1):
        last_open = number == len(lines) and ends_open
        if number < start or (streamed and last_open and not raw):
            continue
        complete = not (streamed and last_open)
        expect.append((number, raw[:keep], len(raw) > keep, complete))
    assert [(x.number, x.data, x.cut, x.complete) for x in got] == expect
    assert scan.eof is not streamed
    if not streamed:
        assert scan.lines_seen == len(lines)
    else:
        assert scan.lines_seen == len(lines) - (1 if ends_open else 0)


def _ends_with_break(body: bytes, token: bytes, unit: int) -> bool:
    return bool(ref_breaks(body, token, unit)) and ref_breaks(body, token, unit)[-1] == len(
        body) - len(token)


@pytest.mark.parametrize("chunk", [4, 8, 1 << 16])
def test_forward_counts_lines_before_the_window_without_keeping_them(chunk: int) -> None:
    data = b"".join(b"line %d\n" % i for i in range(1, 200))
    with memfile(data) as fd, mock.patch.object(textio, "CHUNK", chunk):
        src = textio.Source.open(fd, len(data), 1 << 20)
        scan = textio.Scan()
        got = list(textio.forward(src, textio.sniff(data), 150, 100, scan))
    assert [x.number for x in got] == list(range(150, 200))
    assert got[0].data == b"line 150" and (scan.lines_seen, scan.eof) == (199, True)


# -- tail: the last lines, read backwards -----------------------------------------------



@settings(max_examples=400, deadline=None)
@given(text=texts, encoding=st.sampled_from(ENCODINGS), tailing=noise, want=st.integers(1, 16),
       keep=st.integers(0, 400), chunk=st.sampled_from([4, 8, 12, 1 << 16]),
       cut=st.one_of(st.none(), st.integers(1, 400)))
def test_tail_serves_the_last_lines_of_the_model(
    text: str, encoding: str, tailing: bytes, want: int, keep: int, chunk: int,
    cut: int | None,
) -> None:
    data, budget, streamed, sn = model_file(text, encoding, tailing, cut)
    token, unit = sn.newline, sn.unit
    body = data[sn.base :] if len(data) >= sn.base else b""
    lines = ref_lines(body, token, unit)
    with memfile(data) as fd, mock.patch.object(textio, "CHUNK", chunk):
        src = textio.Source.open(fd, len(data), budget)
        room = keep if src.whole else min(keep, budget - src.used)
        t = tail.tail(src, sn, want, keep)
    assert src.used <= budget
    got = t.lines
    assert len(got) <= want
    if not lines:
        assert (got, t.total) in (([], 0), ([], None)) or [x.data for x in got] == [b""]
        return
    if got:
        # The last lines of the text, in order; the first may be its own end only.
        true = lines[-len(got) :]
        assert [x.data for x in got[1:]] == true[1:]
        assert true[0].endswith(got[0].data)
        assert got[0].cut or got[0].data == true[0]
        assert not any(x.cut for x in got[1:])
        # Never more looked at than allowed: the lines and the breaks between them.
        shown = sum(len(x.data) for x in got) + len(token) * (len(got) - 1)
        assert shown <= max(room, 0)
    if t.total is not None:
        assert t.total == len(lines)
        assert [x.number for x in got] == list(range(len(lines) - len(got) + 1, len(lines) + 1))
    else:
        # Unknown only when streamed, or when no byte could be looked at (no room).
        assert streamed or (not got and room < len(body))
        assert [x.number for x in got] == list(range(-len(got), 0))
    if not streamed and got:
        assert t.total == len(lines)
    # Enough room for the wanted lines, the break before them and a code unit of slack:
    # they are served whole.
    wanted = lines[-want:]
    need = sum(len(x) for x in wanted) + len(token) * len(wanted) + unit
    if room >= need:
        assert [x.data for x in got] == wanted and not got[0].cut


@pytest.mark.parametrize("chunk", [4, 1 << 16])
@pytest.mark.parametrize(("encoding", "ending"), [("utf-8", ""), ("utf-8", "\n"),
                                                  ("utf-16-le", "\n"), ("utf-32-be", "")])
def test_tail_of_a_streamed_file_counts_from_its_end(chunk: int, encoding: str,
                                                     ending: str) -> None:
    text = "\n".join(f"row {i}" for i in range(1, 2001)) + ending
    data = BOM_OF[encoding] + text.encode(textio.codec_of(encoding))
    with memfile(data) as fd, mock.patch.object(textio, "CHUNK", chunk):
        src = textio.Source.open(fd, len(data), 8192)
        t = tail.tail(src, textio.sniff(src.head), 3, 1 << 20)
    dec = [textio.decode(x.data, encoding) for x in t.lines]
    assert dec == ["row 1998", "row 1999", "row 2000"] and t.total is None
    assert [x.number for x in t.lines] == [-3, -2, -1]
    if chunk == 4:
        # Block by block from the end, and no further once the lines are found: the three
        # lines and the break before them, not the whole budget.
        assert src.used - len(src.head) <= len(("row 1998\n" * 4).encode(
            textio.codec_of(encoding)))


def test_tail_of_a_file_that_shrank_since_its_size_was_taken() -> None:
    data = b"x\n" * 5000
    with memfile(data) as fd:
        src = textio.Source.open(fd, 20000, 8192)  # fstat said 20000 bytes
        t = tail.tail(src, textio.sniff(src.head), 3, 1 << 20)
    assert (t.lines, t.total) == ([], None)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_tail_splits_wide_text_only_at_whole_code_units(encoding: str) -> None:
    # U+0A41 U+4E00 in UTF-16-LE is 41 0a 00 4e: a newline's bytes, off the grid.
    text = "first\n\u0a41\u4e00\u0a00\u4e0a\n"
    data = BOM_OF[encoding] + text.encode(encoding)
    with memfile(data) as fd:
        src = textio.Source.open(fd, len(data), 1 << 20)
        t = tail.tail(src, textio.sniff(data), 5, 1 << 20)
    assert [textio.decode(x.data, encoding) for x in t.lines] == [
        "first", "\u0a41\u4e00\u0a00\u4e0a"]


def test_tail_of_an_empty_text_and_of_a_lone_break() -> None:
    for data, lines in [(b"", []), (codecs.BOM_UTF8, []), (b"\n", [b""]), (b"\n\n", [b"", b""]),
                        (b"a", [b"a"]), (b"\na", [b"", b"a"])]:
        with memfile(data) as fd:
            src = textio.Source.open(fd, len(data), 100)
            t = tail.tail(src, textio.sniff(data), 5, 100)
        assert [x.data for x in t.lines] == lines and t.total == len(lines), data
        assert [x.number for x in t.lines] == list(range(1, len(lines) + 1))


def test_tail_with_no_budget_left_says_it_could_not_look() -> None:
    data = b"x" * 5000 + b"\nend\n"
    with memfile(data) as fd:
        src = textio.Source.open(fd, len(data), 4096)  # the head took it all
        t = tail.tail(src, textio.sniff(src.head), 1, 1 << 20)
    assert (t.lines, t.total) == ([], None)


@pytest.mark.parametrize(("case"), sorted(NEWLINES.items()))
@settings(max_examples=200, deadline=None)
@given(buf=noisy, end=st.integers(0, 44))
def test_rfind_break_finds_the_last_aligned_break_before_end(
    case: tuple[str, bytes], buf: bytes, end: int
) -> None:
    enc, token = case
    unit = UNIT_OF[enc]
    before = [i for i in ref_breaks(buf, token, unit) if i + len(token) <= end]
    assert tail.rfind_break(buf, token, unit, end) == (before[-1] if before else -1)


@pytest.mark.parametrize("chunk", [4, 1 << 16])
def test_a_last_line_ending_in_a_break_off_the_grid_is_still_counted(chunk: int) -> None:
    # UTF-16 text with a stray byte: its last bytes look like a break, at an odd offset.
    data = codecs.BOM_UTF16_LE + "ab".encode("utf-16-le") + b"x\n\x00"
    with memfile(data) as fd, mock.patch.object(textio, "CHUNK", chunk):
        src = textio.Source.open(fd, len(data), 1 << 20)
        scan = textio.Scan()
        assert list(textio.forward(src, textio.sniff(data), 5, 100, scan)) == []
    assert (scan.lines_seen, scan.eof) == (1, True)

