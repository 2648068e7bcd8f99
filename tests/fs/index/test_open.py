"""Files that may be changing behind the index's back (docs/configuration.md, "The search
index", what the index trusts and for how long).

A write through a shared memory map into a page already dirty changes neither the size nor
the times of the file (the kernel updates them at the first write fault after the page was
written back), and inotify reports nothing until the mapping goes: the file's signature
still matches the one it was indexed at. So:
- a file another process holds open (an `IN_OPEN` seen without its close) is read by every
  search, walk-less or not;
- a file the index read within the dirty window of its last change (`watch.RACY_WINDOW_NS`)
  is read by every search until a build reads it again after the window: this covers the
  opens no watch saw (made before the watch began).
Each test runs the writer in another process, as a database or a log does.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.fs.index.trigrams import narrow, watch
from tests.fs.index.trigramkit import Holder, Indexed, spied_direct
from tests.kit import secure_root


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    (top / "docs").mkdir()
    for i in range(12):
        (top / "docs" / f"f{i}.txt").write_text(f"hay {i}\n")
    (top / "src" / "a.txt").write_text("hello world and more\n")
    return top


def _sig(p: Path) -> tuple[int, int, int, int]:
    st = os.stat(p)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _found(ix: Indexed, query: str, **kw: object) -> list[str]:
    return sorted(m["path"] for m in ix.search(query, **kw))


@pytest.mark.parametrize("how", [
    pytest.param("mmap", id="mapped-and-open"),
    pytest.param("mapped", id="mapped-its-descriptor-closed"),
    pytest.param("fd", id="open-for-writing-pwrite"),
])
def test_a_file_another_process_holds_open_is_read_by_every_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str,
) -> None:
    """The issue's case: the page dirtied, the file indexed, a new string written into the
    same page. Found at once, after a build's walk (the minute's), by a search that walks
    (REWALK 0), with no_ignore; and once the writer lets go (its close is a write's)."""
    calls = spied_direct(monkeypatch)
    top = _tree(tmp_path)
    a = top / "src" / "a.txt"
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete  # the watch begins before the writer opens the file
    with Holder(a, how) as w:
        w.write(0, b"AAAAA")  # the page dirtied (a map: mtime moves at this first fault)
        assert ix.build().complete and _found(ix, "AAAAA") == ["src/a.txt"]
        before = _sig(a)
        w.write(6, b"needl")  # "AAAAA needl and more": the same page, written again
        if how != "fd":
            assert _sig(a) == before  # the kernel's part: nothing on disk moved
        assert _found(ix, "needl") == ["src/a.txt"]
        assert calls and "src/a.txt" in calls[-1]  # walk-less, the file read
        assert ix.build().complete  # a build's walk: the signature unchanged, not read
        assert _found(ix, "needl") == ["src/a.txt"]
        assert _found(ix, "needl", no_ignore=True) == ["src/a.txt"]  # the walk's way
        monkeypatch.setattr(narrow, "REWALK", 0.0)
        assert _found(ix, "needl") == ["src/a.txt"]
        monkeypatch.setattr(narrow, "REWALK", 60.0)
        ix.keeper.wait()
        w.write(12, b"thirdword")
        assert _found(ix, "thirdword") == ["src/a.txt"]
    assert _found(ix, "thirdword") == ["src/a.txt"]  # closed: its close was a write's
    ix.keeper.wait()


def test_a_file_mapped_before_the_watch_began_is_read_until_indexed_after_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No watch saw the open: the file, indexed 3 s after its last change (within the
    window: its page may still be dirty), is read by every search, walking or not; a build
    once the window has passed reads it again, and the index then answers for it."""
    calls = spied_direct(monkeypatch)
    top = _tree(tmp_path)
    a = top / "src" / "a.txt"
    clock = [time.time_ns() + 3_000_000_000]
    with Holder(a, "mapped") as w:
        w.write(0, b"AAAAA")  # dirtied before any watch
        clock[0] = time.time_ns() + 3_000_000_000
        ix = Indexed(secure_root(top), tmp_path / "state", now=lambda: clock[0])
        assert ix.build().complete
        before = _sig(a)
        w.write(6, b"needl")
        assert _sig(a) == before
        assert _found(ix, "needl") == ["src/a.txt"]
        assert "src/a.txt" in calls[-1]
        assert _found(ix, "needl", no_ignore=True) == ["src/a.txt"]
        ix.keeper.wait()
        assert ix.build().complete  # still within the window: read again, still racy
        assert _found(ix, "needl") == ["src/a.txt"]
        clock[0] = time.time_ns() + watch.RACY_WINDOW_NS + 1_000_000_000
        ix.keeper.wait()
        assert ix.build().complete  # past it: read again, and trusted
        assert ix.idx.view["src/a.txt"].sig == _sig(a)
        n = len(calls)
        assert _found(ix, "hay") and "src/a.txt" not in calls[n]  # vouched for: not read
        assert _found(ix, "needl") == ["src/a.txt"]  # from what the index read
    ix.keeper.wait()


def test_the_servers_own_reads_leave_no_file_open_and_an_unchanged_tree_reads_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The build and the searches open every file they read, and close it: opens and
    closes cancel out, and a search of a tree nobody holds open, settled past the window,
    reads its candidates only and starts no build."""
    calls = spied_direct(monkeypatch)
    top = _tree(tmp_path)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    assert _found(ix, "hay") == sorted(f"docs/f{i}.txt" for i in range(12))
    assert _found(ix, "hello") == ["src/a.txt"]
    w = ix.idx.trusted_watch()
    assert w is not None and w.held() == set()
    assert calls[-1] == ["src/a.txt"] and ix.keeper.progress() is None


@pytest.mark.parametrize(("expire", "writeback", "seconds"), [
    ("3000\n", "500\n", 45),  # the kernel's defaults: 30 s + 5 s + the 10 s margin
    ("6000", "1500", 85),
    (None, None, 45),  # unreadable: the defaults
    ("junk", "500", 45),
    ("3000", "0", 45),  # periodic writeback off: taken as its default (unbounded: see docs)
    ("-5", "100", 41),
])
def test_the_dirty_window_is_the_kernels_expiry_and_writeback_interval_plus_a_margin(
    tmp_path: Path, expire: str | None, writeback: str | None, seconds: int,
) -> None:
    for name, value in (("dirty_expire_centisecs", expire),
                        ("dirty_writeback_centisecs", writeback)):
        if value is not None:
            (tmp_path / name).write_text(value)
    assert watch.dirty_window_ns(str(tmp_path)) == seconds * 1_000_000_000


def test_a_map_let_go_after_writing_is_read_again_by_the_next_build_whatever_its_signature(
    tmp_path: Path,
) -> None:
    """Indexed while held, the page written again, then the map gone: its close (a
    write's) says it changed while nothing moved on disk. The search after reads it, and
    the build it starts reads it again although its signature is the one indexed: every
    later search finds it through the index."""
    top = _tree(tmp_path)
    a = top / "src" / "a.txt"
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    with Holder(a, "mapped") as w:
        w.write(0, b"AAAAA")
        assert ix.build().complete
        before = _sig(a)
        w.write(6, b"needl")
    assert _sig(a) == before
    assert _found(ix, "needl") == ["src/a.txt"]
    ix.keeper.wait()
    for _ in range(2):
        assert _found(ix, "needl") == ["src/a.txt"]
        ix.keeper.wait()
    w2 = ix.idx.trusted_watch()
    assert w2 is not None and not w2.dirty and ix.idx.view["src/a.txt"].sig == before


@contextlib.contextmanager
def _events(w: watch.Watch, folder: Path, do: list[tuple[str, str]]) -> Iterator[None]:
    """The events of `do` drained; the files still open stay so until the block ends (closed
    before the answer is read, the watch's thread could count their closes first)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    held: dict[str, int] = {}
    try:
        w.add(fd, "d/")
        for what, name in do:
            if what == "open":
                held[name] = os.open(folder / name, os.O_RDWR)
            elif what == "close":
                os.close(held.pop(name))
            elif what == "move":
                old, new = name.split(">")
                os.replace(folder / old, folder / new)
            elif what == "read":
                (folder / name).read_bytes()
        w.drain()
        yield
    finally:
        for h in held.values():
            os.close(h)
        os.close(fd)


@pytest.mark.parametrize(("do", "held"), [
    ([("open", "a")], {"d/a"}),
    ([("open", "a"), ("close", "a")], set()),
    ([("read", "a"), ("read", "b")], set()),  # our own reads: opened and closed
    ([("open", "a"), ("read", "b"), ("read", "a")], {"d/a"}),  # a read beside a writer
    # Not a row: a read whose open comes right after the writer's, before the queue is read,
    # is merged with it by the kernel and its close then cancels the writer's (the documented
    # limit); whether the watch's thread reads in between is the scheduler's choice, so the
    # answer is either, and a row would pin a race.
    ([("open", "a"), ("move", "a>c")], {"d/c"}),  # the count follows the name
    ([("open", "a"), ("move", "a>c"), ("close", "a")], set()),  # closed under its new name
    ([("open", "a"), ("open", "b"), ("close", "a")], {"d/b"}),
])
def test_the_watch_counts_opens_less_closes_per_file(
    tmp_path: Path, do: list[tuple[str, str]], held: set[str],
) -> None:
    if watch.INotify is None:
        pytest.skip("no inotify")
    folder = tmp_path / "d"
    folder.mkdir()
    for n in "ab":
        (folder / n).write_text("x\n")
    w = watch.Watch()
    with _events(w, folder, do):
        assert w.held() == held and not w.broken
    w.close()


def test_a_new_watch_keeps_what_the_one_it_replaces_knew_held(tmp_path: Path) -> None:
    if watch.INotify is None:
        pytest.skip("no inotify")
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a").write_text("x\n")
    old = watch.Watch()
    with _events(old, folder, [("open", "a")]):
        old.close()
    assert watch.Watch(None, old).held() == {"d/a"}
