"""Building the index costs what a call may cost, whatever the files hold
(app/fs/index/fulltext/prepare.py).

Two kinds of checks:
- every hostile shape of `benchmarks/worst_cases_index.py` (one 8 MiB word, a word
  of millions of parts, runs of combining marks or private-use characters, rare
  case folds, zero-width runs, random bytes without a NUL, millions of distinct
  words, many tiny files, deep paths, a module of blank lines) is indexed in a
  fresh child process, with CPU and address-space limits, and its first search
  stays under 64 MiB of peak growth and seconds of CPU; so does the search
  without an index (app/fs/index/fulltext/documents.py), which reads every file;
- properties of the class, generated: the words handed to SQLite are what the
  whole text would give whatever the windows, no token SQLite makes is longer
  than MAX_RUN (SQLite's own tokenizer is the judge), the encoding is the one
  `fetch` decides, and the word cache stays within its bound.
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.corpus import deep_research as dr
from app.fs.index.fulltext import documents, fts, prepare, refresh, tokens
from app.fs.text import textio
from app.registry import Registry
from benchmarks.worst_cases_index import CASES, build, run_case
from tests.fs.conftest import CancelAfter, Cancelled
from tests.kit import roots_toml

RSS_BOUND_MIB = 64.0
CPU_BOUND_S = 40.0  # generous: a shared machine; the slowest shape takes a few seconds

needs_proc = pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="peak RSS reset is Linux-only"
)


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("shapes")
    build(path)
    yield os.path.realpath(path)


@needs_proc
@pytest.mark.parametrize("scan", [False, True], ids=["index", "scan"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_hostile_shape_is_searched_within_64_mib_and_seconds(
    case: str, scan: bool, shapes: str
) -> None:
    """The first search builds the index of the shape's root; with `scan`, the search
    without an index (no FTS5, or a query of punctuation only) reads every file."""
    got = run_case(case, shapes, scan)
    assert float(got["cpu_s"]) < CPU_BOUND_S, got
    assert float(got["rss_growth_mib"]) < RSS_BOUND_MIB, got
    assert str(got["value"]).startswith("(") and not str(got["value"]).startswith("(0,"), got


# -- the words handed to SQLite ---------------------------------------------------

# Characters that make runs long or odd: word characters, combining marks (SQLite's
# diacritics and others), private-use, zero-width, case folds that expand or are rare,
# astral letters and symbols, separators.
HOSTILE = [
    "a", "B", "7", "_", "\u0663", "\u4e2d", "\U0001d400",
    "\u0301", "\u0316", "\u0903", "\u20dd", "\ue000", "\U000f0001",
    "\u200b", "\u200d", "\ufeff", "\u00df", "\ufb03", "\u0130", "\u0390", "\u1e9e", "\u01c5",
    " ", "\n", ".", "\U0001f600", "\x01",
]
runs_of = st.lists(
    st.tuples(st.sampled_from(HOSTILE), st.integers(1, 700)), min_size=1, max_size=12
).map(lambda units: "".join(u * n for u, n in units))


@given(text=runs_of, cuts=st.lists(st.integers(0, 9000), max_size=8))
def test_runs_cut_in_windows_are_dropped_as_in_the_whole_text(text: str, cuts: list[int]) -> None:
    runs = prepare.Runs()
    bounds = [0, *sorted(min(c, len(text)) for c in cuts), len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    last = len(pieces) - 1
    got = "".join(tokens.expand(runs.feed(p, i == last)) for i, p in enumerate(pieces))
    assert got == prepare.prepare(text)


@settings(
    max_examples=60, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=runs_of, window=st.integers(1, 64), encoding=st.sampled_from(["utf-8", "utf-16"]))
def test_no_token_sqlite_makes_is_longer_than_max_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, window: int, encoding: str
) -> None:
    """Whatever the text and however the windows cut it (inside a character too), the
    parts put together are the whole text's words, and SQLite's longest token is at most
    MAX_RUN characters."""
    monkeypatch.setattr(prepare, "WINDOW", window)
    monkeypatch.setattr(prepare, "PART_CHARS", 500)
    p = tmp_path / "f.txt"
    data = text.encode(encoding)  # utf-16: with its BOM
    p.write_bytes(data)
    fd = os.open(p, os.O_RDONLY)
    try:
        rows = list(prepare.parts(fd, 1 << 20, "f.txt", lambda: None))
    finally:
        os.close(fd)
    decoded = tokens.as_text(data, True)  # as fetch reads it
    assert decoded is not None
    assert "".join(body for _, body in rows) == prepare.prepare(decoded[0])
    # A part ends once it passed PART_CHARS: by at most one window (the first is the
    # head sniffed for a BOM), with a carried run, each word followed by its parts.
    most = 500 + 3 * (max(window, textio.HEAD) + prepare.MAX_RUN)
    assert all(len(body) < most for _, body in rows)
    con = sqlite3.connect(":memory:")
    con.execute(f'CREATE VIRTUAL TABLE d USING fts5(b, tokenize="{fts.TOKENIZE}")')
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(d, row)")
    con.executemany("INSERT INTO d (b) VALUES (?)", [(body,) for _, body in rows])
    longest = con.execute("SELECT max(length(term)) FROM v").fetchone()[0] or 0
    assert longest <= prepare.MAX_RUN


def test_every_character_sqlite_keeps_in_a_token_is_in_the_run_class() -> None:
    """SQLite's tokenizer is the judge: each BMP character that joins `x` and `x` into one
    token is one the runs are cut by (beyond the BMP every character is)."""
    con = sqlite3.connect(":memory:")
    con.execute(f'CREATE VIRTUAL TABLE d USING fts5(b, tokenize="{fts.TOKENIZE}")')
    con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(d, instance)")
    cps = [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]
    con.executemany("INSERT INTO d (rowid, b) VALUES (?, ?)", [(cp, f"x{chr(cp)}x") for cp in cps])
    joined = [doc for doc, n in con.execute("SELECT doc, count(*) FROM v GROUP BY doc") if n == 1]
    run_char = re.compile(f"[{prepare._run_chars()}]")
    missed = [hex(cp) for cp in joined if not run_char.fullmatch(chr(cp))]
    assert len(joined) > 40_000 and missed == []


# Bytes whose encoding `fetch` decides one way or another: BOMs, valid and invalid UTF-8,
# GB18030, a NUL (binary), cut inside a character.
byte_shapes = st.one_of(
    st.text(max_size=200).map(lambda t: t.encode("utf-8")),
    st.text(max_size=200).map(lambda t: codecs.BOM_UTF8 + t.encode("utf-8")),
    st.text(max_size=100).map(lambda t: t.encode("utf-16")),
    st.text(alphabet="\u4e2d\u6587 ab", max_size=100).map(lambda t: t.encode("gb18030")),
    st.binary(max_size=200),
)


@given(data=byte_shapes, window=st.integers(1, 40))
def test_the_encoding_is_the_one_fetch_decides(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, window: int
) -> None:
    p = tmp_path_factory.mktemp("enc") / "f"
    p.write_bytes(data)
    fd = os.open(p, os.O_RDONLY)
    try:
        prepare.WINDOW, saved = window, prepare.WINDOW
        try:
            got = prepare.Source(fd, 1 << 20).encoding()
        finally:
            prepare.WINDOW = saved
    finally:
        os.close(fd)
    want = tokens.as_text(data, True)
    if want is None:
        assert got is None
    else:
        assert got is not None and got[0] == textio.codec_of(want[1])


def test_the_word_cache_stays_within_its_bound() -> None:
    """Windows of distinct long compound words: the cache starts over rather than grow."""
    window = " ".join(f"w{n}Part{n}_x{'y' * 200}" for n in range(200))
    for k in range(400):
        tokens.expand(window.replace("w", f"w{k}"))
        assert len(tokens._seen) <= tokens._CACHE_WORDS + 400
        assert tokens._held <= tokens._CACHE_CHARS + 6 * len(window)


# -- the search without an index ---------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    unit=st.text(alphabet=st.sampled_from(["a", "B", " ", "\u00df", "\ufb03", "\u0130", "\u0301",
                                            "\u4e2d", "\U0001f600", "\n"]), min_size=1, max_size=9),
    times=st.integers(1, 3000),
    picks=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 6)), min_size=1, max_size=4),
    window=st.integers(1, 300),
)
def test_the_scan_counts_in_windows_what_it_would_count_in_the_whole_text(
    tmp_path_factory: pytest.TempPathFactory, unit: str, times: int,
    picks: list[tuple[int, int]], window: int,
) -> None:
    """Terms taken from the folded text itself, so they occur; matches across a window's
    end are found once. Terms that overlap themselves may count differently."""
    text = unit * times
    folded = text.casefold()
    terms = list(dict.fromkeys(folded[a : a + n] for a, n in picks if folded[a : a + n]))
    if not terms:
        return
    phrase = folded[: 12]
    p = tmp_path_factory.mktemp("scan") / "f.txt"
    p.write_bytes(text.encode())
    fd = os.open(p, os.O_RDONLY)
    saved = prepare.WINDOW
    try:
        prepare.WINDOW = window
        got = documents._count(fd, 1 << 22, terms, phrase)
    finally:
        prepare.WINDOW = saved
        os.close(fd)
    assert got is not None
    counts, has_phrase = got
    assert has_phrase
    for t in terms:
        assert (counts[t] > 0) == (t in folded)
        if not any(t[k:] == t[: len(t) - k] for k in range(1, len(t))):  # no self-overlap
            assert counts[t] == folded.count(t), t


# -- a refresh looks at the clock and the cancel flag by text read, not only by entries --


def test_a_build_of_a_few_large_files_is_cancelled_between_them(
    write_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fewer entries than one look every CHECK_EVERY: the text read (CHECK_CHARS) brings
    the next look, and the batches committed by size (COMMIT_CHARS) are kept."""
    root = tmp_path / "big"
    root.mkdir()
    for i in range(12):
        (root / f"b{i:02}.txt").write_text(f"kiwi {i} " + "words and more words " * 400)
    cfg = write_config(roots_toml(("main", root, "reference"), audit_log=None,
                                  extra="search_fetch_tools = true"))
    reg = Registry(str(cfg), audit=False)
    monkeypatch.setattr(refresh, "CHECK_CHARS", 4096)
    monkeypatch.setattr(refresh, "COMMIT_CHARS", 4096)
    monkeypatch.setattr(fts, "COMMIT_EVERY", 3600.0)
    with pytest.raises(Cancelled):
        dr.search(reg.current, "kiwi", CancelAfter(4))
    (index,) = (tmp_path / "state" / "index").glob("main-*.sqlite3")
    with sqlite3.connect(index) as con:
        kept = con.execute("SELECT count(*) FROM files").fetchone()[0]
    assert 1 <= kept < 12
