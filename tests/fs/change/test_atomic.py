"""app.fs.change.atomic on its own: temp files, the no-replace rename and its fallbacks, the
replacement's mode and owner, the lost-update identity, and a directory fsync that fails."""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import stat
from pathlib import Path

import pytest

from app.errors import OSRefusal
from app.fs.change import atomic
from app.security import ops
from tests.fs.conftest import umask


@pytest.fixture
def folder(tmp_path: Path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield tmp_path, fd
    os.close(fd)


def temps(top: Path) -> list[str]:
    return [p.name for p in top.iterdir() if p.name.startswith(atomic.TEMP_PREFIX)]


# -- temp files ------------------------------------------------------------------------


def test_a_taken_temp_name_is_retried_then_refused_with_a_clear_error(folder, monkeypatch):
    top, fd = folder
    names = iter(["taken", "taken", "free"])
    (top / (atomic.TEMP_PREFIX + "taken")).write_text("planted")
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: next(names))
    tfd, name = atomic.create_temp(fd, 0o600)
    os.close(tfd)
    assert name == atomic.TEMP_PREFIX + "free"
    assert (top / (atomic.TEMP_PREFIX + "taken")).read_text() == "planted"
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: "taken")
    with pytest.raises(OSRefusal) as exc:
        atomic.create_temp(fd, 0o600)
    assert exc.value.message == "could not create a temporary file in the target directory"


# -- the no-replace rename ---------------------------------------------------------------


@pytest.fixture(params=["renameat2", "fallback"])
def engine(request, monkeypatch) -> str:
    if request.param == "fallback":  # as on a kernel without RENAME_NOREPLACE
        monkeypatch.setattr(ops, "_renameat2", lambda: None)
    elif ops._renameat2() is None:
        pytest.skip("no renameat2 here")
    return str(request.param)


def test_a_directory_onto_an_existing_empty_directory_is_refused(folder, engine):
    top, fd = folder
    (top / "d").mkdir()
    (top / "d" / "f").write_text("F")
    (top / "empty").mkdir()  # plain rename(2) would replace an empty directory
    with pytest.raises(FileExistsError):
        ops.rename_noreplace(fd, "d", fd, "empty")
    assert (top / "d" / "f").read_text() == "F" and list((top / "empty").iterdir()) == []


def test_a_link_to_a_file_moves_as_a_link(folder, engine):
    top, fd = folder
    (top / "target.txt").write_text("T")
    (top / "ln").symlink_to("target.txt")
    (top / "dangling").symlink_to("nowhere")
    ops.rename_noreplace(fd, "ln", fd, "ln2")
    ops.rename_noreplace(fd, "dangling", fd, "dangling2")
    assert os.readlink(top / "ln2") == "target.txt"
    assert os.readlink(top / "dangling2") == "nowhere"
    assert (top / "target.txt").stat().st_nlink == 1  # never hard-linked through the link
    assert not os.path.lexists(top / "ln") and not os.path.lexists(top / "dangling")


def test_a_system_without_hard_links_still_moves_files(folder, monkeypatch):
    top, fd = folder
    monkeypatch.setattr(ops, "_renameat2", lambda: None)

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(atomic.os, "link", no_links)
    (top / "a").write_text("A")
    ops.rename_noreplace(fd, "a", fd, "b")
    assert (top / "b").read_text() == "A" and not (top / "a").exists()


def test_a_kernel_that_says_unsupported_falls_back(folder, monkeypatch):
    top, fd = folder

    def unsupported(*args):
        ctypes.set_errno(errno.EINVAL)
        return -1

    monkeypatch.setattr(ops, "_renameat2", lambda: unsupported)
    (top / "a").write_text("A")
    (top / "taken").write_text("T")
    ops.rename_noreplace(fd, "a", fd, "b")
    assert (top / "b").read_text() == "A"
    with pytest.raises(FileExistsError):
        ops.rename_noreplace(fd, "b", fd, "taken")
    assert (top / "taken").read_text() == "T" and (top / "b").read_text() == "A"


def test_a_directory_never_replaces_one_that_appears_at_the_rename(folder, monkeypatch):
    """With renameat2 the kernel decides for directories too: no check is made first."""
    top, fd = folder
    if ops._renameat2() is None:
        pytest.skip("no renameat2 here")
    (top / "d").mkdir()
    looked = []
    real = ops.lstat_or_none

    def look(dir_fd: int, name: str):
        looked.append(name)
        return real(dir_fd, name)

    monkeypatch.setattr(ops, "lstat_or_none", look)
    ops.rename_noreplace(fd, "d", fd, "e")
    assert (top / "e").is_dir() and looked == []


# -- replace_file ------------------------------------------------------------------------


def test_a_replacement_is_private_while_it_is_written(folder, monkeypatch):
    top, fd = folder
    (top / "f").write_text("old")
    os.chmod(top / "f", 0o644)
    seen: list[int] = []
    real = atomic._write_all

    def spy(tfd: int, data: bytes) -> None:
        seen.append(stat.S_IMODE(os.fstat(tfd).st_mode))
        real(tfd, data)

    monkeypatch.setattr(atomic, "_write_all", spy)
    with umask(0o022):
        atomic.replace_file(fd, "f", b"new", replace=True, like=os.stat(top / "f"))
        atomic.replace_file(fd, "g", b"new", replace=False)
    assert seen == [0o600, 0o644]
    assert stat.S_IMODE((top / "f").stat().st_mode) == 0o644 and (top / "f").read_bytes() == b"new"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file away")
def test_a_replacement_keeps_the_owner(folder):
    top, fd = folder
    (top / "f").write_text("old")
    os.chown(top / "f", 65534, 65534)
    atomic.replace_file(fd, "f", b"new", replace=True, like=os.stat(top / "f"))
    st = (top / "f").stat()
    assert (st.st_uid, st.st_gid, (top / "f").read_bytes()) == (65534, 65534, b"new")


def test_a_replacement_is_made_even_where_the_owner_cannot_be_kept(folder, monkeypatch):
    top, fd = folder
    (top / "f").write_text("old")

    def refuse(*args):
        raise PermissionError(errno.EPERM, "not yours to give")

    monkeypatch.setattr(atomic.os, "fchown", refuse)
    atomic.replace_file(fd, "f", b"new", replace=True, like=os.stat(top / "f"))
    assert (top / "f").read_bytes() == b"new" and temps(top) == []


def test_an_aborted_replacement_reports_its_own_error_even_if_the_temp_is_gone(folder):
    top, fd = folder
    (top / "f").write_text("old")

    def guard() -> None:
        for name in temps(top):  # someone else already swept it
            os.unlink(top / name)
        raise ValueError("changed since read")

    with pytest.raises(ValueError, match="changed since read"):
        atomic.replace_file(fd, "f", b"new", replace=True, like=os.stat(top / "f"), guard=guard)
    assert (top / "f").read_text() == "old" and temps(top) == []


def _fail_in_the_fill(fd: int) -> None:
    os.write(fd, b"half")
    raise ValueError("the source went away")


def _fail_in_the_guard() -> None:
    raise ValueError("changed since read")


@pytest.mark.parametrize(
    ("where", "fill", "guard", "replace"),
    [
        ("fill", _fail_in_the_fill, None, True),
        ("guard", lambda fd: atomic._write_all(fd, b"new"), _fail_in_the_guard, True),
        ("no-replace rename", lambda fd: atomic._write_all(fd, b"new"), None, False),
    ],
)
def test_a_replacement_that_fails_leaves_the_old_file_and_no_temp_file(
    folder, where, fill, guard, replace
):
    top, fd = folder
    (top / "f").write_text("old")
    with pytest.raises(FileExistsError if where == "no-replace rename" else ValueError):
        atomic.replace_with(fd, "f", fill, replace=replace, guard=guard)
    assert (top / "f").read_text() == "old" and temps(top) == []


@pytest.mark.parametrize(
    ("mode", "old", "want"),
    [
        (0o640, None, 0o640),  # a new file (a copy's destination) takes the source's bits
        (0o604, 0o600, 0o604),  # a replaced one too: `mode` wins over `like`
        (0o4755, None, 0o755),  # set-id bits are never given
    ],
)
def test_a_given_mode_is_the_new_files_mode(folder, mode, old, want):
    top, fd = folder
    like = None
    if old is not None:
        (top / "f").write_text("old")
        os.chmod(top / "f", old)
        like = os.stat(top / "f")
    with umask(0o077):
        atomic.replace_with(fd, "f", lambda tfd: atomic._write_all(tfd, b"new"),
                            replace=like is not None, like=like, mode=mode)
    assert stat.S_IMODE((top / "f").stat().st_mode) == want
    assert (top / "f").read_bytes() == b"new" and temps(top) == []


# -- identity ----------------------------------------------------------------------------


SEQ = ("st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_gid", "st_size")
NS = ("st_mtime_ns", "st_ctime_ns")


def _stat_like(st: os.stat_result, **bump: int) -> os.stat_result:
    seq = [getattr(st, n) + bump.get(n, 0) for n in SEQ]
    seq += [int(st.st_atime), int(st.st_mtime), int(st.st_ctime)]
    extra = {n: getattr(st, n) + bump.get(n, 0) for n in NS}
    return os.stat_result(seq, extra)


@pytest.mark.parametrize("field", ["st_dev", "st_ino", "st_size", *NS])
def test_identity_differs_when_any_one_of_its_fields_does(tmp_path: Path, field: str):
    st = os.stat(tmp_path)
    assert atomic.Identity.of(_stat_like(st)) == atomic.Identity.of(st)
    assert atomic.Identity.of(_stat_like(st, **{field: 1})) != atomic.Identity.of(st)


# -- a directory fsync that fails ----------------------------------------------------------


def test_a_failed_directory_fsync_is_logged_not_raised(folder, monkeypatch, caplog):
    _, fd = folder

    def no_fsync(target: int) -> None:
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(atomic.os, "fsync", no_fsync)
    with caplog.at_level(logging.WARNING, logger="loomfs.fs"):
        atomic.fsync_dir(fd)
    assert [r.getMessage() for r in caplog.records] == [
        f"directory fsync failed ({os.strerror(errno.EINVAL)}); the change is made"
    ]
