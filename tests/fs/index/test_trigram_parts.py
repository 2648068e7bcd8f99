"""A file's text handed to the trigram index in parts (app/fs/index/trigrams/trigram_text.py): no
trigram lost at a boundary, none left behind when the file changes or goes, and a query
that finds a file whose string's trigrams lie in two parts.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import apsw
import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.index.trigrams import shards, trigram_text
from app.fs.index.trigrams.grams import groups, plan, string_grams
from app.fs.index.trigrams.shards import add_grams, drop_grams
from app.fs.index.trigrams.trigram import GRAMS, held_by
from app.fs.index.trigrams.trigram_text import (
    OVERLAP,
    PART_CHARS,
    PARTS,
    FileText,
    file_of,
    text_of,
)
from app.fs.text.textio import WIDE_BOMS
from tests.fs.index.trigramkit import Indexed, spied_direct
from tests.kit import secure_root


def _rows(tmp: Path, data: bytes, fid: int, limit: int = 1 << 20
          ) -> tuple[list[tuple[int, str]], FileText]:
    path = tmp / "f.bin"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        text = FileText(fd, limit)
        return list(text.rows(fid)), text
    finally:
        os.close(fd)


def _trigrams(text: str) -> set[str]:
    return {text[i:i + 3] for i in range(len(text) - 2)}


PIECES = [b"a", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\0", b"\xff", b"\xe4", b"\n", b"\x80",
          b"ab", b"\xc3\xa9"]
bodies = st.tuples(st.sampled_from([b"", *(b for b, _ in WIDE_BOMS), b"\xef\xbb\xbf"]),
                   st.lists(st.sampled_from(PIECES), max_size=400)).map(
    lambda t: t[0] + b"".join(t[1]))


@settings(max_examples=300, deadline=None)
@given(data=bodies, window=st.integers(1, 9), part=st.integers(1, 12),
       head=st.integers(4, 9), overlap=st.integers(2, 4))  # head: a BOM at least (4096)
def test_the_parts_hold_every_trigram_of_what_the_whole_file_gives_whatever_the_windows(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, window: int, part: int, head: int,
    overlap: int
) -> None:
    """Read `window` bytes at a time, cut every `part` characters: binary as the whole
    file is, and the parts' trigrams are the whole text's (none across a boundary lost,
    none made up); one part is the file's own row, more are rows of their own."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(trigram_text, "WINDOW", window)
        mp.setattr(trigram_text, "PART_CHARS", part)
        mp.setattr(trigram_text, "HEAD", head)
        mp.setattr(trigram_text, "OVERLAP", overlap)
        rows, text = _rows(tmp_path_factory.mktemp("parts"), data, fid=7)
        binary, whole = text_of(data)
    finally:
        mp.undo()
    assert text.binary == binary and not text.over
    assert text.read == len(data) or binary  # a binary file is not read past its head
    if binary or not whole:
        assert rows == []
        return
    grams: set[str] = set()
    for _, body in rows:
        assert len(body) <= part + overlap
        grams |= _trigrams(body)
    assert grams == _trigrams(whole)
    ids = [r for r, _ in rows]
    assert ids == ([7] if len(rows) == 1 else [trigram_text.part_row(7, n)
                                               for n in range(len(rows))])
    assert {file_of(r) for r in ids} == {7}


def test_a_file_over_the_limit_gives_no_row(tmp_path: Path) -> None:
    rows, text = _rows(tmp_path, b"x" * (3 * PART_CHARS + 1), fid=3, limit=3 * PART_CHARS)
    assert text.over and text.read == 3 * PART_CHARS + 1
    assert rows[-1][0] < trigram_text.part_row(3, 2)  # the last part was never given


@settings(max_examples=200, deadline=None)
@given(strings=st.lists(st.text(alphabet='ab"() ANDOR\u00e9k', min_size=3, max_size=12),
                        min_size=1, max_size=4), fold=st.booleans())
def test_groups_reads_back_the_trigrams_plan_asks(strings: list[str], fold: bool) -> None:
    expr = plan(strings, fold)
    if expr is None:
        return
    assert groups(expr) == [string_grams(s, fold) for s in dict.fromkeys(strings)]


ALPHABET = "abcAB\u00e9\u4e2d k"


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=ALPHABET, min_size=3, max_size=60), data=st.data(),
       fold=st.booleans(), part=st.integers(1, 8), overlap=st.integers(2, 5))
def test_a_file_in_parts_holding_a_match_is_always_proposed(
    tmp_path_factory: pytest.TempPathFactory, text: str, data: st.DataObject, fold: bool,
    part: int, overlap: int
) -> None:
    """The class of wrong answers parts could give: a string whose trigrams lie in several
    parts; the file (its rows as the build writes them, in SQLite's own table) is asked."""
    i = data.draw(st.integers(0, len(text) - 3))
    j = data.draw(st.integers(i + 3, len(text)))
    query = text[i:j]
    flags = re2.Options()
    flags.case_sensitive = not fold
    expr = plan([query], fold)
    if expr is None or not re2.compile(re2.escape(query), flags).search(text):
        return
    con = apsw.Connection(":memory:")
    con.execute(GRAMS)
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(trigram_text, "PART_CHARS", part)
        mp.setattr(trigram_text, "OVERLAP", overlap)
        rows, _ = _rows(tmp_path_factory.mktemp("match"), text.encode(), fid=5)
        for rowid, body in rows:
            add_grams(con, rowid, body)
        assert 5 in held_by(con, expr), (text, query, rows)
        assert 5 in held_by(con, str(expr)), (text, query, rows)  # not `plan`'s: all joined
        drop_grams(con, 5)
        assert 5 not in held_by(con, expr)
    finally:
        mp.undo()


# -- through a build ----------------------------------------------------------------------

SHORT = "zq" + "\u4e2dxjv"  # 4 trigrams: across a boundary, whole in the overlap
_RND = random.Random(1)
LONG = "".join(chr(0x4E00 + _RND.randrange(0x5200)) for _ in range(OVERLAP + 40))  # distinct


def _long(span: str, at: int, size: int = 3 * PART_CHARS) -> str:
    """`size` characters of filler (no trigram of a span in it), `span` at `at`."""
    rnd = random.Random(at)
    filler = "".join(rnd.choice("abcdefghij \n") for _ in range(size))
    return filler[:at] + span + filler[at + len(span):]


@pytest.mark.parametrize(("span", "at"), [
    (SHORT, PART_CHARS - 5), (SHORT, PART_CHARS - 1), (SHORT, PART_CHARS + OVERLAP - 3),
    (SHORT, PART_CHARS + OVERLAP - 2), (SHORT, 2 * PART_CHARS - 4),
    (LONG, PART_CHARS - 50), (LONG, PART_CHARS - 20), (LONG, 2 * PART_CHARS - 1),
], ids=["short-in-part-0", "short-in-overlap", "short-across-the-overlap-end",
        "short-last-trigram-past-it", "short-in-part-1", "long-whole-in-part-0",
        "long-across-parts-0-1", "long-across-parts-1-2"])
@pytest.mark.parametrize("walkless", [True, False], ids=["walk-less", "walked"])
def test_a_match_spanning_a_part_boundary_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, span: str, at: int, walkless: bool
) -> None:
    """A string whose trigrams lie in one part, in the overlap of two, or in two parts
    (one longer than the overlap); the index alone says which file to read."""
    top = tmp_path / "r"
    top.mkdir()
    text = _long(span, at)
    (top / "long.txt").write_text(text)
    for k in range(4):
        (top / f"small{k}.txt").write_text(f"nothing here {k}\n")
    calls = spied_direct(monkeypatch)
    ix = Indexed(secure_root(top, max_read_bytes=1 << 20), tmp_path / "state")
    assert ix.build().complete
    if not walkless:
        ix.idx.watched = False  # the watch not trusted: the call walks, the index filters
    fid = ix.rows()["long.txt"]
    assert ix.holding(span[:3]) == {fid, -1} and ix.holding(span[-3:]) == {fid, -1}
    hits = ix.search(span)
    assert [(m["path"], m["line"]) for m in hits] == [("long.txt", text[:at].count("\n") + 1)]
    assert ix.notes[-1] is None  # answered by the index, nothing read for want of it
    assert bool(calls) == walkless and (not calls or calls[-1] == ["long.txt"])


def _parts_of(ix: Indexed) -> list[int]:
    """The rows of parts every shard holds."""
    rows: list[int] = []
    for path in shards.paths(ix.idx.path):
        con = apsw.Connection(path)
        try:
            rows += [r[0] for r in con.execute(
                "SELECT rowid FROM grams_docsize WHERE rowid >= ?", (PARTS,))]
        finally:
            con.close()
    return rows


@pytest.mark.parametrize("change", ["shrunk", "removed", "binary"])
def test_a_file_in_parts_changed_or_removed_leaves_no_part_and_no_trigram(
    tmp_path: Path, change: str
) -> None:
    top = tmp_path / "r"
    top.mkdir()
    for k in range(2):  # one in each shard
        (top / f"long{k}.txt").write_text(_long(SHORT, PART_CHARS + 7 * k))
    ix = Indexed(secure_root(top, max_read_bytes=1 << 20), tmp_path / "state")
    ix.build()
    assert len(_parts_of(ix)) == 6 and ix.holding("zq\u4e2d") - {-1} == set(ix.rows().values())
    for k in range(2):
        p = top / f"long{k}.txt"
        if change == "removed":
            p.unlink()
        else:
            p.write_bytes(b"short\n" if change == "shrunk" else b"\0binary" + b"x" * PART_CHARS)
    ix.build()
    assert _parts_of(ix) == []
    assert not ix.holding("zq\u4e2d") and not ix.holding("xjv")
