"""Depth is bounded by construction: every path the server makes or moves into place lies at
most MAX_DEPTH levels below the root, and a change that would pass it is refused with
TooDeep before anything changes, whether the depth comes from the request, from a link on
the way, or from the subtree a folder move or copy carries with it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.errors import OSRefusal, TooDeep
from app.fs.change import copy, move, write
from app.security.paths import MAX_DEPTH
from app.security.resolve import Root
from tests.fs.conftest import refusal
from tests.security.conftest import make_root


def _tree(top: Path) -> list[str]:
    return sorted(str(Path(d, n).relative_to(top)) for d, ds, fs in os.walk(top) for n in ds + fs)


def _chain(top: Path, name: str, levels: int) -> str:
    """A folder `levels` deep (made with the system's own calls), its path relative to top."""
    rel = "/".join([name] * levels)
    top.joinpath(*rel.split("/")).mkdir(parents=True)
    return rel


@pytest.fixture
def top(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    top.mkdir()
    (top / "f.txt").write_text("x\n")
    (top / "at62").mkdir()
    _chain(top / "at62", "d", 61)  # at62/d/…/d: a folder 62 levels below the root
    _chain(top / "at64", "d", 63)  # and one at 64, made outside the server
    _chain(top, "s", 3)  # s/s/s: a folder 3 levels deep
    (top / "s" / "s" / "s" / "leaf.txt").write_text("leaf\n")  # 4 levels
    (top / "up").symlink_to("/".join(["at62"] + ["d"] * 61))  # an in-root link 62 deep
    return top


def deep(levels: int, leaf: str = "x") -> str:
    return "/".join(["n"] * (levels - 1) + [leaf])


AT62 = "/".join(["at62"] + ["d"] * 61)
AT64 = "/".join(["at64"] + ["d"] * 63)
Act = Callable[[Root], object]

# (what, the call, refused?)
DEPTHS: list[tuple[str, Act, bool]] = [
    ("create_directory at MAX_DEPTH", lambda r: write.create_directory(r, deep(MAX_DEPTH)), False),
    ("create_directory one past", lambda r: write.create_directory(r, deep(MAX_DEPTH + 1)), True),
    ("create_directory far past", lambda r: write.create_directory(r, deep(1500)), True),
    ("create_directory through a deep link",
     lambda r: write.create_directory(r, "up/a/b/c"), True),  # 62 + 3 = 65
    ("create_directory through a deep link, within",
     lambda r: write.create_directory(r, "up/a/b"), False),  # 62 + 2 = 64
    ("write_file at MAX_DEPTH", lambda r: write.write_file(r, deep(MAX_DEPTH), "x"), False),
    ("write_file one past", lambda r: write.write_file(r, deep(MAX_DEPTH + 1), "x"), True),
    ("write_file into a folder at 64", lambda r: write.write_file(r, f"{AT62}/a/b/c.txt", "x"),
     True),
    ("write_file into a folder made outside at 64",
     lambda r: write.write_file(r, f"{AT64}/c.txt", "x"), True),
    ("create_directory into a folder made outside at 64",
     lambda r: write.create_directory(r, f"{AT64}/c"), True),
    ("write_file through a deep link", lambda r: write.write_file(r, "up/a/b/c.txt", "x"), True),
    ("move_file a file to 65", lambda r: move.move_file(r, "f.txt", f"{AT64}/f.txt"), True),
    ("move_file a file to 64", lambda r: move.move_file(r, "f.txt", f"{AT62}/f.txt"), False),
    # s holds entries 3 levels below it: moved to depth 62 they would lie at 65
    ("move_file a folder whose subtree passes", lambda r: move.move_file(r, "s", f"{AT62}/s"),
     True),
    ("move_file a folder whose subtree fits", lambda r: move.move_file(r, "s", "at62/d/s"),
     False),
    ("move_file a folder through a deep link", lambda r: move.move_file(r, "s", "up/s"), True),
    ("copy_file a file to 65", lambda r: copy.copy_file(r, "f.txt", r, f"{AT64}/f.txt"), True),
    ("copy_file a file to 64", lambda r: copy.copy_file(r, "f.txt", r, f"{AT62}/f.txt"), False),
    ("copy_file a folder whose subtree passes",
     lambda r: copy.copy_file(r, "s", r, f"{AT62}/s"), True),
    ("copy_file a folder whose subtree fits", lambda r: copy.copy_file(r, "s", r, "at62/d/s"),
     False),
    ("copy_file a folder through a deep link", lambda r: copy.copy_file(r, "s", r, "up/s"), True),
]


@pytest.mark.parametrize("engine", ["walk", "openat2"])
@pytest.mark.parametrize(("what", "act", "refused"), DEPTHS, ids=[d[0] for d in DEPTHS])
def test_a_change_past_max_depth_is_refused_and_changes_nothing(top, engine, what, act, refused):
    root = make_root(top, engine=engine)
    before = _tree(top)
    try:
        if refused:
            with pytest.raises(TooDeep) as err:
                act(root)
            assert f"at most {MAX_DEPTH} levels" in err.value.message
            assert err.value.rule == "depth"
            assert _tree(top) == before
        else:
            act(root)
            assert _tree(top) != before
    finally:
        if (top / "n").exists():
            subprocess.run(["rm", "-rf", str(top / "n")], check=True, timeout=60)


def test_the_move_into_the_deepest_folder_attack_is_refused(tmp_path):
    """Two chains made by the server, then one moved into the other's deepest folder: the
    move is what would make the tree twice as deep, and it is refused."""
    top = tmp_path / "r"
    top.mkdir()
    root = make_root(top)
    half = MAX_DEPTH // 2 + 1
    write.create_directory(root, "/".join(["a"] * half))
    write.create_directory(root, "/".join(["b"] * half))
    before = _tree(top)
    with pytest.raises(TooDeep):
        move.move_file(root, "b", "/".join(["a"] * half) + "/b")
    with pytest.raises(TooDeep):
        copy.copy_file(root, "b", root, "/".join(["a"] * half) + "/b")
    assert _tree(top) == before


def test_a_move_that_does_not_deepen_is_not_walked_and_a_deeper_tree_on_disk_still_moves(
        tmp_path, monkeypatch):
    """A tree already deeper than MAX_DEPTH on disk (not made by the server) can be renamed
    beside itself: no entry ends deeper than it was, so nothing is walked."""
    top = tmp_path / "r"
    top.mkdir()
    _chain(top / "old", "d", MAX_DEPTH + 5)
    root = make_root(top)
    monkeypatch.setattr(move, "deeper_than", None)  # a walk would fail the test
    move.move_file(root, "old", "new")
    assert (top / "new" / "d").is_dir()


def test_the_subtree_walk_fails_closed(top, monkeypatch):
    """A folder inside the moved one that cannot be listed refuses the move: not having
    looked is not having found nothing."""
    root = make_root(top)
    real = os.scandir

    def refuse(fd):
        raise PermissionError(13, "denied")

    monkeypatch.setattr("app.security.walk.os.scandir", refuse)
    with pytest.raises(OSRefusal, match="how deep it goes cannot be checked"):
        move.move_file(root, "s", "at62/s")
    monkeypatch.setattr("app.security.walk.os.scandir", real)
    assert (top / "s" / "s" / "s" / "leaf.txt").exists()


E2E_TOO_DEEP = [
    ("create_directory", {"path": deep(MAX_DEPTH + 1)}),
    ("write_file", {"path": deep(MAX_DEPTH + 1), "content": "x"}),
    ("move_file", {"source": "notes.txt", "destination": deep(MAX_DEPTH + 1)}),
    ("copy_file", {"source": "dir", "destination": deep(MAX_DEPTH + 1)}),
]


@pytest.mark.parametrize(("tool", "args"), E2E_TOO_DEEP, ids=[t for t, _ in E2E_TOO_DEEP])
async def test_through_the_server_a_path_past_max_depth_is_a_tool_error(disk, server, tool,
                                                                        args):
    if tool in ("move_file", "copy_file"):  # their destination's folder must exist
        disk.ws.joinpath(*["n"] * MAX_DEPTH).mkdir(parents=True)
    try:
        text = await refusal(disk, server, tool, **args)
        assert "levels below the root" in text and f"at most {MAX_DEPTH} levels" in text
    finally:
        subprocess.run(["rm", "-rf", str(disk.ws / "n")], check=True, timeout=60)
