"""app.fs.change.purge in-process (tests/test_empty_trash.py runs it through the console
script): which stamp folders `--empty-trash` removes and which it keeps, the bytes it
reports, and the walk that measures and removes a tree (links removed as links, a folder
moved meanwhile stopping it)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app.fs.change import purge
from app.fs.change.layout import on_disk
from app.fs.change.purge import Emptied, empty_trash, walk_tree
from app.security import ops

NOW = datetime(2020, 1, 10, tzinfo=timezone.utc)


def _trash(tmp_path: Path, *stamps: str, body: str = "12345") -> Path:
    """A root whose trash holds `stamps`, each with a record of 3 bytes and one file."""
    top = tmp_path / "r"
    (top / ".mcp-trash").mkdir(parents=True)
    for s in stamps:
        (top / ".mcp-trash" / s).mkdir()
        (top / ".mcp-trash" / s / ".mcp-trash").write_text("{}\n")
        (top / ".mcp-trash" / s / "f.txt").write_text(body)
    return top


def _left(top: Path) -> list[str]:
    return sorted(os.listdir(top / ".mcp-trash"))


def _disk(path: Path) -> int:
    """What `path` and everything under it take on disk, measured here with os.lstat."""
    return sum(on_disk(p.lstat()) for p in (path, *path.rglob("*")))


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    top = tmp_path / "top"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield top, fd
    finally:
        os.close(fd)


# -- --empty-trash: which stamps go ---------------------------------------------------


def test_stamps_older_than_the_cutoff_go_oldest_first_the_rest_are_kept(tmp_path):
    top = _trash(tmp_path, "20200105T000000Z", "20200101T000000Z-1", "20200101T000000Z",
                 "20200109T000000Z", "20200110T000000Z")
    (top / ".mcp-trash" / "by-hand").mkdir()  # not a stamp: never touched
    (top / ".mcp-trash" / "20200101T000000Z-x").mkdir()  # nor this
    out = empty_trash(str(top), timedelta(days=3), now=NOW)
    assert out == Emptied(["20200101T000000Z", "20200101T000000Z-1", "20200105T000000Z"],
                          kept=2, bytes=15)
    assert _left(top) == ["20200101T000000Z-x", "20200109T000000Z", "20200110T000000Z",
                          "by-hand", "generation"]


def test_a_stamp_exactly_at_the_cutoff_is_kept(tmp_path):
    top = _trash(tmp_path, "20200107T000000Z", "20200106T235959Z")
    out = empty_trash(str(top), timedelta(days=3), now=NOW)
    assert (out.removed, out.kept) == (["20200106T235959Z"], 1)


def test_the_cutoff_counts_from_now_when_no_time_is_given(tmp_path):
    # 2020 is long past and 2099 far ahead whenever this runs.
    top = _trash(tmp_path, "20200101T000000Z", "20991231T235959Z")
    out = empty_trash(str(top), timedelta(days=1))
    assert (out.removed, out.kept) == (["20200101T000000Z"], 1)
    assert _left(top) == ["20991231T235959Z", "generation"]


def test_a_dry_run_removes_nothing_and_reports_the_same(tmp_path):
    top = _trash(tmp_path, "20200101T000000Z", "20200102T000000Z", "20200109T000000Z")
    before = _left(top)
    dry = empty_trash(str(top), timedelta(days=3), dry_run=True, now=NOW)
    assert dry == Emptied(["20200101T000000Z", "20200102T000000Z"], kept=1, bytes=10)
    assert _left(top) == before  # no generation bump either: nothing changed
    assert empty_trash(str(top), timedelta(days=3), now=NOW) == dry


def test_the_counter_is_bumped_only_when_something_went(tmp_path):
    top = _trash(tmp_path, "20200109T000000Z")
    empty_trash(str(top), timedelta(days=3), now=NOW)
    assert "generation" not in _left(top)  # nothing removed: no server need re-list
    (top / ".mcp-trash" / "generation").write_text("41\n")
    (top / ".mcp-trash" / "20200101T000000Z").mkdir()
    empty_trash(str(top), timedelta(days=3), now=NOW)
    assert (top / ".mcp-trash" / "generation").read_text() == "42\n"


def test_an_empty_default_is_nothing_removed_nothing_kept(tmp_path):
    top = _trash(tmp_path)
    assert empty_trash(str(top), timedelta(days=1), now=NOW) == Emptied([], 0, 0)


@pytest.mark.parametrize(("record", "counted"), [
    ("file", 5),  # the record's bytes are the trash's own note, not a delete's
    ("folder", 5 + 3),  # a record that is no file is not taken off
    ("link", 5),
    (None, 5),
])
def test_the_bytes_are_the_items_never_their_records(tmp_path, record, counted):
    top = _trash(tmp_path, "20200101T000000Z")
    stamp = top / ".mcp-trash" / "20200101T000000Z"
    (stamp / ".mcp-trash").unlink()
    if record == "file":
        (stamp / ".mcp-trash").write_text("{}\n")
    elif record == "folder":
        (stamp / ".mcp-trash").mkdir()
        (stamp / ".mcp-trash" / "in").write_text("abc")
    elif record == "link":
        (stamp / ".mcp-trash").symlink_to("f.txt")  # 5 bytes behind it: never read as its size
    assert empty_trash(str(top), timedelta(0), now=NOW).bytes == counted


def test_a_stamp_that_is_a_file_is_removed_and_counted_without_a_record(tmp_path):
    top = _trash(tmp_path)
    (top / ".mcp-trash" / "20200101T000000Z").write_text("abcd")
    out = empty_trash(str(top), timedelta(0), now=NOW)
    assert (out.removed, out.bytes) == (["20200101T000000Z"], 4)
    assert _left(top) == ["generation"]


def test_a_root_without_a_trash_or_with_a_link_for_one_is_refused(tmp_path):
    top = tmp_path / "r"
    top.mkdir()
    with pytest.raises(FileNotFoundError):
        empty_trash(str(top), timedelta(0), now=NOW)
    (tmp_path / "elsewhere" / "20200101T000000Z").mkdir(parents=True)
    (top / ".mcp-trash").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError) as exc:
        empty_trash(str(top), timedelta(0), now=NOW)
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert (tmp_path / "elsewhere" / "20200101T000000Z").is_dir()


# -- the walk ----------------------------------------------------------------------------


def _tree(top: Path, outside: Path) -> Path:
    t = top / "t"
    (t / "a" / "b" / "c").mkdir(parents=True)
    (t / "e").mkdir()
    (t / "one").write_text("1")
    (t / "a" / "two").write_text("22")
    (t / "a" / "b" / "c" / "three").write_text("333")
    (t / "e" / "four").write_text("4444")
    (t / "a" / "out").symlink_to(outside)  # counted as a link, never followed
    (t / "ln").symlink_to("one")
    os.mkfifo(t / "a" / "fifo")
    return t


@pytest.mark.parametrize("remove", [False, True])
def test_the_walk_counts_regular_files_sizes_and_what_every_entry_takes(
        held, tmp_path, remove):
    top, fd = held
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_text("x" * 1000)
    t = _tree(top, outside)
    disk = _disk(t)
    total = walk_tree(fd, "t", remove=remove)
    assert (total.bytes, total.disk) == (1 + 2 + 3 + 4, disk)
    assert t.exists() is not remove
    assert (outside / "big").read_text() == "x" * 1000


def test_a_removed_tree_leaves_everything_beside_it(held, tmp_path):
    top, fd = held
    _tree(top, tmp_path)
    (top / "beside").write_text("b")
    walk_tree(fd, "t", remove=True)
    assert os.listdir(top) == ["beside"]


@pytest.mark.parametrize(("make", "bytes_"), [
    (lambda p: p.write_text("abc"), 3),
    (lambda p: p.symlink_to("elsewhere"), 0),  # a link is no regular file
    (lambda p: os.mkfifo(p), 0),
    (lambda p: p.mkdir(), 0),
])
@pytest.mark.parametrize("remove", [False, True])
def test_a_single_entry_is_measured_and_removed_as_itself(held, make, bytes_, remove):
    top, fd = held
    (top / "elsewhere").mkdir()
    make(top / "x")
    disk = on_disk((top / "x").lstat())
    total = walk_tree(fd, "x", remove=remove)
    assert (total.bytes, total.disk) == (bytes_, disk)
    assert os.path.lexists(top / "x") is not remove
    assert (top / "elsewhere").is_dir()


def test_a_link_to_a_folder_is_removed_as_a_link_its_folder_untouched(held, tmp_path):
    top, fd = held
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "keep").write_text("keep")
    (top / "ln").symlink_to(tmp_path / "folder")
    assert walk_tree(fd, "ln", remove=True).bytes == 0
    assert not os.path.lexists(top / "ln")
    assert (tmp_path / "folder" / "keep").read_text() == "keep"


def test_a_missing_entry_is_file_not_found(held):
    _, fd = held
    with pytest.raises(FileNotFoundError):
        walk_tree(fd, "missing", remove=True)


def test_a_folder_moved_while_it_is_walked_stops_the_walk(held, tmp_path, monkeypatch):
    """Going back up lands in some other folder (as when the one walked moved away):
    the walk stops there, removing nothing more, rather than go on elsewhere."""
    top, fd = held
    (top / "t" / "sub").mkdir(parents=True)
    (top / "t" / "sub" / "f").write_text("f")
    (top / "t" / "g").write_text("g")
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    monkeypatch.setattr(ops, "open_up", lambda _fd: os.open(other, os.O_RDONLY))
    with pytest.raises(OSError) as exc:
        walk_tree(fd, "t", remove=True)
    assert exc.value.errno == errno.ESTALE
    assert exc.value.strerror == "a folder in the trash moved while it was emptied"
    assert (other / "sub").is_dir() and (top / "t" / "sub").is_dir()


def test_the_walk_goes_up_through_each_folder_it_came_down(held, monkeypatch):
    top, fd = held
    (top / "t" / "a" / "b").mkdir(parents=True)
    (top / "t" / "c").mkdir()
    left = sorted(os.stat(top / p).st_ino for p in ("t", "t/a", "t/a/b", "t/c"))
    ups: list[int] = []
    real = ops.open_up

    def counted(at: int) -> int:
        ups.append(os.fstat(at).st_ino)
        return real(at)

    monkeypatch.setattr(ops, "open_up", counted)
    walk_tree(fd, "t", remove=True)
    assert sorted(ups) == left  # each folder left once, by its `..`
    assert os.listdir(top) == []


def test_the_record_size_of_a_stamp_that_cannot_be_opened_is_none(held):
    top, fd = held
    assert purge._record_size(fd, "missing") == 0
    (top / "s").mkdir()
    assert purge._record_size(fd, "s") == 0
    (top / "s" / ".mcp-trash").write_text("abcdef")
    assert purge._record_size(fd, "s") == 6


# -- a capped measure ---------------------------------------------------------------------


def test_a_capped_tally_stops_the_walk_past_its_entries_and_keeps_what_it_saw(held):
    top, fd = held
    (top / "d").mkdir()
    for i in range(10):
        (top / "d" / f"{i}").write_text("x")
    whole = purge.walk_tree(fd, "d", remove=False)
    assert whole.entries == 11
    tally = purge.Tally(max_entries=5)
    with pytest.raises(purge.Cut):
        purge.walk_tree(fd, "d", remove=False, into=tally)
    assert tally.entries == 5 and 0 < tally.disk < whole.disk
    both = purge.Tally(max_entries=22)
    purge.walk_tree(fd, "d", remove=False, into=both)
    purge.walk_tree(fd, "d", remove=False, into=both)
    assert (both.entries, both.disk, both.bytes) == (22, 2 * whole.disk, 2 * whole.bytes)
    assert sorted(os.listdir(top / "d")) == [str(i) for i in range(10)]
