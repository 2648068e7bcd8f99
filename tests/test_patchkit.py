"""tests/patchkit.py: the upstream change between two pluggy releases as `diff -ruN`, as
`git diff -M` and as V4A, each applied onto a copy of the old release (with `patch -p1`,
`git apply` and patchkit's own V4A reader) leaves the new release byte for byte."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import patchkit
from tests.patchkit import Unconvertible


@dataclass(frozen=True)
class Corpus:
    old: Path
    new: Path
    diff: bytes
    git: bytes
    v4a: str


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    work = tmp_path_factory.mktemp("patchkit")
    old, new = patchkit.trees(work / "trees")
    return Corpus(old, new, patchkit.diff_patch(old, new, work / "diff"),
                  patchkit.git_patch(old, new, work / "git"), patchkit.v4a_patch(old, new))


def copy_of_old(corpus: Corpus, tmp_path: Path) -> Path:
    return Path(shutil.copytree(corpus.old, tmp_path / "tree", symlinks=True))


def test_the_releases_differ_by_adds_deletes_renames_and_edits(corpus: Corpus) -> None:
    old, new = patchkit.files(corpus.old), patchkit.files(corpus.new)
    assert old.keys() - new.keys() and new.keys() - old.keys()
    assert sum(old[p] != new[p] for p in old.keys() & new.keys()) >= 20
    assert not new["src/pluggy.egg-info/SOURCES.txt"].endswith(b"\n")  # a corner kept
    assert patchkit.executables(corpus.new) == {"scripts/upload-coverage.sh"}


def test_the_diff_patch_is_diff_ruN_with_epoch_headers_for_added_and_removed_files(
        corpus: Corpus) -> None:
    text = corpus.diff.decode()
    assert text.startswith("diff -ruN a/")
    assert re.search(r"^--- a/\S+\t1970-01-01 ", text, re.M)  # an added file
    assert re.search(r"^\+\+\+ b/\S+\t1970-01-01 ", text, re.M)  # a removed one


def test_the_git_patch_has_renames_modes_and_dev_null(corpus: Corpus) -> None:
    text = corpus.git.decode()
    assert "rename from src/pluggy/hooks.py\nrename to src/pluggy/_hooks.py" in text
    assert "new file mode 100755" in text and "deleted file mode 100644" in text
    assert "--- /dev/null" in text and "+++ /dev/null" in text


def test_the_v4a_patch_uses_every_operation_and_both_kinds_of_hunk(corpus: Corpus) -> None:
    text = corpus.v4a
    assert text.startswith("*** Begin Patch\n") and text.endswith("*** End Patch\n")
    for head in ("*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "):
        assert f"\n{head}" in text, head
    assert "\n@@\n" in text and "\n@@ " in text and "\n*** End of File\n" in text


def test_the_v4a_moves_are_the_renames_git_finds(corpus: Corpus) -> None:
    git = dict(re.findall(r"^rename from (.+)\nrename to (.+)$", corpus.git.decode(), re.M))
    v4a = dict(re.findall(r"^\*\*\* Update File: (.+)\n\*\*\* Move to: (.+)$", corpus.v4a,
                          re.M))
    assert v4a == git


def test_patch_p1_of_the_diff_gives_the_new_release(corpus: Corpus, tmp_path: Path) -> None:
    tree = copy_of_old(corpus, tmp_path)
    patchkit.apply_unified(corpus.diff, tree, "patch")
    assert patchkit.files(tree) == patchkit.files(corpus.new)


def test_git_apply_of_the_git_patch_gives_the_new_release_and_its_modes(
        corpus: Corpus, tmp_path: Path) -> None:
    tree = copy_of_old(corpus, tmp_path)
    patchkit.apply_unified(corpus.git, tree, "git")
    assert patchkit.files(tree) == patchkit.files(corpus.new)
    assert patchkit.executables(tree) == patchkit.executables(corpus.new)


def test_the_v4a_patch_read_back_gives_the_new_release(corpus: Corpus, tmp_path: Path) -> None:
    tree = copy_of_old(corpus, tmp_path)
    patchkit.apply_v4a(corpus.v4a, tree)
    assert patchkit.files(tree) == patchkit.files(corpus.new)


def test_a_spoiled_git_patch_is_refused_whole(corpus: Corpus, tmp_path: Path) -> None:
    tree = copy_of_old(corpus, tmp_path)
    with pytest.raises(RuntimeError, match="git exited"):
        patchkit.apply_unified(patchkit.spoil(corpus.git, "unified"), tree, "git")
    assert patchkit.files(tree) == patchkit.files(corpus.old)


def test_a_spoiled_diff_and_v4a_patch_fail(corpus: Corpus, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="patch exited"):
        patchkit.apply_unified(patchkit.spoil(corpus.diff, "unified"),
                               copy_of_old(corpus, tmp_path / "p"), "patch")
    spoiled = patchkit.spoil(corpus.v4a.encode(), "v4a").decode()
    with pytest.raises(ValueError, match="found 0 times"):
        patchkit.apply_v4a(spoiled, copy_of_old(corpus, tmp_path / "v"))


# -- the converter on small trees ---------------------------------------------------------


def _tree(top: Path, content: dict[str, bytes]) -> Path:
    for rel, raw in content.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_bytes(raw)
    top.mkdir(parents=True, exist_ok=True)
    return top


def _round_trip(tmp_path: Path, old: dict[str, bytes], new: dict[str, bytes]) -> str:
    a, b = _tree(tmp_path / "a", old), _tree(tmp_path / "b", new)
    text = patchkit.v4a_patch(a, b)
    work = Path(shutil.copytree(a, tmp_path / "work"))
    patchkit.apply_v4a(text, work)
    assert patchkit.files(work) == new
    return text


@pytest.mark.parametrize(("old", "new", "why"), [
    ({}, {"n.txt": b"no newline"}, "added without a final newline"),
    ({"f.txt": b"a\nb\n"}, {"f.txt": b"a\nb"}, "final newline"),
    ({"f.txt": b"a\nb"}, {"f.txt": b"a\nc\n"}, "final newline"),
    ({"f.txt": b""}, {"f.txt": b"a"}, "final newline"),
    ({"f.bin": b"\xff\xfe"}, {"f.bin": b"\xff\xfd"}, "not UTF-8"),
    ({"f.bin": b"a\x00b"}, {"f.bin": b"a\x00c"}, "NUL"),
])
def test_what_v4a_cannot_say_is_refused(tmp_path: Path, old: dict[str, bytes],
                                        new: dict[str, bytes], why: str) -> None:
    with pytest.raises(Unconvertible, match=why):
        patchkit.v4a_patch(_tree(tmp_path / "a", old), _tree(tmp_path / "b", new))


def test_a_repeated_block_gets_the_context_or_scope_that_makes_it_unique(
        tmp_path: Path) -> None:
    body = b"    x = 1\n    y = 2\n    z = 3\n    return x\n"
    old = {"m.py": b"def f():\n" + body + b"\n\ndef g():\n" + body}
    new = {"m.py": old["m.py"][: -len(b"    return x\n")] + b"    return y\n"}
    text = _round_trip(tmp_path, old, new)
    assert "@@ def g():" in text


def test_an_unchanged_binary_file_and_an_empty_file_are_no_obstacle(tmp_path: Path) -> None:
    old = {"logo.png": b"\x89PNG\r\n\x1a\n\x00", "e.txt": b"", "t.txt": b"a\n"}
    new = {"logo.png": b"\x89PNG\r\n\x1a\n\x00", "e.txt": b"now\n", "t.txt": b"a\n",
           "new/empty.txt": b""}
    _round_trip(tmp_path, old, new)


LINES = st.lists(st.sampled_from(["a", "b", "", "def f():", "    x", "c"]), max_size=14)


@settings(max_examples=150, deadline=None)
@given(old=LINES, new=LINES, final=st.booleans())
def test_any_text_change_converts_and_reads_back(tmp_path_factory: pytest.TempPathFactory,
                                                 old: list[str], new: list[str],
                                                 final: bool) -> None:
    end = "\n" if final else ""
    before = ("\n".join(old) + end if old else "").encode()
    after = ("\n".join(new) + end if new else "").encode()
    a_final, b_final = before.endswith(b"\n"), after.endswith(b"\n")
    if after and ((before and a_final != b_final) or (not before and not b_final)):
        with pytest.raises(Unconvertible, match="final newline"):
            _round_trip(tmp_path_factory.mktemp("h"), {"f.txt": before}, {"f.txt": after})
        return
    _round_trip(tmp_path_factory.mktemp("h"), {"f.txt": before}, {"f.txt": after})
