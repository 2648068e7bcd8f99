"""Hard links and the walk-less answer (docs/configuration.md, "The search index").

The kernel reports a change to the folder of the name it was made through, and to no
other: a file the index holds, written through another name (a hard link outside the root,
or in another folder of it), changes with no event in its own folder. Such a file must
still be read by the next search, as a scan reads it:
- one with other links at the build's walk is looked at (one `stat`) by every walk-less
  answer, and read when its signature moved;
- a new file with another link (a link made since the build) sends the call through the
  walk, which compares every file's signature;
- a link made from outside since the build, which no event shows at all, is read by every
  search once the last walk is `REWALK` seconds old: such a search walks.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from app.fs.index.trigrams import direct, narrow
from app.security.resolve import Root
from tests.fs.index.trigramkit import Indexed, spied_direct
from tests.kit import secure_root


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    top, out = tmp_path / "r", tmp_path / "outside"
    (top / "src").mkdir(parents=True)
    (top / "docs").mkdir()
    out.mkdir()
    for i in range(12):
        (top / "docs" / f"f{i}.txt").write_text(f"hay {i}\n")
    (top / "src" / "a.txt").write_text("hello world\n")
    return top, out


def _outside(top: Path, out: Path) -> Path:
    os.link(top / "src" / "a.txt", out / "b.txt")
    return out / "b.txt"


def _inside(top: Path, out: Path) -> Path:
    os.link(top / "src" / "a.txt", top / "docs" / "b.txt")
    return top / "docs" / "b.txt"


def _append(p: Path) -> None:
    with open(p, "a") as f:
        f.write("needle here\n")


# (where the other name is; the paths a search then finds)
WHERE = [
    pytest.param(_outside, ["src/a.txt"], id="outside-the-root"),
    pytest.param(_inside, ["docs/b.txt", "src/a.txt"], id="in-another-folder"),
]


@pytest.mark.parametrize(("link", "found"), WHERE)
def test_a_file_linked_at_the_build_and_written_through_its_other_name_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    link: Callable[[Path, Path], Path], found: list[str],
) -> None:
    calls = spied_direct(monkeypatch)
    top, out = _tree(tmp_path)
    other = link(top, out)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete and ix.idx.linked
    assert ix.search("needle") == []
    assert calls and "src/a.txt" not in calls[-1]  # looked at, not read: unchanged
    _append(other)
    assert sorted(m["path"] for m in ix.search("needle")) == found
    assert len(calls) == 2 and "src/a.txt" in calls[-1]  # without a walk


def test_a_link_made_from_outside_since_the_build_is_read_once_the_walk_is_rewalk_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No event shows it: a search once the last walk is REWALK old walks, and finds it (REWALK
    0 here: every search walks); the build it starts finds the file linked."""
    calls = spied_direct(monkeypatch)
    top, out = _tree(tmp_path)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete and not ix.idx.linked
    _append(_outside(top, out))
    monkeypatch.setattr(narrow, "REWALK", 0.0)
    assert [m["path"] for m in ix.search("needle")] == ["src/a.txt"]
    assert calls == []  # walked
    ix.keeper.wait()
    assert ix.idx.linked == frozenset({"src/a.txt"})


def test_a_write_through_a_map_opened_before_the_watch_is_read_once_the_walk_is_rewalk_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """inotify reports no write made through a shared memory map, and no watch saw this
    map's open (made before the build), and the file was settled when indexed (the clock
    past the dirty window: tests/fs/index/test_open.py has it within): the same rule as a
    link from outside. Within REWALK a search may answer from the file as indexed; past it,
    the search walks and reads it (its modification time moved at the write's fault on a
    clean page)."""
    top, _ = _tree(tmp_path)
    with open(top / "src" / "a.txt", "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        ix = Indexed(secure_root(top), tmp_path / "state")
        assert ix.build().complete
        m[:5] = b"needl"  # "hello world" -> "needl world", no size change
        m.flush()
        assert ix.search("needl") == []  # the documented window: nothing reported it
        monkeypatch.setattr(narrow, "REWALK", 0.0)
        assert [hit["path"] for hit in ix.search("needl")] == ["src/a.txt"]


def test_a_link_made_inside_since_the_build_is_read_by_the_very_next_search(
    tmp_path: Path,
) -> None:
    top, out = _tree(tmp_path)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    _append(_inside(top, out))
    assert sorted(m["path"] for m in ix.search("needle")) == ["docs/b.txt", "src/a.txt"]


# A new name in a watched folder that the walk does not list: the event is seen, and the
# name is one no search reads, but writing through it changes the file it shares.
HIDDEN_NAMES = [
    pytest.param("docs/b.log", "*.log\n", id="ignored-by-a-gitignore"),
    pytest.param("docs/.env", "", id="denied-by-the-floor"),
    pytest.param("docs/node_modules", "", id="a-pruned-name-as-a-file"),
]


@pytest.mark.parametrize(("name", "ignore"), HIDDEN_NAMES)
def test_a_link_made_since_the_build_under_a_name_no_search_reads_sends_the_call_walking(
    tmp_path: Path, name: str, ignore: str,
) -> None:
    top, _ = _tree(tmp_path)
    (top / ".gitignore").write_text(ignore)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete and not ix.idx.linked
    os.link(top / "src" / "a.txt", top / name)
    _append(top / name)
    assert [m["path"] for m in ix.search("needle")] == ["src/a.txt"]


def test_within_rewalk_of_the_last_walk_a_search_neither_walks_nor_starts_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search of an unchanged tree within REWALK of the last walk answers without a walk
    and starts no build; past it, the search walks and starts one that walks again."""
    calls = spied_direct(monkeypatch)
    top, _ = _tree(tmp_path)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    walked = ix.idx.walked_at
    assert ix.search("hello") and ix.keeper.progress() is None and len(calls) == 1
    monkeypatch.setattr(narrow, "REWALK", 0.0)
    assert ix.search("hello") and len(calls) == 1
    ix.keeper.wait()
    assert ix.idx.walked_at > walked  # a build walked again


def _ignore_all(p: Path) -> None:
    with open(p, "a") as f:
        f.write("*.txt\n")


def test_an_ignore_file_linked_at_the_build_and_changed_through_its_other_name_is_obeyed(
    tmp_path: Path,
) -> None:
    """The ignore file's new rule hides a file the index holds: the call walks, as a scan."""
    top, out = _tree(tmp_path)
    (top / "src" / ".ignore").write_text("# nothing\n")
    (top / "src" / "b.py").write_text("needle\n")
    (top / "src" / "a.txt").write_text("needle\n")
    os.link(top / "src" / ".ignore", out / "rules")
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    assert sorted(m["path"] for m in ix.search("needle")) == ["src/a.txt", "src/b.py"]
    _ignore_all(out / "rules")
    assert [m["path"] for m in ix.search("needle")] == ["src/b.py"]


def test_an_ignore_file_linked_since_the_build_is_obeyed_once_the_walk_is_rewalk_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search past REWALK walks (obeying it); the build it starts finds the ignore file
    changed with no event and breaks the watch (the folders it now lets the walk into were
    never watched): searches walk until a build with a new watch."""
    top, out = _tree(tmp_path)
    (top / "src" / ".ignore").write_text("# nothing\n")
    (top / "src" / "b.py").write_text("needle\n")
    (top / "src" / "a.txt").write_text("needle\n")
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    os.link(top / "src" / ".ignore", out / "rules")
    _ignore_all(out / "rules")
    monkeypatch.setattr(narrow, "REWALK", 0.0)
    assert [m["path"] for m in ix.search("needle")] == ["src/b.py"]
    ix.keeper.wait()
    assert ix.idx.trusted_watch() is None


@pytest.mark.parametrize(("path", "changed_read"), [
    ("", True),  # the whole root: the linked file is looked at and read
    ("docs", False),  # a folder that does not hold it: not looked at (the ignore file is)
])
def test_a_search_under_a_folder_looks_at_the_linked_files_it_reads_and_every_ignore_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, changed_read: bool,
) -> None:
    """An ignore file above the start folder decides what the walk under it lists: one
    linked and changed through its other name makes a search under `docs` walk."""
    calls = spied_direct(monkeypatch)
    looked: list[list[str]] = []
    real = direct.changed

    def spy(root: Root, paths: list[str], view: dict) -> set[str] | None:
        looked.append(sorted(paths))
        return real(root, paths, view)

    monkeypatch.setattr(direct, "changed", spy)
    top, out = _tree(tmp_path)
    (top / ".ignore").write_text("# nothing\n")
    (top / "docs" / "f0.txt").write_text("needle\n")
    os.link(top / ".ignore", out / "rules")
    _outside(top, out)
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    _append(out / "b.txt")
    hits = sorted(m["path"] for m in ix.search("needle", path=path))
    assert hits == (["docs/f0.txt", "src/a.txt"] if changed_read else ["docs/f0.txt"])
    assert len(calls) == 1 and ("src/a.txt" in calls[0]) == changed_read
    assert looked == [[".ignore", "src/a.txt"] if changed_read else [".ignore"]]
    _ignore_all(out / "rules")
    assert [m["path"] for m in ix.search("needle", path="docs")] == []
    assert len(calls) == 1  # walked: the ignore file above changed
