"""The walk-less answer's choice of files (docs/configuration.md, "The search index")."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fs.index.trigrams import direct
from tests.fs.index.trigramkit import Indexed, spied_direct
from tests.kit import secure_root


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


def test_a_candidates_folder_that_cannot_be_opened_is_said_in_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its files cannot be read: the answer says so, as a walk says what it could not read,
    rather than leave them out in silence."""
    calls = spied_direct(monkeypatch)
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    (top / "src" / "a.py").write_text("needle\n")
    (top / "b.txt").write_text("needle\n")
    ix = Indexed(secure_root(top), tmp_path / "state")
    assert ix.build().complete
    real = ix.root.open_subdir

    def fails(parts: tuple[str, ...]) -> int:
        if parts == ("src",):
            raise PermissionError(13, "Permission denied")
        return real(parts)

    monkeypatch.setattr(ix.root, "open_subdir", fails)
    assert [m["path"] for m in ix.search("needle")] == ["b.txt"]
    assert calls == [["b.txt", "src/a.py"]]  # without a walk
    assert ix.notes[-1] == "1 directory could not be read and were skipped"
