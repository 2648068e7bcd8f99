"""search_files: pruning, glob scope, root-relative results, stable pages."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument, NotADirectory
from app.fs.control import NoControl
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions
from app.security.resolve import Root
from tests.fs.readkit import small_root


def run(root: Root, pattern: str, **kw: Any):
    args: dict[str, Any] = dict(path="", offset=0, limit=1000, cap=1 << 20, control=NoControl())
    args.update(kw)
    control = args.pop("control")
    return search_files(root, FilesOptions(pattern=pattern, **args), control)


def test_denied_trees_cost_one_name_and_are_never_reported(tmp_path: Path) -> None:
    files = {f"node_modules/p{i}/index.js": "" for i in range(300)}
    files |= {f".venv/lib/m{i}.py": "" for i in range(300)}
    files |= {"src/a.py": "", "src/.env": "", "src/b.py": ""}
    root = small_root(tmp_path, files)
    r = run(root, "*")
    assert [m.path for m in r.matches] == ["src", "src/a.py", "src/b.py"]
    assert r.examined_entries == 3  # src, src/a.py, src/b.py: nothing under the pruned names


def test_the_glob_is_relative_to_path_and_results_to_the_root(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"src/pkg/a.py": "", "src/pkg/sub/b.py": "", "pkg/c.py": ""})
    assert [m.path for m in run(root, "pkg/*.py").matches] == ["pkg/c.py"]
    assert [m.path for m in run(root, "pkg/*.py", path="src").matches] == ["src/pkg/a.py"]
    assert [m.path for m in run(root, "**/*.py", path="src").matches] == [
        "src/pkg/a.py", "src/pkg/sub/b.py"]
    assert [m.path for m in run(root, "*.py", path="src/pkg/sub").matches] == ["src/pkg/sub/b.py"]


def test_a_search_under_an_in_root_link_reports_paths_through_it(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"real/x.py": ""})
    os.symlink("real", tmp_path / "r" / "alias")
    r = run(root, "*.py", path="alias")
    assert [m.path for m in r.matches] == ["alias/x.py"]
    whole = run(root, "*.py")
    assert [m.path for m in whole.matches] == ["real/x.py"] and whole.skipped_links == 1


@pytest.mark.parametrize(("path", "error"), [("f.txt", NotADirectory), ("", BadArgument)])
def test_bad_paths_and_patterns_are_errors_not_empty_results(tmp_path: Path, path: str,
                                                             error: type) -> None:
    root = small_root(tmp_path, {"f.txt": ""})
    with pytest.raises(error):
        run(root, "[x" if error is BadArgument else "*", path=path)


_TREE: dict[str, Root] = {}


def _tree(factory: pytest.TempPathFactory) -> Root:
    if "r" not in _TREE:
        files = {f"d{i % 5}/e{i % 3}/f{i:03d}.txt": "" for i in range(120)}
        _TREE["r"] = small_root(factory.mktemp("sfpages"), files)
    return _TREE["r"]


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(1, 50), pattern=st.sampled_from(["*", "*.txt", "e1", "**/e2/*"]))
def test_pages_walked_by_next_offset_equal_the_whole(tmp_path_factory: pytest.TempPathFactory,
                                                     limit: int, pattern: str) -> None:
    root = _tree(tmp_path_factory)
    whole = [m.model_dump() for m in run(root, pattern).matches]
    got: list[dict[str, Any]] = []
    offset = 0
    while True:
        r = run(root, pattern, offset=offset, limit=limit)
        got += [m.model_dump() for m in r.matches]
        if not r.has_more:
            break
        assert r.next_offset == offset + r.returned == offset + limit
        offset = r.next_offset
    assert got == whole and len(whole) > 0


def test_output_cap_cuts_a_page_and_the_next_offset_continues_it(tmp_path: Path) -> None:
    root = small_root(tmp_path, {f"{'x' * 80}{i:03d}.txt": "" for i in range(100)})
    r = run(root, "*.txt", limit=100, cap=2000)
    assert 0 < r.returned < 100 and r.has_more and r.next_offset == r.returned
    assert "output limit reached (max_output_chars = 2000)" in (r.note or "")
    assert len(r.model_dump_json()) <= 2000
    rest = run(root, "*.txt", offset=r.next_offset, limit=100, cap=1 << 20)
    names = [m.path for m in r.matches + rest.matches]
    assert names == sorted(names) and len(names) == 100
