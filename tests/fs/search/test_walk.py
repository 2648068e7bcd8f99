"""The walk of a search: its start opened through the choke point, its names spelled as the
request spelled them, and each folder's candidate files (regular files the glob keeps)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.errors import LoomError
from app.fs.filters.glob import compile_glob
from app.fs.search.options import FilesOptions
from app.fs.search.walk import candidates, open_walk
from tests.fs.readkit import small_root

TREE = {"a.py": "", "b.txt": "", "src/c.py": "", "src/pkg/d.py": "", "src/pkg/e.txt": "",
        "docs/f.md": "", ".gitignore": "*.txt\n"}


def listed(tmp_path: Path, pattern: str, path: str = "", **kw: Any) -> list[str]:
    root = small_root(tmp_path, TREE)
    os.symlink("a.py", tmp_path / "r" / "link.py")  # a link is never a candidate
    walk = open_walk(root, FilesOptions(pattern="*", path=path, limit=1, cap=1, **kw),
                     "search_text")
    return [walk.name_of(prefix + n)
            for _, prefix, names in candidates(walk, compile_glob(pattern)) for n in names]


@pytest.mark.parametrize(("pattern", "path", "found"), [
    # every regular file, in walk order (breadth-first, sorted); ignore files prune
    ("*", "", [".gitignore", "a.py", "docs/f.md", "src/c.py", "src/pkg/d.py"]),
    # a base-name glob at any depth; a glob with '/' on the path relative to the start
    ("*.py", "", ["a.py", "src/c.py", "src/pkg/d.py"]),
    ("pkg/*.py", "src", ["src/pkg/d.py"]),
    ("src/*.py", "", ["src/c.py"]),
    # the start as the request spelled it
    ("*.py", "src/", ["src/c.py", "src/pkg/d.py"]),
    ("*.py", "./src", ["src/c.py", "src/pkg/d.py"]),
])
def test_candidates_are_the_regular_files_the_glob_keeps(tmp_path: Path, pattern: str,
                                                         path: str, found: list[str]) -> None:
    assert listed(tmp_path, pattern, path) == found


def test_excluded_and_ignored_names_are_pruned_by_the_filter(tmp_path: Path) -> None:
    assert listed(tmp_path, "*", no_ignore=True, exclude=["docs", "*.py"]) == [
        ".gitignore", "b.txt", "src/pkg/e.txt"]


@pytest.mark.parametrize("path", ["nope", "a.py", "../x"])
def test_a_start_that_is_no_folder_of_the_root_is_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(LoomError):
        listed(tmp_path, "*", path)
