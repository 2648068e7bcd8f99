"""app.security.protected on its own: which names and inodes it protects, and for how long."""

from __future__ import annotations

import errno
import os
import resource
from pathlib import Path

import pytest

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
