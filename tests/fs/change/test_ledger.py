"""What the trash takes, bounded: `trash_max_bytes` counts the trash's real disk use and
`trash_max_items` its items, the oldest versions going first and deletes never; trimming
keeps a running account (app.fs.change.ledger) instead of listing the trash on every
change, re-lists once when another process changed it, and one root's trash never waits
for another's."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from app.fs.change import inventory, ledger, restore, trash, write
from app.fs.change.layout import on_disk
from app.registry import Registry
from tests.fs.conftest import make_disk, populate
from tests.kit import config_file, roots_toml


def _roots(tmp_path: Path, **options: object):
    disk = make_disk(tmp_path)
    populate(disk)
    (disk.src / "f.txt").write_text("")
    cfg = config_file(tmp_path, roots_toml(
        ("ws", disk.ws, "workspace", options),  # type: ignore[arg-type]
        ("src", disk.src, "sourcecode"),
        audit_log=tmp_path / "state" / "audit.log",
    ))
    current = Registry(str(cfg), audit=False).current
    return disk, current.root("ws"), current.root("src")


def _stamps(top: Path) -> list[Path]:
    trash_dir = top / ".mcp-trash"
    return sorted(p for p in trash_dir.iterdir() if p.is_dir())


def _taken(top: Path) -> int:
    """What the stamp folders really take on disk: every entry's blocks, folders at least
    one block (app.fs.change.layout.on_disk), measured here with os.lstat."""
    return sum(on_disk(p.lstat()) for s in _stamps(top) for p in (s, *s.rglob("*")))


def _whole(top: Path) -> int:
    """What the whole trash takes: the folder, its own files and every stamp folder."""
    trash_dir = top / ".mcp-trash"
    return sum(on_disk(p.lstat()) for p in (trash_dir, *trash_dir.rglob("*")))


def _kinds(top: Path) -> list[str]:
    return [(s / ".mcp-trash").read_text().split('"kind": "')[1].split('"')[0]
            for s in _stamps(top)]


def test_trash_max_bytes_bounds_what_the_trash_takes_on_disk(tmp_path):
    """On main, empty versions counted 0 bytes: 40 of them took 40 stamp folders and
    records (≈320 KiB on ext4) under a 64 KiB trash_max_bytes, and nothing went."""
    disk, root, _ = _roots(tmp_path, trash_max_bytes=64 << 10)
    (disk.ws / "e.txt").write_text("")
    outs = [write.write_file(root, "e.txt", "", overwrite=True) for _ in range(40)]
    assert all(o.kept_version for o in outs)  # a full trash never refuses the change
    one = _taken(disk.ws) // len(_stamps(disk.ws))
    assert _whole(disk.ws) <= (64 << 10) + one  # within the cap (the newest always stays)
    assert len(_stamps(disk.ws)) < 40
    assert (disk.ws / outs[-1].kept_version).exists()  # the newest kept, the oldest gone


def test_trash_max_items_bounds_the_count_oldest_versions_first_deletes_never(tmp_path):
    disk, root, _ = _roots(tmp_path, trash_max_items=3)
    trash.delete(root, "dir/sub/b.txt")
    kept = [write.write_file(root, "f.txt", str(i), overwrite=True).kept_version
            for i in range(6)]
    assert _kinds(disk.ws) == ["delete", "version", "version"]
    assert [(disk.ws / k).exists() for k in kept if k] == [False] * 3 + [True] * 2


def test_deletes_are_never_dropped_and_a_full_trash_still_takes_a_change(tmp_path):
    disk, root, _ = _roots(tmp_path, trash_max_items=2)
    for path in ("dir/sub/b.txt", "dir/a.txt", "dir/sub"):
        trash.delete(root, path)
    out = write.write_file(root, "notes.txt", "x", overwrite=True)
    assert out.kept_version and (disk.ws / out.kept_version).exists()
    assert _kinds(disk.ws) == ["delete", "delete", "delete", "version"]
    listing = restore.list_trash(str(disk.ws))
    assert [i.kind for i in listing.items] == ["delete", "delete", "delete", "version"]
    assert all(i.disk > 0 for i in listing.items)


def test_the_nth_change_lists_nothing_and_another_process_forces_one_relist(tmp_path):
    """On main every change listed every stamp folder of the trash (50,000 stamps: 0.64 s
    per 1-byte write)."""
    disk, root, _ = _roots(tmp_path)
    for i in range(150):
        write.write_file(root, "notes.txt", str(i), overwrite=True)
    inventory.WORK.clear()
    for i in range(20):
        write.write_file(root, "notes.txt", f"again {i}", overwrite=True)
        trash.delete(root, "dir/a.txt")
        (disk.ws / "dir" / "a.txt").write_text("a")
    assert dict(inventory.WORK) == {}  # no stamp listed, no record read
    # Another process (here --restore's code) changes the trash: one re-list, then none.
    first = restore.list_trash(str(disk.ws)).items[0]
    restore.restore(str(disk.ws), first.id, "back.txt")
    inventory.WORK.clear()
    write.write_file(root, "notes.txt", "after restore", overwrite=True)
    assert inventory.WORK["listed"] == len(os.listdir(disk.ws / ".mcp-trash"))  # once
    inventory.WORK.clear()
    for i in range(5):
        write.write_file(root, "notes.txt", f"then {i}", overwrite=True)
    assert dict(inventory.WORK) == {}


def test_the_account_is_right_after_another_process_empties_the_trash(tmp_path):
    from datetime import timedelta

    from app.fs.change.purge import empty_trash

    disk, root, _ = _roots(tmp_path, trash_max_items=4)
    for i in range(3):
        write.write_file(root, "notes.txt", str(i), overwrite=True)
    empty_trash(str(disk.ws), timedelta(0))
    assert _stamps(disk.ws) == []
    kept = [write.write_file(root, "notes.txt", f"n{i}", overwrite=True).kept_version
            for i in range(4)]
    # A stale account (3 versions) would have trimmed the first of these four.
    assert all((disk.ws / k).exists() for k in kept if k) and len(_stamps(disk.ws)) == 4


@pytest.mark.serial
def test_one_roots_trash_never_waits_for_anothers(tmp_path):
    disk, ws, src = _roots(tmp_path)
    write.write_file(ws, "notes.txt", "x", overwrite=True)
    fd = os.open(disk.ws / ".mcp-trash", os.O_RDONLY | os.O_DIRECTORY)
    try:
        account = ledger.account_of(fd)
    finally:
        os.close(fd)
    done = threading.Event()

    def other_root() -> None:
        write.write_file(src, "f.txt", "y", overwrite=True)
        done.set()

    with account.lock:  # ws's trash is busy: src's change must not wait for it
        worker = threading.Thread(target=other_root, daemon=True)
        worker.start()
        finished = done.wait(timeout=60)
    worker.join(timeout=60)
    assert finished
