"""The walk's filter: which ignore files apply where, in which order they are asked, what one
call may read of them, and `exclude` globs. Whole trees against ripgrep are in
`tests/fs/search/test_regex.py` and `test_rg.py`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from app.fs.filters.gitignore import IgnoreFile
from app.fs.filters.ignore import Budget, Filter, Level, decide, in_order, read_level
from app.security.walk import Walker
from tests.fs.readkit import small_root
from tests.fs.search import rgkit


def one(text: bytes) -> IgnoreFile:
    parsed, _ = IgnoreFile.parse(text)
    assert parsed is not None
    return parsed


def test_files_are_asked_by_kind_first_then_deepest_first() -> None:
    top = Level(b"", (None, one(b"!x"), one(b"x")))  # .rgignore, .ignore, .gitignore
    deep = Level(b"d/", (None, None, one(b"!x")))
    files = in_order((top, deep))
    # .ignore at the top answers before the deeper .gitignore: ripgrep's precedence
    assert [cut for _, cut in files] == [0, 2, 0]
    assert decide(files, b"d/x", b"x", False) is False
    assert decide(in_order((Level(b"", (None, None, one(b"x"))), deep)), b"d/x", b"x",
                  False) is False  # same kind: the deeper file decides
    assert decide(files, b"d/y", b"y", False) is False  # no rule says: shown


def walked(tmp_path: Path, files: dict[str, str], start: tuple[str, ...] = (),
           exclude: tuple[str, ...] = (), no_ignore: bool = False) -> tuple[list[str], Filter]:
    root = small_root(tmp_path, files)
    filt = Filter(root, start, exclude, no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    return sorted(d.prefix + e.name for d in walker.dirs() for e in d.entries), filt


def test_ignore_files_above_the_start_apply_below_it(tmp_path: Path) -> None:
    seen, filt = walked(tmp_path, {".gitignore": "*.log\n", "s/a.log": "", "s/b.txt": ""},
                        start=("s",))
    assert seen == ["s/b.txt"] and filt.hidden_files == 1
    assert filt.note() == ("ignore files (.gitignore, .ignore) hid 1 file(s); no_ignore=true "
                           "searches them too")


def test_exclude_globs_prune_files_and_folders_and_are_counted(tmp_path: Path) -> None:
    seen, filt = walked(tmp_path, {"v/x.py": "", "a.min.js": "", "a.js": ""},
                        exclude=("v", "*.min.js"), no_ignore=True)
    assert seen == ["a.js"] and filt.excluded == 2 and filt.note() is None


def test_no_ignore_and_no_exclude_is_no_filter(tmp_path: Path) -> None:
    seen, filt = walked(tmp_path, {".gitignore": "*\n", "a": ""}, no_ignore=True)
    assert not filt.active and seen == [".gitignore", "a"]


@pytest.mark.parametrize(("left", "rules", "short"), [
    (1 << 20, 100, 0),  # room: every file read
    (0, 100, 2),  # no bytes left: the two files are not read, and counted
    (1 << 20, 0, 2),  # no rules left: likewise
])
def test_the_call_budget_is_spent_by_what_is_read(tmp_path: Path, left: int, rules: int,
                                                  short: int) -> None:
    root = small_root(tmp_path, {".gitignore": "*.log\n", ".ignore": "*.tmp\n"})
    budget = Budget(left, rules)
    fd = root.open_subdir(())
    try:
        level = read_level(fd, b"", [".gitignore", ".ignore"], budget)
    finally:
        os.close(fd)
    assert budget.short == short
    assert (level is None) == bool(short)
    if level is not None:
        assert budget.left == left - 12 and budget.rules == rules - 2


def _link_inside(top: Path) -> None:
    (top / "rules.txt").write_text("*.log\n")
    (top / ".gitignore").symlink_to("rules.txt")


def _link_outside(top: Path) -> None:
    (top.parent / "outside-rules").write_text("*.log\n")
    (top / ".gitignore").symlink_to(top.parent / "outside-rules")


def _a_folder(top: Path) -> None:
    (top / ".gitignore").mkdir()


UNREADABLE = [
    pytest.param(_link_inside, id="a-link-to-a-file-of-the-root"),
    pytest.param(_link_outside, id="a-link-out-of-the-root"),
    pytest.param(_a_folder, id="a-folder"),
]


@pytest.mark.parametrize("make", UNREADABLE)
def test_an_ignore_file_that_cannot_be_read_hides_nothing_and_is_said(
    tmp_path: Path, make: Callable[[Path], None],
) -> None:
    """A link is never followed, not even to an ignore file (ripgrep follows it: a tested
    difference, below): what it would hide is listed, and the note says why."""
    walked(tmp_path, {"a.log": "", "b.txt": ""})
    make(tmp_path / "r")
    seen, filt = walked(tmp_path, {})
    assert "a.log" in seen and filt.hidden_files == 0
    assert filt.note() == ("1 ignore file(s) could not be read (a symbolic link, which is "
                           "never followed, or unreadable), so what they would hide is "
                           "included")


@pytest.mark.skipif(rgkit.RG is None, reason="ripgrep (rg) is not installed")
def test_ripgrep_follows_a_linked_ignore_file(tmp_path: Path) -> None:
    """The difference named above, as ripgrep shows it."""
    small_root(tmp_path, {"a.log": "x\n", "b.txt": "x\n"})
    (tmp_path / "r" / ".git").mkdir()  # ripgrep reads a .gitignore in a git work tree only
    _link_inside(tmp_path / "r")
    assert rgkit.rg_files(tmp_path / "r", "x") == {"b.txt"}
