"""Real patches through apply_patch: the upstream change between two pluggy releases
(tests/patchkit.py: downloaded pinned and hash-checked by run_tests.sh) as `diff -ruN`, as
`git diff -M` and converted to V4A, applied onto a copy of the old release, leaves the new
one byte for byte; with one hunk spoiled, it changes nothing."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.errors import BadArgument
from app.fs.change.patch import apply_patch
from tests import patchkit
from tests.kit import secure_root

MAX_READ = 1 << 22


@dataclass(frozen=True)
class Corpus:
    old: Path
    new: Path
    patches: dict[str, str]  # by format: diff, git, v4a


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    work = tmp_path_factory.mktemp("realpatch")
    old, new = patchkit.trees(work / "trees")
    return Corpus(old, new, {
        "diff": patchkit.diff_patch(old, new, work / "diff").decode(),
        "git": patchkit.git_patch(old, new, work / "git").decode(),
        "v4a": patchkit.v4a_patch(old, new),
    })


def tree(top: Path) -> dict[str, bytes]:
    return {k: v for k, v in patchkit.files(top).items() if not k.startswith(".mcp-trash/")}


FORMATS = {
    # format: (files, how many of them: added, deleted, moved)
    "diff": (43, 8, 7, 0),  # diff -ruN knows no renames: a moved file is deleted and added
    "git": (40, 5, 4, 3),
    "v4a": (40, 5, 4, 3),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_the_upstream_change_turns_the_old_release_into_the_new(
    corpus: Corpus, tmp_path: Path, fmt: str
) -> None:
    top = Path(shutil.copytree(corpus.old, tmp_path / "tree", symlinks=True))
    done, _ = apply_patch(secure_root(top, max_read_bytes=MAX_READ), corpus.patches[fmt])
    assert tree(top) == tree(corpus.new)
    changes = [f.change for f in done.files]
    assert (len(changes), changes.count("added"), changes.count("deleted"),
            changes.count("moved")) == FORMATS[fmt]
    assert {m.match for f in done.files for m in f.matches} == {"exact"}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_the_change_with_one_bad_hunk_changes_nothing(
    corpus: Corpus, tmp_path: Path, fmt: str
) -> None:
    top = Path(shutil.copytree(corpus.old, tmp_path / "tree", symlinks=True))
    kind = "v4a" if fmt == "v4a" else "unified"
    bad = patchkit.spoil(corpus.patches[fmt].encode(), kind).decode()
    with pytest.raises(BadArgument, match=r"nothing was changed: .* hunk "):
        apply_patch(secure_root(top, max_read_bytes=MAX_READ), bad)
    assert tree(top) == tree(corpus.old)
    assert not (top / ".mcp-trash").exists()
