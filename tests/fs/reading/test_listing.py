"""list_directory and stat_path, called directly."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from app.errors import DeniedName, EscapesRoot, NotADirectory, NotFound
from app.fs.control import NoControl
from app.fs.reading.listing import list_directory, stat_path
from app.security.resolve import Root
from tests.fs.readkit import small_root


def ls(root: Root, path: str = "", **kw):
    args = dict(recursive=False, max_depth=2, offset=0, limit=1000, cap=1 << 20,
                control=NoControl())
    args.update(kw)
    return list_directory(root, path, **args)  # type: ignore[arg-type]


@pytest.fixture
def root(tmp_path: Path) -> Root:
    r = small_root(tmp_path, {"b.txt": "bb", "a/x.txt": "x", "a/deep/y.txt": "y", ".env": "S",
                              "c/.git/HEAD": "ref"})
    top = tmp_path / "r"
    os.symlink("a", top / "to_a")
    os.symlink("/etc", top / "to_etc")
    os.mkfifo(top / "pipe")
    return r


def test_a_listing_is_sorted_typed_and_blind_to_denied_names(root: Root) -> None:
    r = ls(root)
    assert [(e.name, e.type, e.size) for e in r.entries] == [
        ("a", "dir", None), ("b.txt", "file", 2), ("c", "dir", None), ("pipe", "other", None),
        ("to_a", "symlink", None), ("to_etc", "symlink", None)]
    assert r.skipped_links == 2 and not r.has_more and r.returned == 6


def test_recursion_stops_at_max_depth_and_at_links(root: Root) -> None:
    one = [e.path for e in ls(root, recursive=True, max_depth=1).entries]
    two = [e.path for e in ls(root, recursive=True, max_depth=2).entries]
    three = [e.path for e in ls(root, recursive=True, max_depth=3).entries]
    assert one == [e.path for e in ls(root).entries]
    assert two == [*one, "a/deep", "a/x.txt"]  # c/ holds only a denied name
    assert three == [*two, "a/deep/y.txt"]
    assert not [p for p in three if p.startswith("to_") and "/" in p]


def test_a_recursive_listing_says_which_folders_it_did_not_enter(root: Root) -> None:
    """A listing that stops at its depth says so (docs/tools.md): the folders at the last
    level listed, and the depth that goes further. One level, or a depth that reaches the
    bottom, has nothing to say."""
    two = ls(root, recursive=True, max_depth=2)
    assert [e.path for e in two.entries if e.type == "dir" and e.path.count("/") == 1] == [
        "a/deep"]
    assert two.note == "1 folder(s) at depth 2 not entered; max_depth=3 lists deeper"
    one = ls(root, recursive=True, max_depth=1)
    assert one.note == "2 folder(s) at depth 1 not entered; max_depth=2 lists deeper"
    assert ls(root).note is None  # one level was asked for, and given
    assert ls(root, recursive=True, max_depth=3).note is None
    # Counted on the page shown: a page without such a folder says nothing of the others.
    first = ls(root, recursive=True, max_depth=2, limit=2)
    assert [e.path for e in first.entries] == ["a", "b.txt"] and first.note is None
    deepest = ls(root, "a", recursive=True, max_depth=64)
    assert deepest.note is None
    assert ls(root, recursive=True, max_depth=64).note is None


def test_at_the_deepest_depth_the_note_does_not_offer_a_deeper_one(tmp_path: Path) -> None:
    from app.fs.reading.listing import MAX_DEPTH

    r = small_root(tmp_path, {"/".join(["d"] * (MAX_DEPTH + 1)) + "/f.txt": "x"})
    got = ls(r, recursive=True, max_depth=MAX_DEPTH, limit=1000)
    assert got.note == f"1 folder(s) at depth {MAX_DEPTH} not entered; list them one by one"


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_pages_of_a_listing_add_up(root: Root, limit: int) -> None:
    whole = ls(root, recursive=True, max_depth=5).entries
    got = []
    offset = 0
    while True:
        r = ls(root, recursive=True, max_depth=5, offset=offset, limit=limit)
        got += r.entries
        if not r.has_more:
            break
        offset = r.next_offset
    assert got == whole


@pytest.mark.parametrize(("path", "error"), [
    ("b.txt", NotADirectory), ("nope", NotFound), ("c/.git", DeniedName), ("to_etc", EscapesRoot),
])
def test_listing_something_that_is_not_a_reachable_directory_is_an_error(
    root: Root, path: str, error: type
) -> None:
    with pytest.raises(error):
        ls(root, path)


def test_stat_of_files_dirs_links_and_others(root: Root, tmp_path: Path) -> None:
    f = stat_path(root, "b.txt")
    assert (f.type, f.size, f.is_text) == ("file", 2, True)
    assert f.sha256 == hashlib.sha256(b"bb").hexdigest() and f.mode == "0644"
    assert stat_path(root, "to_a").type == "dir"  # an in-root link is followed
    assert stat_path(root, "pipe").type == "other"
    top = stat_path(root, "")
    assert top.type == "dir" and top.path == "" and top.sha256 is None
    with pytest.raises(EscapesRoot):
        stat_path(root, "to_etc")
    with pytest.raises(DeniedName):
        stat_path(root, ".env")


def test_stat_gives_no_hash_for_a_file_larger_than_the_budget(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"big": "x" * 5000}, max_read=4096)
    r = stat_path(root, "big")
    assert r.size == 5000 and r.sha256 is None and r.is_text
