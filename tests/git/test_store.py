"""The object store fed through handles: sizes read from headers equal git's, for
loose objects and packed ones (deltas included), so a huge blob is refused before
it is inflated."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import TooLarge
from app.fs.history import ops, store
from app.fs.history.gitdir import GitDir
from app.fs.paging import NoControl
from tests.git.conftest import build_history, fast_history, make_root


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


def test_a_blob_above_the_limit_is_refused_before_it_is_loaded(tmp_path: Path,
                                                               monkeypatch) -> None:
    repo, _ = build_history(tmp_path)
    root = make_root(repo.path)
    monkeypatch.setattr(store, "MAX_BLOB", 100_000)

    def never(*_a: object) -> None:
        raise AssertionError("the blob was loaded")

    from app.fs.history.store import RootObjectStore

    real = RootObjectStore.object
    big: bytes  # the blob's id, set below (the patch reads it when called)
    monkeypatch.setattr(RootObjectStore, "object", lambda self, sha: (
        never() if sha == big else real(self, sha)))
    big = repo.git("rev-parse", "HEAD:big.txt").strip().encode()
    with pytest.raises(TooLarge, match="above 100000"):
        ops.git_show(root, commit="HEAD", path="big.txt", start_line=1, end_line=3, offset=0,
                     cap=65536, control=NoControl())


def test_no_object_above_the_bound_is_inflated(tmp_path: Path, monkeypatch) -> None:
    from app.fs.history import store
    from app.fs.history.store import ObjectTooLarge

    repo, _ = build_history(tmp_path)
    repo.git("gc", "-q")
    monkeypatch.setattr(store, "MAX_OBJECT", 100)  # every commit here is larger
    with pytest.raises(ObjectTooLarge, match=r"object [0-9a-f]{12} is \d+ bytes, above 100"):
        ops.git_log(make_root(repo.path), path="", commit="HEAD", offset=0, limit=5,
                    cursor=None, cap=65536, control=NoControl())
