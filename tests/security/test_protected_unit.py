"""app.security.protected on its own: which names and inodes it protects."""

from __future__ import annotations

import os
from pathlib import Path

from app.security.protected import Protected


def test_a_fresh_set_protects_nothing(tmp_path: Path) -> None:
    p = Protected()
    (tmp_path / "f").write_text("x")
    assert p.ids == frozenset() and p.inodes == frozenset()
    assert not p.hit(os.stat(tmp_path / "f"))
    assert p.log_paths() == ()
    p.set_fixed([None, str(tmp_path / "missing")])  # nothing there: nothing protected
    assert p.ids == frozenset()
    q = Protected()
    q.add_log((1, 2))  # an audit file before any config is loaded
    assert q.ids == {(1, 2)} and q.inodes == {2}


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
    p.set_fixed([str(tmp_path / "cfg")])
    st = os.stat(tmp_path / "cfg")
    assert p.hit(st) and not p.hit(os.stat(tmp_path / "other"))
    same_ino_other_dev = os.stat_result(
        (st.st_mode, st.st_ino, st.st_dev + 1, *list(st)[3:10])
    )
    assert not p.hit(same_ino_other_dev)
    p.add_log((st.st_dev, os.stat(tmp_path / "other").st_ino))
    assert p.hit(os.stat(tmp_path / "other")) and p.hit(st)
