"""The walk-less answer's choice of files (docs/configuration.md, "The search index")."""

from __future__ import annotations

import pytest

from app.fs.index import direct


def _all(rel: str, name: str) -> bool:
    return True


# (found by the index, files it holds, changed since, expected: None = the call walks)
CASES = [
    # a changed file the index already holds again is one file to read, not two: counted
    # twice, a build that had just indexed the changes sent the next search through a walk
    (["a.txt"], 3, {"a.txt"}, ["a.txt"]),
    (["a.txt", "b.txt"], 4, {"a.txt", "b.txt"}, ["a.txt", "b.txt"]),
    (["a.txt"], 4, {"a.txt", "gone.txt"}, ["a.txt", "gone.txt"]),
    # past half of the files held, each counted once: the walk costs little next to them
    (["a.txt", "b.txt"], 3, set(), None),
    (["a.txt"], 3, {"b.txt"}, None),
    (["a.txt"], 4, {"b.txt"}, ["a.txt", "b.txt"]),
    ([], 0, set(), []),
]


@pytest.mark.parametrize(("found", "total", "dirty", "want"), CASES)
def test_the_files_to_read_are_counted_once_against_the_share(
    found: list[str], total: int, dirty: set[str], want: list[str] | None,
) -> None:
    assert direct.candidates(found, total, dirty, (), _all) == want


def test_the_files_to_read_come_in_walk_order_under_the_start_folder_kept_by_the_glob() -> None:
    found = ["src/z.py", "b.txt", "src/deep/a.py", "src/a.md"]
    got = direct.candidates(found, 100, {"src/a.py", "other/x.py"}, ("src",),
                            lambda rel, name: name.endswith(".py"))
    assert got == ["src/a.py", "src/z.py", "src/deep/a.py"]
