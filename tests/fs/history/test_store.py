"""The object store fed through handles: sizes read from headers equal git's, for
loose objects and packed ones (deltas included), so a huge blob is refused before
it is inflated."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fs.control import NoControl
from app.fs.history import ops, store
from app.fs.history.gitdir import GitDir
from tests.fs.history.conftest import build_history, fast_history, make_root


def sizes_equal_git(repo) -> int:
    out = repo.git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objectsize)")
    n = 0
    with GitDir(make_root(repo.path), op="test") as git:
        assert git.store is not None
        for line in out.splitlines():
            sha, size = line.split()
            assert git.store.size(sha.encode()) == int(size), sha
            n += 1
    return n


@pytest.mark.parametrize("packed", [False, True])
def test_object_sizes_equal_git(tmp_path: Path, packed: bool) -> None:
    repo, _ = build_history(tmp_path)
    if packed:
        repo.git("gc", "-q", "--aggressive")
    assert sizes_equal_git(repo) > 30


def test_delta_sizes_equal_git(tmp_path: Path) -> None:
    repo = fast_history(tmp_path / "r", 300)
    repo.git("gc", "-q", "--aggressive")
    deltas = repo.git("cat-file", "--batch-all-objects", "--batch-check=%(deltabase)").split()
    assert sum(d != "0" * 40 for d in deltas) > 100
    assert sizes_equal_git(repo) > 500


def test_a_large_file_is_inflated_no_further_than_the_read_budget(
    tmp_path: Path, inflated: list[int]
) -> None:
    """git_show of a 1.3 MB file (loose) on a root whose max_read_bytes is 256 KiB serves its
    first lines and inflates little more than 256 KiB of it (it was read whole, and refused
    above a size claimed in its header, before). One stored as a delta is rebuilt whole,
    within chains.py's limits."""
    repo, _ = build_history(tmp_path)
    got = ops.git_show(make_root(repo.path, max_read=256 * 1024), commit="HEAD",
                       path="big.txt", start_line=1, end_line=3, offset=0, cap=65536,
                       control=NoControl())
    assert got.file is not None and got.file.content.startswith("1 | line 0 of a large file")
    assert max(inflated) <= 256 * 1024 + 1
    assert sum(inflated) < 1024 * 1024  # the file is 1.3 MB


def test_no_object_above_the_bound_is_inflated(tmp_path: Path, monkeypatch) -> None:
    from app.fs.history.store import ObjectTooLarge

    repo, _ = build_history(tmp_path)
    repo.git("gc", "-q")
    monkeypatch.setattr(store, "MAX_OBJECT", 100)  # every commit here is larger
    with pytest.raises(ObjectTooLarge, match=r"commit [0-9a-f]{12} is \d+ bytes, above 100"):
        ops.git_log(make_root(repo.path), path="", commit="HEAD", offset=0, limit=5,
                    cursor=None, cap=65536, control=NoControl())
