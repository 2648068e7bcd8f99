"""app.security.protected on its own: which names and inodes it protects, and for how long."""

from __future__ import annotations

import errno
import os
import resource
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.security import protected
from app.security.protected import Protected


def test_a_fresh_set_protects_nothing(tmp_path: Path) -> None:
    p = Protected()
    (tmp_path / "f").write_text("x")
    assert p.ids == frozenset() and p.inodes == frozenset()
    assert not p.hit(os.stat(tmp_path / "f"))
    assert p.log_paths() == ()
    p.hold_paths([None, str(tmp_path / "missing")])  # nothing there: nothing protected
    assert p.ids == frozenset() and len(p) == 0
    p.hold_paths([str(tmp_path)])  # a folder is never one of the server's files
    assert p.ids == frozenset()


def test_log_paths_are_the_file_and_each_backup_it_was_ever_given() -> None:
    p = Protected()
    p.note_log_path("/s/audit.log", 2)
    assert p.log_paths() == ("/s/audit.log", "/s/audit.log.1", "/s/audit.log.2")
    p.note_log_path("/s/audit.log", 1)  # fewer backups later: the old ones still exist
    p.note_log_path("/s/other.log", 0)
    assert p.log_paths() == ("/s/audit.log", "/s/audit.log.1", "/s/audit.log.2", "/s/other.log")


def test_a_hit_needs_the_same_device_and_inode(tmp_path: Path) -> None:
    (tmp_path / "cfg").write_text("x")
    (tmp_path / "other").write_text("y")
    p = Protected()
    p.hold_paths([str(tmp_path / "cfg")])
    st = os.stat(tmp_path / "cfg")
    assert p.hit(st) and not p.hit(os.stat(tmp_path / "other"))
    same_ino_other_dev = os.stat_result(
        (st.st_mode, st.st_ino, st.st_dev + 1, *list(st)[3:10])
    )
    assert not p.hit(same_ino_other_dev)
    fd = os.open(tmp_path / "other", os.O_RDONLY)
    try:
        assert p.hold_fd(fd) == (st.st_dev, os.stat(tmp_path / "other").st_ino)
    finally:
        os.close(fd)  # the caller's descriptor: Protected holds its own
    assert p.hit(os.stat(tmp_path / "other")) and p.hit(st)


def test_a_file_is_held_while_it_has_a_link_anywhere(tmp_path: Path) -> None:
    """A rotation renames a new file over the old; a hard link keeps the old one alive,
    and protected. Once its last link goes, a sweep lets go of it."""
    (tmp_path / "token").write_text("old\n")
    os.link(tmp_path / "token", tmp_path / "elsewhere")
    p = Protected()
    p.hold_paths([str(tmp_path / "token")])
    old = os.stat(tmp_path / "token")
    (tmp_path / "token.new").write_text("new\n")
    os.rename(tmp_path / "token.new", tmp_path / "token")
    p.hold_paths([str(tmp_path / "token")])
    assert p.sweep() == 0 and len(p) == 2
    assert p.hit(os.stat(tmp_path / "elsewhere")) and p.hit(os.stat(tmp_path / "token"))
    (tmp_path / "elsewhere").unlink()
    assert p.sweep() == 1 and len(p) == 1
    assert (old.st_dev, old.st_ino) not in p.ids and p.hit(os.stat(tmp_path / "token"))


def test_a_held_inode_number_is_never_handed_to_a_new_file(tmp_path: Path) -> None:
    """ext4 gives a freed inode number to the next file made: while the server
    holds its file, no new file gets that number; after the sweep, one that does is not
    refused."""
    (tmp_path / "cfg").write_text("x")
    p = Protected()
    p.hold_paths([str(tmp_path / "cfg")])
    gone = os.stat(tmp_path / "cfg").st_ino
    (tmp_path / "cfg").unlink()
    for i in range(300):
        f = tmp_path / f"new{i}"
        f.write_text("y")
        assert os.stat(f).st_ino != gone
        f.unlink()
    assert p.sweep() == 1 and p.ids == frozenset()
    for i in range(300):
        f = tmp_path / f"after{i}"
        f.write_text("y")
        assert not p.hit(os.stat(f))
        f.unlink()


def test_sweep_due_waits_and_close_lets_go_of_everything(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x")
    p = Protected()
    p.hold_paths([str(tmp_path / "a")])
    (tmp_path / "a").unlink()
    p.sweep_due()  # just made: not due yet
    assert len(p) == 1
    p._swept_at -= 3600
    p.sweep_due()
    assert len(p) == 0
    (tmp_path / "b").write_text("x")
    p.hold_paths([str(tmp_path / "b")])
    p.close()
    assert len(p) == 0 and p.ids == frozenset()


def test_a_file_that_cannot_be_opened_for_want_of_descriptors_is_not_passed_over(
    tmp_path: Path,
) -> None:
    """A missing file is nothing to hold, but EMFILE is a check that cannot look: it
    raises (the load refuses) rather than leave the file protected by its path only."""
    (tmp_path / "token").write_text("t")
    p = Protected()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    filler: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    try:
        with pytest.raises(OSError) as caught:
            while True:
                filler.append(os.open(os.devnull, os.O_RDONLY))
        assert caught.value.errno == errno.EMFILE
        with pytest.raises(OSError) as refused:
            p.hold_paths([str(tmp_path / "missing"), str(tmp_path / "token")])
        assert refused.value.errno == errno.EMFILE
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(p) == 0
    p.hold_paths([str(tmp_path / "missing"), str(tmp_path / "token")])
    assert p.hit(os.stat(tmp_path / "token"))


class _OsWith:
    """The `os` module as app.security.protected sees it, with `fstat` failing on the
    descriptors in `failing` (every other call is the real one)."""

    def __init__(self, err: int, failing: set[int] | None = None) -> None:
        self.err, self.failing, self.fstats = err, failing, 0

    def fstat(self, fd: int) -> os.stat_result:
        self.fstats += 1
        if self.failing is None or fd in self.failing:
            raise OSError(self.err, os.strerror(self.err))
        return os.fstat(fd)

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("err", [errno.EACCES, errno.EIO, errno.EMFILE, errno.EBADF,
                                 errno.EOVERFLOW, errno.ENOMEM])
def test_a_sweep_that_cannot_look_keeps_holding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    """Fail closed: `fstat` on a held descriptor failing is not "its last link is gone";
    the file stays the server's own (and its inode number stays taken)."""
    (tmp_path / "token").write_text("t")
    p = Protected()
    p.hold_paths([str(tmp_path / "token")])
    st = os.stat(tmp_path / "token")
    fake = _OsWith(err, set(p._held.values()))
    monkeypatch.setattr(protected, "os", fake)
    assert p.sweep() == 0
    assert fake.fstats == 1  # the one look it makes, and it failed
    monkeypatch.undo()
    assert len(p) == 1 and p.hit(st) and p.hit(os.stat(tmp_path / "token"))


def test_a_sweep_lets_go_of_a_file_really_gone(tmp_path: Path) -> None:
    """The case the table is not: `fstat` answers, and `st_nlink` is 0."""
    (tmp_path / "token").write_text("t")
    (tmp_path / "kept").write_text("k")
    p = Protected()
    p.hold_paths([str(tmp_path / "token"), str(tmp_path / "kept")])
    gone = os.stat(tmp_path / "token")
    (tmp_path / "token").unlink()
    before = _open_fds()
    assert p.sweep() == 1 and _open_fds() == before - 1  # its descriptor closed
    assert (gone.st_dev, gone.st_ino) not in p.ids and p.hit(os.stat(tmp_path / "kept"))


@pytest.mark.parametrize("err", [errno.EIO, errno.EBADF, errno.EOVERFLOW])
def test_a_file_that_cannot_be_looked_at_once_open_is_not_held_and_not_leaked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    """Adopting fails when `fstat` on the descriptor just opened fails: nothing is held,
    the descriptor taken is closed (no crash closing something else), None is answered."""
    (tmp_path / "cfg").write_text("x")
    p = Protected()
    fd = os.open(tmp_path / "cfg", os.O_RDONLY)
    try:
        before = _open_fds()
        monkeypatch.setattr(protected, "os", _OsWith(err))
        assert p.hold_fd(fd) is None
        p.hold_paths([str(tmp_path / "cfg")])  # opened, cannot be looked at: not held
        monkeypatch.undo()
        assert _open_fds() == before  # the duplicate and the path's descriptor closed
        assert len(p) == 0 and not p.hit(os.stat(tmp_path / "cfg"))
        os.fstat(fd)  # the caller's descriptor is still open
    finally:
        os.close(fd)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize("make", [_fifo, Path.mkdir], ids=["fifo", "folder"])
def test_an_own_file_replaced_by_a_fifo_or_folder_gives_no_identity(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """The audit log path replaced by something that is not a regular file: nothing is
    held (no root could read it as the server's file), nothing is answered, no descriptor
    is left open; the regular files named beside it are still held."""
    (tmp_path / "cfg").write_text("x")
    odd = tmp_path / "audit.log"
    make(odd)
    p = Protected()
    before = _open_fds()
    fd = os.open(odd, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert p.hold_fd(fd) is None
    finally:
        os.close(fd)
    p.hold_paths([str(odd), str(tmp_path / "cfg")])
    assert len(p) == 1 and not p.hit(os.stat(odd)) and p.hit(os.stat(tmp_path / "cfg"))
    assert _open_fds() == before + 1  # the config's one descriptor, nothing for the odd one


def test_a_file_held_again_answers_its_identity_and_is_held_once(tmp_path: Path) -> None:
    (tmp_path / "cfg").write_text("x")
    st = os.stat(tmp_path / "cfg")
    p = Protected()
    fd = os.open(tmp_path / "cfg", os.O_RDONLY)
    try:
        assert p.hold_fd(fd) == (st.st_dev, st.st_ino)
        before = _open_fds()
        assert p.hold_fd(fd) == (st.st_dev, st.st_ino)  # already held: the same answer
        assert _open_fds() == before  # and the second duplicate closed
    finally:
        os.close(fd)
    assert len(p) == 1


@pytest.mark.parametrize(
    "first", [None, "", "missing", "missing/below", "loop"],
    ids=["none", "empty", "missing", "not-a-folder", "symlink-loop"],
)
def test_a_path_that_names_nothing_does_not_stop_the_ones_after(
    tmp_path: Path, first: str | None
) -> None:
    """hold_paths goes on past a path with nothing to hold: every later file is held."""
    (tmp_path / "loop").symlink_to("loop")
    if first == "missing/below":
        (tmp_path / "missing").write_text("a file, not a folder")
    names = ["a", "b", "c"]
    for n in names:
        (tmp_path / n).write_text(n)
    p = Protected()
    given = None if first is None else (first and str(tmp_path / first))
    p.hold_paths([given, str(tmp_path / "a"), None, str(tmp_path / "b"), "", str(tmp_path / "c")])
    assert len(p) == 3 and all(p.hit(os.stat(tmp_path / n)) for n in names)


def test_a_sweep_is_due_at_exactly_sweep_seconds(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """Every `SWEEP_SECONDS`, not one tick later: the clock is the module's, set by hand."""
    now = [1000.0]
    monkeypatch.setattr(protected, "time", SimpleNamespace(monotonic=lambda: now[0]))
    (tmp_path / "a").write_text("x")
    p = Protected()
    p.hold_paths([str(tmp_path / "a")])
    (tmp_path / "a").unlink()
    now[0] += protected.SWEEP_SECONDS - 0.5
    p.sweep_due()
    assert len(p) == 1
    now[0] += 0.5
    p.sweep_due()
    assert len(p) == 0
