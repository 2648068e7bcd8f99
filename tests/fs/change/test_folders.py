"""A write that fails removes the folders it made on its way, and only those.

The failure is injected where a full disk would strike (ENOSPC at the write of the
content, or at one of the `mkdir`s), through the plain path, through an in-root link
to a folder, and for create_directory; the tree must then be exactly as before.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from app.errors import LoomError
from app.fs.change import atomic, write
from app.security.paths import MAX_DEPTH
from tests.kit import count_folder_opens
from tests.security.conftest import make_root

NO_SPACE = "no space left on device"


def _tree(top: Path) -> dict[str, str]:
    """Every entry under `top`: kind and, for files, content."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(dirpath) / name
            out[str(p.relative_to(top))] = "link" if p.is_symlink() else (
                "dir" if p.is_dir() else p.read_text())
    return out


@pytest.fixture
def top(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    (top / "dir").mkdir(parents=True)
    (top / "dir" / "a.txt").write_text("alpha\n")
    (top / "link").symlink_to("dir")
    return top


def _full_disk_at_write(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_write_all", no_space)


def _full_disk_at_mkdir(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if path == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)


CASES = [
    # (path, where the disk is full): every folder on the way is new
    ("d/e/f/g.txt", "write"),
    ("d/e/f/g.txt", "mkdir f"),
    ("d/g.txt", "write"),
    # below a folder that was there, which stays
    ("dir/new/deeper/g.txt", "write"),
    ("dir/new/deeper/g.txt", "mkdir deeper"),
    # through an in-root link to a folder (each level made on its own)
    ("link/new/deeper/g.txt", "write"),
    ("link/new/deeper/g.txt", "mkdir deeper"),
]


@pytest.mark.parametrize(("path", "where"), CASES)
@pytest.mark.parametrize("engine", ["openat2", "walk"])
def test_a_write_that_fails_leaves_no_folder_it_made(top, monkeypatch, path, where, engine):
    root = make_root(top, engine=engine)
    before = _tree(top)
    if where == "write":
        _full_disk_at_write(monkeypatch)
    else:
        _full_disk_at_mkdir(monkeypatch, where.split()[1])
    with pytest.raises(LoomError) as exc:
        write.write_file(root, path, "x\n")
    assert NO_SPACE in exc.value.message
    monkeypatch.undo()
    assert _tree(top) == before


@pytest.mark.parametrize("where", ["mkdir f", "mkdir e"])
def test_create_directory_that_fails_leaves_no_folder_it_made(top, monkeypatch, where):
    root = make_root(top)
    before = _tree(top)
    _full_disk_at_mkdir(monkeypatch, where.split()[1])
    with pytest.raises(LoomError) as exc:
        write.create_directory(root, "d/e/f")
    assert NO_SPACE in exc.value.message
    monkeypatch.undo()
    assert _tree(top) == before


def test_a_folder_someone_else_filled_meanwhile_stays(top, monkeypatch):
    """Only empty folders are removed: another writer's file keeps its folder (and the
    folders above it)."""
    root = make_root(top)

    def theirs_then_no_space(fd: int, data: bytes) -> None:
        (top / "d" / "e" / "theirs.txt").write_text("theirs\n")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_write_all", theirs_then_no_space)
    with pytest.raises(LoomError):
        write.write_file(root, "d/e/f/g.txt", "x\n")
    monkeypatch.undo()
    assert (top / "d" / "e" / "theirs.txt").read_text() == "theirs\n"
    assert not (top / "d" / "e" / "f").exists()


def test_a_write_that_succeeds_keeps_its_folders_and_a_deep_one_is_made_in_one_pass(top):
    root = make_root(top)
    deep = "/".join(["n"] * (MAX_DEPTH - 1))  # the deepest folder a write may make
    try:
        assert write.write_file(root, f"{deep}/g.txt", "x\n").created
        assert (top.joinpath(*deep.split("/")) / "g.txt").read_text() == "x\n"
    finally:  # pytest's own clean-up (shutil.rmtree) recurses: too deep for it
        subprocess.run(["rm", "-rf", str(top / "n")], check=True, timeout=60)
    assert write.create_directory(root, "link/made/here").created
    assert (top / "dir" / "made" / "here").is_dir()


def _folder_opens(top: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> int:
    root = make_root(top)  # the component walk: every folder opened is an os.open
    count = count_folder_opens(monkeypatch)
    assert write.write_file(root, f"{path}/g.txt", "x\n").created
    monkeypatch.undo()
    return count[0]


@pytest.mark.parametrize("through", ["", "link/"], ids=["plain", "through a link"])
def test_making_a_path_d_deep_opens_O_d_folders(top, monkeypatch, through):
    """Each level is opened once, from the one above it (a link on the way resolved once by
    the choke point), not from the top for each level (d²/2 opens through a link)."""
    shallow = _folder_opens(top, monkeypatch, through + "/".join(["s"] * 10))
    deep = _folder_opens(top, monkeypatch, through + "/".join(["n"] * 60))
    assert (deep - shallow) / 50 <= 4, (shallow, deep)


@pytest.mark.parametrize("path", ["d/e/f/g/h", "link/e/f/g/h"])
def test_making_folders_is_cancellable_at_each_level_and_leaves_nothing(top, path):
    from tests.fs.conftest import CancelAfter, Cancelled

    root = make_root(top)
    before = _tree(top)
    n = 0
    while True:
        control = CancelAfter(n)
        try:
            write.create_directory(root, path, control=control)
        except Cancelled:
            assert control.left == -1 and _tree(top) == before, n
            n += 1
            continue
        break
    assert n >= 4  # a check at each level made
    assert top.joinpath(*path.split("/")).is_dir()


# --- folders.py's own steps, in process ---------------------------------------------------


def test_a_folder_made_on_the_way_takes_the_default_mode_less_the_umask(top):
    from tests.fs.conftest import umask

    root = make_root(top)
    with umask(0o027):
        write.write_file(root, "d/e/g.txt", "x\n")
    for folder in (top / "d", top / "d" / "e"):
        assert folder.stat().st_mode & 0o7777 == 0o750


def _theirs_first(monkeypatch: pytest.MonkeyPatch, name: str, times: int) -> list[str]:
    """Another call makes `name` just before each of this call's first `times` mkdirs of it
    (this one's then finds it there); `times` large: gone again each time it is looked for.
    The names this call's mkdirs were given, in order."""
    real_mkdir = os.mkdir
    asked: list[str] = []
    state = {"left": times}

    def mkdir(path, *args, **kwargs):
        asked.append(path)
        if path == name and state["left"] > 0:
            state["left"] -= 1
            real_mkdir(path, *args, **kwargs)
            if times > 2:  # and removed again before it is opened
                os.rmdir(path, dir_fd=kwargs["dir_fd"])
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    return asked


def test_a_folder_another_call_made_meanwhile_is_used_and_never_removed(top, monkeypatch):
    """d is made here, e by another call in between, f here: a failure removes f, keeps e
    (not ours) and so d (not empty; and e is not the folder made below d)."""
    root = make_root(top)
    asked = _theirs_first(monkeypatch, "e", 1)
    _full_disk_at_write(monkeypatch)
    with pytest.raises(LoomError):
        write.write_file(root, "d/e/f/g.txt", "x\n")
    monkeypatch.undo()
    assert asked == ["d", "e", "f"]
    assert (top / "d" / "e").is_dir() and not (top / "d" / "e" / "f").exists()


def test_a_folder_that_keeps_vanishing_while_it_is_made_is_refused(top, monkeypatch):
    """Made by another call and gone again each time: after three tries the write is refused,
    and what it made (d) is removed."""
    root = make_root(top)
    before = _tree(top)
    asked = _theirs_first(monkeypatch, "e", 99)
    with pytest.raises(LoomError) as exc:
        write.write_file(root, "d/e/f/g.txt", "x\n")
    monkeypatch.undo()
    assert exc.value.message == "'d/e' kept changing while it was made"
    assert asked == ["d", "e", "e", "e"]
    assert _tree(top) == before


def test_a_made_folder_moved_meanwhile_is_not_followed(top, monkeypatch):
    """d/e/f moved to dir/f while the write runs: the removal, which goes up from f's
    handle, finds f no longer in e and stops: nothing is removed, there or here."""
    root = make_root(top)

    def moved_then_no_space(fd: int, data: bytes) -> None:
        os.rename(top / "d" / "e" / "f", top / "dir" / "f")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_write_all", moved_then_no_space)
    with pytest.raises(LoomError):
        write.write_file(root, "d/e/f/g.txt", "x\n")
    monkeypatch.undo()
    assert (top / "dir" / "f").is_dir() and (top / "d" / "e").is_dir()


def test_a_made_folder_replaced_meanwhile_is_not_removed(top, monkeypatch):
    """d/e/f renamed to d/e/f2 and another empty folder made as d/e/f: the removal goes up
    from the folder it made (f2, still in e) and finds e's `f` is not that one: the other
    folder stays, and so do the folders above it."""
    root = make_root(top)

    def replaced_then_no_space(fd: int, data: bytes) -> None:
        os.rename(top / "d" / "e" / "f", top / "d" / "e" / "f2")
        (top / "d" / "e" / "f").mkdir()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_write_all", replaced_then_no_space)
    with pytest.raises(LoomError):
        write.write_file(root, "d/e/f/g.txt", "x\n")
    monkeypatch.undo()
    assert (top / "d" / "e" / "f").is_dir() and (top / "d" / "e" / "f2").is_dir()
