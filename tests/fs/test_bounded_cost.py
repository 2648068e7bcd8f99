"""Generated pathological inputs for every parameter that reaches a reader or a differ.

hypothesis builds file shapes (runs of empty lines, CRLF, lone CR, one long
line, multi-byte text, in UTF-8 or UTF-16) and window/tail parameters, search
queries over files where most lines match, and edits; each call must stay
within a time and a peak-allocation bound (tracemalloc) far below what the
unbounded versions cost. The diff of an edit is checked by applying it:
whatever the shape, the patch turns the old text into the new one, both when
regions are aligned line by line and when they are shown whole.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from app.fs.change import edit as edit_mod
from app.fs.change import edit_diff
from app.fs.control import NoControl
from app.fs.reading.read import read_multiple_files, read_text_file
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.fs.text import udiff
from app.security import Root
from app.tools.base import Cancelled
from tests.kit import roots_toml, secure_root

BUDGET = 1 << 20
CAP = 65536
TIME_BOUND_S = 3.0
PEAK_BOUND = 48 << 20  # traced allocations (read budgets: 1 MiB; fetch: 8 MiB)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Root]:
    folder = tmp_path_factory.mktemp("shapes")
    yield secure_root(folder, permissions=["read", "write"], max_read_bytes=BUDGET)


def bounded(fn: Callable[[], Any]) -> Any:
    tracemalloc.start()
    t0 = time.process_time()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    spent = time.process_time() - t0
    assert spent < TIME_BOUND_S, spent
    assert peak < PEAK_BOUND, peak
    return out


PIECES = [b"\n", b"\r\n", b"\r", b"x", b"\xc3\xa9", b"a\n", b"\n\r"]
shapes = st.lists(
    st.tuples(st.sampled_from(PIECES), st.integers(1, 1 << 19)), min_size=1, max_size=6
).map(lambda runs: b"".join(p * n for p, n in runs)[: BUDGET + 4096])


def _write(root: Root, name: str, data: bytes, utf16: bool) -> None:
    if utf16:
        data = b"\xff\xfe" + data.decode("utf-8", "replace").encode("utf-16-le")
    Path(root.real, name).write_bytes(data)


SLOW = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SLOW
@given(data=shapes, utf16=st.booleans(), start=st.integers(1, 10**6),
       span=st.integers(0, 10**6), tail=st.none() | st.integers(1, 10**6))
def test_read_text_file_is_bounded_whatever_the_shape(
    root: Root, data: bytes, utf16: bool, start: int, span: int, tail: int | None
) -> None:
    _write(root, "shape.txt", data, utf16)
    try:
        res = bounded(lambda: read_text_file(root, "shape.txt", start=start, end=start + span,
                                             tail=tail, cap=CAP))
    except Exception as exc:  # the budget may refuse a window: a clear error, bounded too
        assert type(exc).__name__ == "TooLarge", exc
        return
    assert len(res.content) <= CAP


@settings(SLOW, max_examples=10)
@given(data=shapes)
def test_read_multiple_files_is_bounded_whatever_the_shape(root: Root, data: bytes) -> None:
    _write(root, "many.txt", data, False)
    res = bounded(lambda: read_multiple_files(root, ["many.txt"] * 8, cap=CAP,
                                              control=NoControl()))
    assert res.returned >= 1


# One-byte queries match most lines of the shapes; the longer ones overlap themselves
# (within a line, across a line break, in any case), what the literal matchers' listed
# windows must not turn quadratic.
QUERIES = ["a", "x", "\u00e9", "A", "\r", "aa", "a\na", "\n\n", "xa" * 8, "A" * 40]


@SLOW
@example(  # many false candidates first (the rare-byte anchor is given up), then overlaps
    # across lines: re-listing the window at each line took 3 ms a line, 75 s here
    data=(b"\n" * 40 + b"a\na\n") * 20 + b"a\n" * (1 << 16), query="a\na",
    case_sensitive=True, offset=10**9, regex=False, context=0, mode="content")
@example(  # without case, overlapping densely (each byte starts a match); within the budget
    data=(b"a" * 200 + b"\n") * 1700, query="A" * 40, case_sensitive=False, offset=0,
    regex=False, context=0, mode="count")
@given(data=shapes, query=st.sampled_from(QUERIES),
       case_sensitive=st.booleans(), offset=st.sampled_from([0, 10, 10**9]),
       regex=st.booleans(), context=st.sampled_from([0, 1, 10]),
       mode=st.sampled_from(["content", "files_with_matches", "count"]))
def test_search_text_is_bounded_whatever_the_shape(
    root: Root, data: bytes, query: str, case_sensitive: bool, offset: int, regex: bool,
    context: int, mode: str,
) -> None:
    _write(root, "hay.txt", data * 8, False)  # up to 8 MiB: more than the call's budget below
    if regex:
        query = {"a": "a+", "x": "(x|a)*x", "A": "[aA].?", "\r": "\\r$", "aa": "(a|aa)+$",
                 "a\na": "a.?a", "\n\n": "^$", "A" * 40: "(?i)a{40}"}.get(query, query)
    res = bounded(lambda: search_text(root, TextOptions(
        query=query, file_glob="hay.txt", case_sensitive=case_sensitive, offset=offset,
        limit=50, cap=CAP, file_limit=16 << 20, budget=4 << 20,
        regex=regex, context=context, output_mode=mode), NoControl()))
    assert res.returned <= 50


def test_a_search_stops_at_its_cpu_time_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.fs.search import searcher

    # No time at all, the clock looked at after every byte: the first file is searched,
    # then the call stops before the second.
    monkeypatch.setattr(searcher, "MAX_CPU_S", 0.0)
    monkeypatch.setattr(searcher, "CLOCK_EVERY", 1)
    folder = tmp_path / "slow"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text("hit\n")
    slow = secure_root(folder, permissions=["read"], max_read_bytes=BUDGET)
    res = search_text(slow, TextOptions(query="h.t", file_glob="*", case_sensitive=True,
                                        offset=0, limit=50, cap=CAP, file_limit=BUDGET,
                                        budget=BUDGET, regex=True), NoControl())
    assert res.truncated and res.examined_files == 1
    assert [m.path for m in res.matches or []] == ["a.txt"]
    assert res.note and "stopped after 0 s of CPU" in res.note
    assert "'b.txt' and the files after it were not examined" in res.note


def test_a_search_stopped_by_matching_lines_says_so(root: Root) -> None:
    Path(root.real, "dense.txt").write_bytes(b"a\n" * 200_000)
    res = search_text(root, TextOptions(query="a", file_glob="dense.txt", case_sensitive=True,
                                        offset=10**9, limit=50, cap=CAP, file_limit=1 << 20,
                                        budget=1 << 20), NoControl())
    assert res.truncated and res.note and "each matching line counting" in res.note


# --- the edit's diff

lines_of = st.lists(st.sampled_from(["a", "b", "value 7", "", "\r", "x y"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(words=lines_of, trailing=st.booleans(), cuts=st.lists(
    st.tuples(st.floats(0, 1), st.integers(1, 12), st.sampled_from(["", "n\n", "\n", "q"])),
    min_size=1, max_size=5), coarse=st.booleans())
def test_the_diff_turns_the_old_text_into_the_new(
    words: list[str], trailing: bool, cuts: list[tuple[float, int, str]], coarse: bool,
) -> None:
    before = "\n".join(words) + ("\n" if trailing else "")
    # (A file CRLF throughout gets CRLF in new text: the simple model below does not.)
    assume("\r\n" not in before or before.count("\r\n") != before.count("\n"))
    edits, text = [], before
    for at, width, new in cuts:
        i = int(at * len(text))
        old = text[i : i + width]
        first = text.find(old)
        if not old or text.find(old, first + 1) >= 0:
            continue
        edits.append(edit_mod.TextEdit(old_text=old, new_text=new))
        text = text[:first] + new + text[first + len(old) :]
    if not edits:
        return
    after, spans, _ = edit_mod.apply_tracked(before, edits, "f")
    assert after == text
    saved = udiff.PAIR_LIMIT
    udiff.PAIR_LIMIT = 0 if coarse else saved  # 0: every region shown whole
    try:
        diff, cut, _, _ = edit_diff.bounded_diff(before, after, spans, "f", 10**9, NoControl())
    finally:
        udiff.PAIR_LIMIT = saved
    assert not cut
    assert _patch(before, diff) == after


def _patch(before: str, diff: str) -> str:
    """Apply a unified diff made by bounded_diff, checking every context and removed line."""
    src = udiff.lines(before)
    rows: list[str] = []
    for row in udiff.lines(diff)[2:]:  # "\n" only: lines may hold a lone "\r"
        if row.startswith("\\ No newline"):
            rows[-1] = rows[-1][:-1]
        else:
            rows.append(row)
    out: list[str] = []
    i = 0
    for row in rows:
        if row.startswith("@@"):
            old = row.split()[1][1:]
            start, _, length = old.partition(",")
            s0 = int(start) - 1 if (length or "1") != "0" else int(start)
            out += src[i:s0]
            i = s0
        elif row[0] in " -":
            assert src[i] == row[1:], (src[i], row)
            if row[0] == " ":
                out.append(src[i])
            i += 1
        else:
            out.append(row[1:])
    return "".join(out + src[i:])


class _CancelAfter:
    def __init__(self, n: int) -> None:
        self.n = n

    def check(self) -> None:
        self.n -= 1
        if self.n < 0:
            raise Cancelled()

    def progress(self, *args: object) -> None:
        return None


def test_a_cancelled_edit_stops_and_writes_nothing(root: Root) -> None:
    path = Path(root.real, "rep.txt")
    text = "".join(f"value {k % 150}\n" for k in range(20000))
    path.write_text(text)
    edits = [edit_mod.TextEdit(old_text=f"value {k % 150}\nvalue {(k + 1) % 150}\nvalue "
                               f"{(k + 2) % 150}\nvalue {(k + 3) % 150}\n", new_text="x\n")
             for k in range(0, 150, 10)]
    edits = [e for e in edits if text.count(e.old_text) == 1] or [
        edit_mod.TextEdit(old_text=text, new_text="y\n")]
    with pytest.raises(Cancelled):  # cancelled while the diff is made
        edit_mod.edit_file(root, "rep.txt", edits, max_output_chars=CAP, dry_run=True,
                           control=_CancelAfter(1))
    with pytest.raises(Cancelled):  # cancelled before the write
        edit_mod.edit_file(root, "rep.txt", edits, max_output_chars=CAP, control=_CancelAfter(0))
    assert path.read_text() == text


def test_an_edit_of_a_repetitive_file_is_bounded(root: Root) -> None:
    # 14k lines from 150 values: difflib over the whole file took ~20 s.
    rnd = random.Random(0)
    text = "".join(f"value {rnd.randrange(150)}\n" for k in range(14000))
    Path(root.real, "rep14k.txt").write_text(text)
    edits = [edit_mod.TextEdit(old_text=text[:200], new_text="first\n"),
             edit_mod.TextEdit(old_text=text[-200:], new_text="last\n")]
    res = bounded(lambda: edit_mod.edit_file(root, "rep14k.txt", edits, max_output_chars=CAP,
                                             dry_run=True))
    assert res.diff.startswith("--- a/rep14k.txt")


def test_fetch_of_a_file_of_control_characters_is_bounded(tmp_path: Path) -> None:
    # Each \x01 is six characters of JSON: a whole-document dump was a 48 MB string.
    from app.corpus.deep_research import fetch
    from app.registry import Registry

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ctrl.txt").write_bytes(b"\x01" * (8 << 20))
    cfg = tmp_path / "roots.toml"
    cfg.write_text(roots_toml(("d", folder, "reference", {"max_read_bytes": 8 << 20}),
                              audit_log=tmp_path / "audit.log", extra="search_fetch_tools = true"))
    snap = Registry(str(cfg)).current
    doc = bounded(lambda: fetch(snap, "d/ctrl.txt"))
    assert doc["metadata"]["truncated"] is True
