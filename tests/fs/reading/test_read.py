"""read_text_file against a reference: windows, tails, EOF fields, budget, output cap.

The reference decodes the whole file and splits it; the reader under test
never does. Hypothesis drives random texts, encodings, windows and chunk
sizes (chunks of a few bytes put line breaks, BOMs and multi-byte characters
on every boundary), in both modes: the file fits in the budget (read whole)
or not (streamed).
"""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import TooLarge
from app.fs.reading.read import OUTPUT_MARK, READ_MARK, read_text_file
from app.fs.text import textio
from app.security import Root
from tests.fs.readkit import small_root
from tests.kit import secure_root

BOMS = {
    "utf-8": b"",
    "utf-8-sig": b"\xef\xbb\xbf",
    "utf-16-le": b"\xff\xfe",
    "utf-16-be": b"\xfe\xff",
    "utf-32-le": b"\xff\xfe\x00\x00",
    "utf-32-be": b"\x00\x00\xfe\xff",
}
CAP = 1 << 20


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readtext")


def _root(folder: Path, budget: int) -> Root:
    return secure_root(folder, name="t", role="reference", max_read_bytes=budget)


def _write(folder: Path, encoding: str, text: str) -> bytes:
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    data = BOMS[encoding] + text.encode(codec)
    (folder / "f.txt").write_bytes(data)
    return data


def reference(text: str) -> list[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [x[:-1] if x.endswith("\r") else x for x in lines]


def _numbered(first: int, lines: list[str]) -> str:
    return "\n".join(f"{first + i} | {t}" for i, t in enumerate(lines))


line_text = st.text(alphabet=st.sampled_from("ab é✓中\r\t"), max_size=12)
texts = st.tuples(st.lists(line_text, max_size=12), st.booleans()).map(
    lambda t: "\n".join(t[0]) + ("\n" if t[1] and t[0] else ""))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, encoding=st.sampled_from(sorted(BOMS)), start=st.integers(1, 15),
       span=st.integers(0, 15), chunk=st.sampled_from([4, 8, 12, 64, 1 << 16]))
def test_window_matches_the_reference_when_the_file_fits(
    folder: Path, text: str, encoding: str, start: int, span: int, chunk: int
) -> None:
    data = _write(folder, encoding, text)
    lines = reference(text)
    with mock.patch.object(textio, "CHUNK", chunk):
        r = read_text_file(_root(folder, 1 << 20), "f.txt", start=start, end=start + span,
                           tail=None, cap=CAP)
    total = len(lines)
    assert r.sha256 == hashlib.sha256(data).hexdigest()
    if encoding != "utf-8":
        assert r.encoding == encoding
    if start > total:
        assert (r.content, r.start_beyond_eof, r.end_line, r.eof_reached) == ("", True, None, True)
        assert r.total_lines == total and not r.has_more and r.next_start_line is None
        return
    want = lines[start - 1 : start + span]
    assert r.content == _numbered(start, want)
    assert r.end_line == start + len(want) - 1 and not r.start_beyond_eof
    more = start + span < total
    assert r.has_more is more and r.eof_reached is (not more)
    assert r.next_start_line == (start + span + 1 if more else None)
    assert r.total_lines == (None if more else total)


# Lines before the generated text, so that a streamed read has more than its head to go
# through: the budget then is the head plus what the wanted lines take, never the whole file.
PAD = "p" * 79 + "\n"
PAD_LINES = 2 * textio.HEAD // len(PAD) + 4


def _encoded_len(encoding: str, text: str) -> int:
    return len(text.encode("utf-8" if encoding == "utf-8-sig" else encoding))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, encoding=st.sampled_from(sorted(BOMS)), n=st.integers(1, 15),
       chunk=st.sampled_from([4, 8, 12, 1 << 16]), streamed=st.booleans())
def test_tail_matches_the_reference(
    folder: Path, text: str, encoding: str, n: int, chunk: int, streamed: bool
) -> None:
    text = PAD * PAD_LINES + text
    data = _write(folder, encoding, text)
    lines = reference(text)
    want = lines[-n:]
    assert want  # the padding guarantees lines to show
    # What the wanted lines take, with the break before them and a CR each at most.
    need = _encoded_len(encoding, "\n".join(want) + "\r\n" * (len(want) + 1))
    budget = textio.HEAD + need + 16 if streamed else 1 << 20
    assert (budget < len(data)) is streamed
    with mock.patch.object(textio, "CHUNK", chunk):
        # The wanted lines fit in the budget: the tail must be served, whole.
        r = read_text_file(_root(folder, budget), "f.txt", start=1, end=1, tail=n, cap=CAP)
    shown = [x.split(" | ", 1) for x in r.content.split("\n")] if r.content else []
    assert [t for _, t in shown] == want
    if not streamed:
        # numbered from the start: the file is in memory
        assert [int(k) for k, _ in shown] == list(range(len(lines) - len(want) + 1,
                                                        len(lines) + 1))
        assert r.total_lines == len(lines)
    else:
        assert [int(k) for k, _ in shown] == list(range(-len(shown), 0))
        assert r.sha256 is None and "count from the end" in (r.note or "")
    assert r.eof_reached and not r.has_more and r.next_start_line is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, encoding=st.sampled_from(sorted(BOMS)), start=st.integers(1, 15),
       span=st.integers(0, 15), chunk=st.sampled_from([4, 8, 64]), cut=st.integers(1, 40))
def test_a_streamed_window_is_correct_as_far_as_it_goes(
    folder: Path, text: str, encoding: str, start: int, span: int, chunk: int, cut: int
) -> None:
    """Whatever a budget-limited read returns is exact, and it never reads past the budget."""
    data = _write(folder, encoding, text)
    lines = reference(text)
    budget = max(len(data) - cut, 4)
    root = _root(folder, budget)
    # Byte offset just past each line's break (index -1: the start of the text).
    ends = {-1: len(BOMS[encoding])}
    for i, raw in enumerate(text.split("\n")[: len(lines)]):
        ends[i] = ends[i - 1] + _encoded_len(encoding, raw + "\n")
    reads: list[int] = []
    real_pread = os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        got = real_pread(fd, n, off)
        reads.append(len(got))
        return got

    with mock.patch.object(textio, "CHUNK", chunk), mock.patch.object(textio.os, "pread",
                                                                      counting):
        try:
            r = read_text_file(root, "f.txt", start=start, end=start + span, tail=None, cap=CAP)
        except TooLarge as exc:
            assert f"{budget} bytes (max_read_bytes of root 't')" in exc.message
            # Refused only when the first wanted line does not start within the budget.
            begin = ends[start - 2] if start <= len(lines) else len(data)
            assert begin >= budget - 8
            return
        finally:
            assert sum(reads) <= budget
    if r.start_beyond_eof:
        assert start > len(lines)
        return
    shown = [x.split(" | ", 1) for x in r.content.split("\n")]
    # Every wanted line that ends (break included) well inside the budget is served whole.
    whole = [i for i in range(start, min(start + span, len(lines)) + 1)
             if ends[i - 1] + 8 <= budget]
    assert [int(k) for k, t in shown if not t.endswith(READ_MARK)][: len(whole)] == whole
    for k, t in shown:
        i = int(k)
        if t.endswith(READ_MARK):  # a line the budget ended inside: a true prefix of it
            assert lines[i - 1].startswith(t[: -len(READ_MARK)].rstrip("\r"))
        else:
            assert t == lines[i - 1]
    assert int(shown[0][0]) == start
    if r.has_more:
        assert r.next_start_line == int(shown[-1][0]) + 1
    if r.eof_reached:
        assert r.total_lines == len(lines)


def test_walking_next_start_line_reads_the_whole_file_once(tmp_path: Path) -> None:
    body = "".join(f"row {i}\n" for i in range(1, 1001))
    root = small_root(tmp_path, {"f.txt": body}, max_read=1 << 20)
    got: list[str] = []
    start = 1
    while True:
        r = read_text_file(root, "f.txt", start=start, end=start + 99, tail=None, cap=2000)
        got += r.content.split("\n")
        if not r.has_more:
            break
        assert r.next_start_line is not None  # has_more
        start = r.next_start_line
    assert got == [f"{i} | row {i}" for i in range(1, 1001)]
    assert r.total_lines == 1000 and r.eof_reached


def test_window_beyond_the_budget_is_refused_naming_the_limit(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"f.txt": "".join(f"{i}\n" for i in range(100_000))},
                      max_read=4096)
    with pytest.raises(TooLarge) as exc:
        read_text_file(root, "f.txt", start=50_000, end=50_001, tail=None, cap=CAP)
    assert exc.value.message == (
        "line 50000 of 'f.txt' is beyond the first 4096 bytes (max_read_bytes of root 'r') "
        "that one call may read; read the end of the file with tail=N")
    near = read_text_file(root, "f.txt", start=10, end=11, tail=None, cap=CAP)
    assert near.content == "10 | 9\n11 | 10" and near.sha256 is None


def test_a_window_that_runs_into_the_budget_stops_there_and_says_so(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"f.txt": "".join(f"{i:04d}\n" for i in range(5000))},
                      max_read=4096)
    r = read_text_file(root, "f.txt", start=1, end=5000, tail=None, cap=CAP)
    lines = r.content.split("\n")
    assert lines[0] == "1 | 0000" and r.has_more and r.next_start_line == len(lines) + 1
    assert "read limit of 4096 bytes" in (r.note or "") and "tail=N" in (r.note or "")


@pytest.mark.parametrize(("cap", "first_line_len"), [(1000, 5000), (5000, 300_000)])
def test_an_overlong_first_line_is_cut_with_a_marker(tmp_path: Path, cap: int,
                                                     first_line_len: int) -> None:
    root = small_root(tmp_path, {"f.txt": "é" * first_line_len + "\nnext\n"}, max_read=1 << 20)
    r = read_text_file(root, "f.txt", start=1, end=5, tail=None, cap=cap)
    assert r.content.startswith("1 | éé") and r.content.endswith(OUTPUT_MARK)
    assert r.has_more and r.next_start_line == 2
    assert len(r.model_dump_json()) <= cap
    after = read_text_file(root, "f.txt", start=2, end=5, tail=None, cap=cap)
    assert after.content == "2 | next" and after.eof_reached


def test_json_escaping_counts_against_the_output_cap(tmp_path: Path) -> None:
    # Each control character takes six characters once escaped (\u0001).
    root = small_root(tmp_path, {"f.txt": ("\x01" * 50 + "\n") * 200}, max_read=1 << 20)
    r = read_text_file(root, "f.txt", start=1, end=200, tail=None, cap=4000)
    import json

    assert len(json.dumps(r.model_dump(), ensure_ascii=False, separators=(",", ":"))) <= 4000
    assert r.has_more and r.next_start_line == len(r.content.split("\n")) + 1


def test_the_tail_of_a_file_whose_last_line_exceeds_the_budget_shows_its_end(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path, {"f.txt": "first\n" + "z" * 50_000 + "END"}, max_read=8192)
    r = read_text_file(root, "f.txt", start=1, end=1, tail=3, cap=2000)
    assert r.content.startswith("-1 | [... line cut: only its end is shown] zzz")
    assert r.content.endswith("zzzEND")


# -- memory: a window or tail of a huge file costs what it shows, not the file ---------


@pytest.fixture
def huge(tmp_path: Path) -> Iterator[Path]:
    """A 1 GiB sparse file: text at the start and the end, a hole in between."""
    path = tmp_path / "r" / "huge.log"
    path.parent.mkdir()
    head = "".join(f"head {i}\n" for i in range(1, 1001)).encode()
    tail = "".join(f"tail {i}\n" for i in range(1, 1001)).encode()
    with open(path, "wb") as f:
        f.write(head)
        f.truncate((1 << 30) - len(tail))
        f.seek(0, os.SEEK_END)
        f.write(tail)
    yield path
    path.unlink()


def test_window_and_tail_of_a_huge_file_stay_small_in_memory(huge: Path) -> None:
    root = _root(huge.parent, 8 << 20)
    tracemalloc.start()
    try:
        w = read_text_file(root, "huge.log", start=100, end=120, tail=None, cap=65536)
        t = read_text_file(root, "huge.log", start=1, end=1, tail=5, cap=65536)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert w.content.split("\n")[0] == "100 | head 100" and w.has_more
    assert t.content == "\n".join(f"-{5 - i} | tail {996 + i}" for i in range(5))
    assert peak < 4 << 20, peak  # a few chunks, not the 8 MiB budget, not the file
