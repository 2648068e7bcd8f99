"""A folder copy costs what it visits and leaves nothing when it fails: copying a tree d
levels deep opens O(d) folders (counted, not timed), every folder made and every file
copied is a cancel check, and a copy that fails (a full disk) or is cancelled removes
what it made and says so, so that the same copy then works."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from app.errors import BudgetSpent, LoomError
from app.fs.change import copying
from app.fs.change.copy import copy_file
from app.security.resolve import SecureRoot
from tests.fs.conftest import CancelAfter, Cancelled, temp_leftovers
from tests.kit import count_folder_opens
from tests.security.conftest import make_root


def _chain(top: Path, levels: int, *, files: bool = True) -> None:
    here = top / "src"
    for i in range(levels):
        here = here / f"d{i}"
        here.mkdir(parents=True)
        if files:
            (here / "f.txt").write_text(f"{i}\n")


class _Counting:
    """A control that counts its checks and os.mkdir calls made before each."""

    def __init__(self) -> None:
        self.checks = 0

    def check(self) -> None:
        self.checks += 1

    def progress(self, *a: object) -> None:
        pass



def _opens_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: int) -> int:
    top = tmp_path / f"t{levels}"
    _chain(top, levels)
    root = make_root(top)  # the component walk: every folder opened is an os.open
    count = count_folder_opens(monkeypatch)
    out = copy_file(root, "src", root, "dst")
    monkeypatch.undo()
    assert out.files == levels and not out.truncated
    subprocess.run(["rm", "-rf", str(top)], check=True, timeout=60)
    return count[0]


def test_copying_a_tree_d_deep_opens_O_d_folders(tmp_path, monkeypatch):
    """Each folder is opened once on either side, from its parent's handle, not again
    from the copy's top for every level below it (which cost d²/2 opens per side)."""
    shallow, deep = _opens_for(tmp_path, monkeypatch, 10), _opens_for(tmp_path, monkeypatch, 60)
    per_level = (deep - shallow) / 50
    assert per_level <= 6, (shallow, deep)  # the walk, the source side and the copy's side
    assert deep / 60 <= 1.5 * shallow / 10, (shallow, deep)


@pytest.mark.parametrize("files", [True, False], ids=["with files", "folders only"])
def test_a_cancel_at_any_step_stops_there_and_leaves_nothing(tmp_path, files):
    top = tmp_path / "r"
    levels = 12
    _chain(top, levels, files=files)
    root = make_root(top)
    counting = _Counting()
    copy_file(root, "src", root, "probe", control=counting)
    subprocess.run(["rm", "-rf", str(top / "probe")], check=True)
    # The walk checks once per folder; making them is a step each too, as is each file.
    assert counting.checks >= 2 * (levels + 1) + (levels if files else 0)
    before = sorted(p.name for p in top.iterdir())
    for n in range(counting.checks):
        control = CancelAfter(n)
        with pytest.raises(Cancelled):
            copy_file(root, "src", root, "dst", control=control)
        assert control.left == -1  # not one check after the cancel
        assert sorted(p.name for p in top.iterdir()) == before, n
    assert copy_file(root, "src", root, "dst").files == (levels if files else 0)


def _two_parts(top: Path) -> SecureRoot:
    (top / "src" / "sub").mkdir(parents=True)
    (top / "src" / "p0.bin").write_bytes(b"\0" * 150_000)
    (top / "src" / "sub" / "p1.bin").write_bytes(b"\1" * 150_000)
    return make_root(top)


def _no_space_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """ENOSPC at the one write of a copy, for the file `name` (its first byte)."""
    real = copying.stream

    def stream(src_fd, seen, rel, control, done):
        fill = real(src_fd, seen, rel, control, done)

        def full(fd: int) -> None:
            if rel.endswith(name):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fill(fd)

        return full

    monkeypatch.setattr(copying, "stream", stream)


def test_a_copy_that_fails_on_a_full_disk_removes_what_it_made_and_a_retry_works(
        tmp_path, monkeypatch):
    top = tmp_path / "r"
    root = _two_parts(top)
    before = sorted(os.listdir(top))
    _no_space_at(monkeypatch, "p1.bin")
    with pytest.raises(LoomError) as err:
        copy_file(root, "src", root, "dst")
    monkeypatch.undo()
    assert err.value.message == (
        "cannot copy 'src' to 'dst': stopped at 'sub/p1.bin': no space left on device; "
        "what it had made (1 file(s)) was removed, nothing is left at 'dst'")
    assert sorted(os.listdir(top)) == before and not temp_leftovers(top)
    out = copy_file(root, "src", root, "dst")
    assert out.files == 2 and (top / "dst" / "sub" / "p1.bin").stat().st_size == 150_000


def test_a_real_full_disk(tmp_path):
    """The same on a real file system that fills up: a 640 KiB tmpfs holding 300 KB of
    source and 150 KB of filler has room for one more 150 KB file, not two (needs the
    right to mount: skipped without it)."""
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=640k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    root = None
    try:
        root = _two_parts(disk)
        (disk / "filler").write_bytes(b"\2" * 150_000)
        with pytest.raises(LoomError, match="no space left on device; what it had made"):
            copy_file(root, "src", root, "dst")
        assert sorted(os.listdir(disk)) == ["filler", "src"] and not temp_leftovers(disk)
        (disk / "filler").unlink()
        assert copy_file(root, "src", root, "dst").files == 2
    finally:
        if root is not None:
            root.handle.close()  # else the mount is busy
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_copy_stopped_by_the_byte_budget_keeps_what_it_copied(tmp_path):
    top = tmp_path / "r"
    root = _two_parts(top)
    paid: list[int] = []

    def pay(n: int, rel: str) -> None:
        if paid:
            raise BudgetSpent("byte budget spent")
        paid.append(n)

    out = copy_file(root, "src", root, "dst", pay=pay)
    assert out.truncated and out.files == 1
    assert "stopped at 'sub/p1.bin': byte budget spent" in (out.note or "")
    assert (top / "dst" / "p0.bin").stat().st_size == 150_000
    assert not (top / "dst" / "sub" / "p1.bin").exists()
