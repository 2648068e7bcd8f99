"""What Root hands out: descriptors that close once, never leak into a child process,
never follow a final link, never block on a FIFO and never acquire a terminal."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import stat
import threading
from pathlib import Path

import pytest

from app.errors import NotARegularFile
from app.security.handles import DirHandle, OpenedFile, Parent, check_regular
from tests.security.conftest import make_root


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _cloexec(fd: int) -> bool:
    return bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)


@pytest.fixture
def entries(tmp_path: Path) -> Path:
    """A folder holding a file, a FIFO and a link to the file."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("F")
    os.mkfifo(tmp_path / "fifo")
    os.symlink("d/f.txt", tmp_path / "link")
    return tmp_path


def test_every_descriptor_is_closed_on_exec(entries: Path, engine: str) -> None:
    root = make_root(entries, engine=engine)
    assert _cloexec(root.handle.fd)
    with root.open_file("d/f.txt", op="read") as f:
        assert _cloexec(f.fd)
    with root.open_dir("d", op="list") as d:
        assert _cloexec(d.fd)
    with root.open_parent("d/new", op="write", perm="write") as p:
        assert _cloexec(p.fd)
    for parts in [(), ("d",)]:
        fd = root.open_subdir(parts)
        try:
            assert _cloexec(fd)
        finally:
            os.close(fd)


def test_a_file_handle_is_read_only_and_a_fifo_does_not_block(entries: Path, engine: str) -> None:
    root = make_root(entries, engine=engine)
    with root.open_file("d/f.txt", op="read") as f:
        assert fcntl.fcntl(f.fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
        with pytest.raises(OSError):
            os.write(f.fd, b"x")
    with pytest.raises(NotARegularFile):  # opened without blocking, then refused
        root.open_file("fifo", op="read")


def test_a_handle_closes_once(entries: Path) -> None:
    root = make_root(entries)
    f = root.open_file("d/f.txt", op="read")
    fd = f.fd
    assert isinstance(f, OpenedFile)
    with f as entered:
        assert entered is f
    assert f.fd == -1 and _closed(fd)
    f.close()  # a second close is a no-op, not a close of whatever took the number


def test_the_root_handle_is_a_directory_closed_with_its_last_reference(entries: Path) -> None:
    h = DirHandle(str(entries))
    fd = h.fd
    assert stat.S_ISDIR(os.fstat(fd).st_mode) and _cloexec(fd)
    del h
    gc.collect()
    assert _closed(fd)
    h = DirHandle(str(entries))
    h.close()
    assert _closed(h.fd)
    h.close()
    with pytest.raises(NotADirectoryError):
        DirHandle(str(entries / "d" / "f.txt"))


def test_a_parent_looks_at_its_entry_without_following_it(entries: Path) -> None:
    root = make_root(entries)
    with root.open_parent("link", op="write", perm="write") as p:
        assert isinstance(p, Parent)
        st = p.lstat()
        assert st is not None and stat.S_ISLNK(st.st_mode)
    with root.open_parent("missing", op="write", perm="write") as p:
        assert p.lstat() is None
    with root.open_parent("d/f.txt", op="write", perm="write") as p:
        assert (p.target, p.rel, p.name) == ("d/f.txt", "d/f.txt", "f.txt")


def test_only_a_regular_file_passes(entries: Path) -> None:
    check_regular(os.stat(entries / "d" / "f.txt"))
    for other in (entries / "d", entries / "fifo"):
        with pytest.raises(NotARegularFile) as exc:
            check_regular(os.stat(other))
        assert exc.value.message == "not a regular file"


def test_opening_a_terminal_does_not_make_it_the_servers(tmp_path: Path) -> None:
    """O_NOCTTY: a session leader without a terminal that opens one would acquire it."""
    master, slave = os.openpty()
    slave_path = os.ttyname(slave)
    os.close(slave)
    pid = os.fork()
    if pid == 0:  # the child: a new session, no controlling terminal
        code = 1
        try:
            os.setsid()
            root = make_root(Path(os.path.dirname(slave_path)))
            with contextlib.suppress(NotARegularFile):
                root.open_file(os.path.basename(slave_path), op="read")
            try:
                os.close(os.open("/dev/tty", os.O_RDONLY))
                code = 2  # the terminal became ours
            except OSError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert os.waitstatus_to_exitcode(status) == 0


def test_descriptor_zero_is_a_descriptor_too(entries: Path) -> None:
    """A server started with stdin closed gets fd 0 for an open: it closes like any other."""
    saved = os.dup(0)
    try:
        os.close(0)
        fd = os.open(entries / "d" / "f.txt", os.O_RDONLY)
        assert fd == 0
        f = OpenedFile(fd, "d/f.txt", "d/f.txt", os.fstat(fd))
        f.close()
        assert f.fd == -1 and _closed(0)
    finally:
        os.dup2(saved, 0)
        os.close(saved)


@pytest.mark.parametrize(
    ("size", "limit", "whole"),
    [(0, 4, True), (4, 4, True), (5, 4, False), (1 << 20, 16, False), (3, 0, False)],
)
def test_read_at_most_reads_no_more_than_its_bound(size: int, limit: int, whole: bool) -> None:
    """Through a pipe (short reads, no size to trust): the bytes, or None past the bound,
    having read at most limit + 1 of them."""
    from app.bounded import read_at_most

    r, w = os.pipe()
    try:
        data = bytes(i % 251 for i in range(size))
        writer = threading.Thread(target=_write_all, args=(w, data))
        writer.start()
        got = read_at_most(r, limit)
        left = b"".join(iter(lambda: os.read(r, 65536), b""))
        writer.join()
        assert got == (data if whole else None)
        assert len(left) == (0 if whole else size - limit - 1)  # the rest never read
    finally:
        os.close(r)


def _write_all(fd: int, data: bytes) -> None:
    """Write in pieces of 1,000 bytes (short reads on the other side), then close."""
    while data:
        data = data[os.write(fd, data[:1000]):]
    os.close(fd)
