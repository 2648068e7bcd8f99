"""app.security.ops: one name below a held folder, no link followed, nothing else."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.security import ops

Op = Callable[[int, str], object]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A folder `top` holding a file `f`, a folder `d` (with `d/inner`), a link `ln` to
    `f`, a link `up` to the folder above, and a secret file beside `top`."""
    top = tmp_path / "top"
    (top / "d").mkdir(parents=True)
    (top / "f").write_text("file\n")
    (top / "d" / "inner").write_text("inner\n")
    (top / "ln").symlink_to("f")
    (top / "up").symlink_to("..")
    (tmp_path / "secret").write_text("secret\n")
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield top, fd
    finally:
        os.close(fd)


NAME_TAKERS: list[tuple[str, Op]] = [
    ("lstat", ops.lstat),
    ("lstat_or_none", ops.lstat_or_none),
    ("readlink", ops.readlink),
    ("open_file", ops.open_file),
    ("open_dir", ops.open_dir),
    ("open_at", lambda fd, n: ops.open_at(fd, n, os.O_RDONLY)),
    ("create", ops.create),
    ("mkdir", ops.mkdir),
    ("unlink", ops.unlink),
    ("rmdir", ops.rmdir),
    ("link from", lambda fd, n: ops.link(fd, n, fd, "new")),
    ("link to", lambda fd, n: ops.link(fd, "f", fd, n)),
    ("rename from", lambda fd, n: ops.rename(fd, n, fd, "new")),
    ("rename to", lambda fd, n: ops.rename(fd, "f", fd, n)),
    ("rename_noreplace from", lambda fd, n: ops.rename_noreplace(fd, n, fd, "new")),
    ("rename_noreplace to", lambda fd, n: ops.rename_noreplace(fd, "f", fd, n)),
    ("exchange a", lambda fd, n: ops.exchange(fd, n, fd, "f")),
    ("exchange b", lambda fd, n: ops.exchange(fd, "f", fd, n)),
]
NOT_ONE_NAME = ["", ".", "..", "d/inner", "../secret", "/etc/passwd", "a\0b", "d/", "/"]


@pytest.mark.parametrize("bad", NOT_ONE_NAME)
@pytest.mark.parametrize(("what", "call"), NAME_TAKERS, ids=[w for w, _ in NAME_TAKERS])
def test_every_operation_refuses_what_is_not_one_name_before_the_disk(
    held: tuple[Path, int], what: str, call: Op, bad: str,
) -> None:
    top, fd = held
    before = sorted(p.name for p in top.iterdir())
    with pytest.raises(ops.BadName):
        call(fd, bad)
    assert sorted(p.name for p in top.iterdir()) == before
    assert (top / "f").read_text() == "file\n" and (top / "d" / "inner").exists()


@pytest.mark.parametrize("bad", [None, 3, b"f"])
def test_a_name_that_is_no_string_is_refused(held: tuple[Path, int], bad: object) -> None:
    with pytest.raises(ops.BadName):
        ops.one(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("good", ["f", ".hidden", "..x", "x..", "a b", "é", "-", "a\\b"])
def test_one_name_passes_as_it_is(good: str) -> None:
    assert ops.one(good) == good


@pytest.mark.parametrize(("what", "call"), [
    ("open_file", ops.open_file),
    ("open_dir", ops.open_dir),
    ("open_at", lambda fd, n: ops.open_at(fd, n, os.O_RDONLY)),
    ("open_at to write", lambda fd, n: ops.open_at(fd, n, os.O_WRONLY)),
])
@pytest.mark.parametrize("link", ["ln", "up"])
def test_no_open_follows_a_final_link(held: tuple[Path, int], what: str, call: Op,
                                      link: str) -> None:
    _, fd = held
    with pytest.raises(OSError) as exc:
        call(fd, link)
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)


def test_opens_carry_close_on_exec(held: tuple[Path, int]) -> None:
    _, fd = held
    for got in (ops.open_file(fd, "f"), ops.open_dir(fd, "d"), ops.open_at(fd, "f", 0),
                ops.create(fd, "made"), ops.reopen(fd), ops.open_up(fd)):
        try:
            assert not os.get_inheritable(got)
        finally:
            os.close(got)


def test_open_root_opens_the_folder_at_a_host_path_never_through_a_final_link(
        held: tuple[Path, int]) -> None:
    top, _ = held
    fd = ops.open_root(str(top))
    try:
        assert os.fstat(fd).st_ino == os.stat(top).st_ino and not os.get_inheritable(fd)
    finally:
        os.close(fd)
    (top.parent / "top-link").symlink_to("top")
    with pytest.raises(OSError) as exc:
        ops.open_root(str(top.parent / "top-link"))
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)
    with pytest.raises(NotADirectoryError):
        ops.open_root(str(top / "f"))


def test_open_root_takes_the_callers_flags_and_always_opens_a_folder_not_inherited(
        held: tuple[Path, int]) -> None:
    top, _ = held
    (top.parent / "top-link").symlink_to("top")
    fd = ops.open_root(str(top.parent / "top-link"), ops.HELD_FLAGS)  # a held root's flags
    try:
        assert os.fstat(fd).st_ino == os.stat(top).st_ino and not os.get_inheritable(fd)
    finally:
        os.close(fd)
    for flags in (ops.DIR_FLAGS, ops.HELD_FLAGS):
        with pytest.raises(NotADirectoryError):
            ops.open_root(str(top / "f"), flags)


def test_lstat_and_readlink_look_at_the_link_itself(held: tuple[Path, int]) -> None:
    top, fd = held
    assert ops.lstat(fd, "ln").st_ino == os.lstat(top / "ln").st_ino != os.stat(top / "f").st_ino
    assert ops.readlink(fd, "ln") == "f"
    assert ops.lstat_or_none(fd, "missing") is None
    with pytest.raises(FileNotFoundError):
        ops.lstat(fd, "missing")


def test_create_is_exclusive_and_never_writes_through_a_link(held: tuple[Path, int]) -> None:
    top, fd = held
    for taken in ("f", "ln", "d"):
        with pytest.raises(FileExistsError):
            ops.create(fd, taken)
    assert (top / "f").read_text() == "file\n"
    new = ops.create(fd, "new", 0o640)
    os.close(new)
    assert (top / "new").stat().st_mode & 0o777 == 0o640 & ~_umask()


def test_open_dir_of_a_file_is_not_a_directory(held: tuple[Path, int]) -> None:
    _, fd = held
    with pytest.raises(NotADirectoryError):
        ops.open_dir(fd, "f")


def test_open_up_opens_the_folder_holding_the_held_one(held: tuple[Path, int]) -> None:
    top, fd = held
    inner = ops.open_dir(fd, "d")
    try:
        for below, above in ((inner, top), (fd, top.parent)):
            up = ops.open_up(below)
            try:
                assert os.path.samestat(os.fstat(up), os.stat(above))
                with pytest.raises(OSError):
                    os.read(up, 1)  # a folder, opened to list only
            finally:
                os.close(up)
    finally:
        os.close(inner)


def test_reopen_has_an_offset_of_its_own(held: tuple[Path, int]) -> None:
    _, fd = held
    again = ops.reopen(fd)
    try:
        assert os.fstat(again).st_ino == os.fstat(fd).st_ino and again != fd
        with ops.scandir(again) as it:
            first = sorted(e.name for e in it)
        with ops.scandir(fd) as it:
            assert sorted(e.name for e in it) == first == ["d", "f", "ln", "up"]
    finally:
        os.close(again)


def test_unlink_of_a_link_leaves_its_target(held: tuple[Path, int]) -> None:
    top, fd = held
    ops.unlink(fd, "ln")
    assert not (top / "ln").is_symlink() and (top / "f").read_text() == "file\n"
    with pytest.raises(IsADirectoryError):
        ops.unlink(fd, "d")
    ops.mkdir(fd, "e", 0o700)
    assert (top / "e").is_dir()
    ops.rmdir(fd, "e")
    assert not (top / "e").exists()


def test_link_links_a_link_never_its_target(held: tuple[Path, int]) -> None:
    top, fd = held
    ops.link(fd, "ln", fd, "ln2")
    assert (top / "ln2").is_symlink() and os.readlink(top / "ln2") == "f"
    assert os.lstat(top / "ln2").st_ino == os.lstat(top / "ln").st_ino


@pytest.fixture(params=["renameat2", "fallback"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":  # as on a kernel without renameat2
        monkeypatch.setattr(ops, "_renameat2", lambda: None)
    elif ops._renameat2() is None:
        pytest.skip("no renameat2 here")
    return str(request.param)


@pytest.mark.parametrize("taken", ["d", "ln", "up"])
@pytest.mark.parametrize("src", ["f", "d", "ln"])
def test_rename_noreplace_never_replaces(held: tuple[Path, int], kernel: str, src: str,
                                         taken: str) -> None:
    top, fd = held
    if src == taken:
        return
    with pytest.raises(FileExistsError) as taken_:
        ops.rename_noreplace(fd, src, fd, taken)
    assert taken_.value.errno == errno.EEXIST
    assert taken_.value.strerror == os.strerror(errno.EEXIST)
    assert (top / src).exists() or (top / src).is_symlink()
    assert os.path.lexists(top / taken)


@pytest.mark.parametrize("src", ["f", "d", "ln"])
def test_rename_noreplace_moves_to_a_free_name(held: tuple[Path, int], kernel: str,
                                               src: str) -> None:
    top, fd = held
    ino = os.lstat(top / src).st_ino
    ops.rename_noreplace(fd, src, fd, "free")
    assert not os.path.lexists(top / src) and os.lstat(top / "free").st_ino == ino


def test_rename_replaces_a_file(held: tuple[Path, int]) -> None:
    top, fd = held
    (top / "g").write_text("g\n")
    ops.rename(fd, "g", fd, "f")
    assert (top / "f").read_text() == "g\n" and not (top / "g").exists()


def test_exchange_swaps_two_entries(held: tuple[Path, int]) -> None:
    top, fd = held
    if ops._renameat2() is None:
        pytest.skip("no renameat2 here")
    try:
        ops.exchange(fd, "f", fd, "d")
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # ENOSYS is a failure: renameat2 is here
            pytest.skip("no RENAME_EXCHANGE on this file system")
        raise
    assert (top / "f" / "inner").read_text() == "inner\n" and (top / "d").read_text() == "file\n"
    with pytest.raises(FileNotFoundError) as gone:
        ops.exchange(fd, "f", fd, "missing")
    assert gone.value.strerror == os.strerror(errno.ENOENT)


def test_exchange_without_renameat2_says_so(held: tuple[Path, int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    top, fd = held
    monkeypatch.setattr(ops, "_renameat2", lambda: None)
    with pytest.raises(OSError) as exc:
        ops.exchange(fd, "f", fd, "d")
    assert exc.value.errno == errno.ENOSYS and (top / "f").read_text() == "file\n"
    assert exc.value.strerror == os.strerror(errno.ENOSYS)


def test_set_times_sets_the_held_files_times(held: tuple[Path, int]) -> None:
    top, fd = held
    f = ops.open_file(fd, "f")
    try:
        ops.set_times(f, 1_000_000_000, 2_000_000_000)
    finally:
        os.close(f)
    st = os.stat(top / "f")
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_000, 2_000_000_000)


def test_the_platform_is_supported_here_and_not_without_dir_fd(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert ops.supported()
    monkeypatch.setattr(os, "supports_dir_fd", {os.open, os.stat})
    assert not ops.supported()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_rename_noreplace_of_a_missing_entry_says_so(held: tuple[Path, int], kernel: str) -> None:
    _, fd = held
    with pytest.raises(FileNotFoundError) as gone:
        ops.rename_noreplace(fd, "missing", fd, "new")
    assert gone.value.errno == errno.ENOENT and gone.value.strerror == os.strerror(errno.ENOENT)


def test_a_bad_name_is_refused_in_the_servers_words(held: tuple[Path, int]) -> None:
    with pytest.raises(ops.BadName) as bad:
        ops.one("a/b")
    assert bad.value.message == "invalid path: not one name of a folder"


@pytest.fixture
def no_umask() -> Iterator[None]:
    """Modes as asked: the process's umask cleared while the test makes entries."""
    mask = os.umask(0)
    try:
        yield
    finally:
        os.umask(mask)


NEW_ENTRIES: list[tuple[str, Callable[[int], object], int]] = [
    ("create", lambda fd: os.close(ops.create(fd, "new")), 0o600),
    ("create 0o640", lambda fd: os.close(ops.create(fd, "new", 0o640)), 0o640),
    ("open_at O_CREAT", lambda fd: os.close(ops.open_at(fd, "new", os.O_CREAT | os.O_WRONLY)),
     0o600),
    ("open_at O_CREAT 0o644",
     lambda fd: os.close(ops.open_at(fd, "new", os.O_CREAT | os.O_WRONLY, 0o644)), 0o644),
    ("mkdir", lambda fd: ops.mkdir(fd, "new"), 0o777),
    ("mkdir 0o700", lambda fd: ops.mkdir(fd, "new", 0o700), 0o700),
]


@pytest.mark.parametrize(("what", "make", "mode"), NEW_ENTRIES, ids=[w for w, _, _ in NEW_ENTRIES])
def test_a_new_entry_has_the_mode_asked_private_files_by_default(
        held: tuple[Path, int], no_umask: None, what: str, make: Callable[[int], object],
        mode: int) -> None:
    top, fd = held
    make(fd)
    assert os.lstat(top / "new").st_mode & 0o7777 == mode
