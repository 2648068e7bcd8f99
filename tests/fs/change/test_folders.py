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

from app.errors import DeniedName, LoomError, PermissionRefused, TooDeep
from app.fs.change import atomic, folders, write
from app.security import ops
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


def _mkdirs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names `os.mkdir` is given from now on, in order (each still made)."""
    real_mkdir = os.mkdir
    asked: list[str] = []

    def mkdir(path, *args, **kwargs):
        asked.append(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    return asked


def test_a_path_too_deep_where_a_link_leads_is_refused_before_any_folder_is_made(
        top, monkeypatch):
    """`up` leads 62 levels down: up/a/b/c.txt would lie 65 deep, past MAX_DEPTH, although
    the request names 4 levels; refused at the first folder to make, none made."""
    deep = "/".join(["at62"] + ["d"] * 61)
    (top / deep).mkdir(parents=True)
    (top / "up").symlink_to(deep)
    root = make_root(top)
    asked = _mkdirs(monkeypatch)
    with pytest.raises(TooDeep) as exc:
        write.write_file(root, "up/a/b/c.txt", "x")
    monkeypatch.undo()
    assert exc.value.message == (f"too deep: it would lie {MAX_DEPTH + 1} levels below the "
                                 f"root; the server makes paths at most {MAX_DEPTH} levels deep")
    assert asked == []


def test_a_new_folder_denied_where_a_link_leads_is_refused_before_it_is_made(
        top, monkeypatch):
    """`link/secret` is allowed as asked, but it is `dir/secret`, which a whole-path rule
    denies: refused by that rule before that folder is made, nothing left."""
    root = make_root(top, deny=["dir/secret"])
    before = _tree(top)
    asked = _mkdirs(monkeypatch)
    with pytest.raises(DeniedName) as exc:
        write.write_file(root, "link/secret/g.txt", "x\n")
    monkeypatch.undo()
    assert exc.value.message == "matches deny pattern 'dir/secret'"
    assert asked == [] and _tree(top) == before


@pytest.mark.parametrize(("path", "where", "message"), [
    ("d/e/f/g.txt", "f", "no space left on device: 'd/e/f'"),
    ("d/g.txt", "d", "no space left on device: 'd'"),
    ("link/new/deeper/g.txt", "deeper", "no space left on device: 'link/new/deeper'"),
])
def test_a_folder_that_cannot_be_made_is_named_as_asked_in_the_error(top, monkeypatch, path,
                                                                      where, message):
    root = make_root(top)
    _full_disk_at_mkdir(monkeypatch, where)
    with pytest.raises(LoomError) as exc:
        folders.open_parent_making(root, tuple(path.split("/")), "write_file")
    assert exc.value.message == message


@pytest.mark.parametrize("theirs", [False, True], ids=["empty", "another's file in it"])
def test_a_folder_made_but_not_opened_is_removed_at_once_unless_filled(top, monkeypatch,
                                                                        theirs):
    """`e` is made, then cannot be opened (EACCES): it is removed right away (and `d` with
    it), the error naming it; a file another writer put in it meanwhile keeps both."""
    root = make_root(top)
    before = _tree(top)
    real_open_dir = ops.open_dir

    def open_dir(dir_fd: int, name: str) -> int:
        if name == "e" and ops.lstat_or_none(dir_fd, name) is not None:
            if theirs:
                (top / "d" / "e" / "theirs.txt").write_text("theirs\n")
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open_dir(dir_fd, name)

    monkeypatch.setattr(ops, "open_dir", open_dir)
    with pytest.raises(LoomError) as exc:
        folders.open_parent_making(root, ("d", "e", "f", "g.txt"), "write_file")
    monkeypatch.undo()
    assert exc.value.message == "permission denied by the operating system: 'd/e'"
    if theirs:
        assert _tree(top) == {**before, "d": "dir", "d/e": "dir", "d/e/theirs.txt": "theirs\n"}
    else:
        assert _tree(top) == before


def test_a_folder_made_that_cannot_be_recorded_is_closed_and_removed(top, monkeypatch):
    root = make_root(top)
    before = _tree(top)
    real_push = folders.Made.push

    def push(self: folders.Made, name: str, parent_fd: int, fd: int) -> None:
        if name == "e":
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        real_push(self, name, parent_fd, fd)

    monkeypatch.setattr(folders.Made, "push", push)
    with pytest.raises(LoomError) as exc:
        folders.open_parent_making(root, ("d", "e", "f", "g.txt"), "write_file")
    monkeypatch.undo()
    assert exc.value.message.endswith(": 'd/e'")
    assert _tree(top) == before


def test_a_link_on_the_way_is_audited_as_the_call_that_made_the_folders(top):
    records: list[tuple[object, ...]] = []
    root = make_root(top, audit=lambda *rec: records.append(rec))
    write.write_file(root, "link/new/g.txt", "x\n")
    assert records and {rec[3] for rec in records} == {"write_file"}
    assert ("ALLOW", "r", "link", "write_file", None) in records


def test_a_link_on_the_way_is_opened_for_a_write(top, monkeypatch):
    """On a root that grants no write, the link is refused before anything is made (the
    choke point is asked for a write there, not a read)."""
    root = make_root(top, permissions=["read"])
    asked = _mkdirs(monkeypatch)
    with pytest.raises(PermissionRefused):
        folders.open_parent_making(root, ("link", "new", "g.txt"), "write_file")
    monkeypatch.undo()
    assert asked == [] and not (top / "dir" / "new").exists()


def test_when_every_folder_is_there_nothing_is_walked(top):
    """The common case: the parent is plainly there, so no level is walked (no cancel check,
    no open per level) before the parent is opened."""
    from tests.fs.conftest import CancelAfter

    root = make_root(top)
    control = CancelAfter(0)
    parent, made = folders.open_parent_making(root, ("dir", "g.txt"), "write_file", control)
    parent.close()
    assert control.left == 0 and made.fd == -1 and made.names == []


def test_a_record_of_folders_made_holds_no_handle_once_closed_or_removed(top):
    root = make_root(top)
    for finish in ("close", "remove"):
        parent, made = folders.open_parent_making(root, (finish, "e", "g.txt"), "write_file")
        parent.close()
        assert made.names == [finish, "e"] and made.fd >= 0
        getattr(made, finish)()
        assert made.fd == folders.Made().fd
        made.close()  # again: nothing to close
        made.remove()  # and nothing to remove
        assert made.fd == folders.Made().fd
    assert (top / "close" / "e").is_dir() and not (top / "remove").exists()
