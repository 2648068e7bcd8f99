"""app.fs.change.ledger on its own: the account's arithmetic, which versions trimming
removes and which it never does, what the trash's own files add, when the account is
listed again, the tally of what was dropped, and a trim that fails being logged, never
raised."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from app.fs.change import inventory, ledger, purge
from app.fs.change.layout import on_disk
from app.fs.change.ledger import Account, account_of
from app.security.policy import Recovery
from tests.kit import secure_root

OPEN = Recovery(keep_versions=True)  # caps far above anything here


@pytest.fixture
def trash(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    where = tmp_path / "r" / ".mcp-trash"
    where.mkdir(parents=True)
    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield where, fd
    finally:
        os.close(fd)


@pytest.fixture(autouse=True)
def _no_accounts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger, "_accounts", {})


def _item(where: Path, stamp: str, kind: str = "version", size: int = 1) -> int:
    """A stamp folder with its record and a file of `size` bytes: what it takes on disk."""
    (where / stamp).mkdir()
    (where / stamp / ".mcp-trash").write_text(
        json.dumps({"kind": kind, "path": "f.txt", "name": "f.txt"}) + "\n")
    (where / stamp / "f.txt").write_text("x" * size)
    return sum(on_disk(p.lstat()) for p in (where / stamp, *(where / stamp).iterdir()))


def _stamps(where: Path) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name[0].isdigit())


def on_disk_of(where: Path) -> int:
    """What the stamp folders take on disk, measured here with os.lstat."""
    return sum(on_disk(p.lstat()) for s in _stamps(where)
               for p in (where / s, *(where / s).iterdir()))


def _own(where: Path) -> int:
    names = [n for n in (".gitignore", "generation", "dropped.json") if (where / n).exists()]
    return on_disk(where.lstat()) + sum(on_disk((where / n).lstat()) for n in names)


# -- the account -------------------------------------------------------------------------


def test_an_account_adds_each_kind_apart_and_an_item_added_again_replaces_itself():
    a = Account()
    assert (a.generation, a.versions, a.deletes, a.taken, a.items) == (None, {}, {}, 0, 0)
    a.add("s1", "version", 10)
    a.add("s2", "delete", 5)
    a.add("s3", "anything else", 1)  # not a version: never trimmed
    a.add("s1", "version", 7)
    assert (a.versions, a.deletes) == ({"s1": 7}, {"s2": 5, "s3": 1})
    assert (a.taken, a.items) == (13, 3)


def test_relisting_starts_over_from_what_the_trash_holds(trash):
    where, fd = trash
    v1 = _item(where, "20200101T000000Z", "version")
    d = _item(where, "20200102T000000Z", "delete")
    v2 = _item(where, "20200103T000000Z", "version", size=5000)
    (where / "20200104T000000Z").mkdir()  # no item in it
    a = Account()
    a.add("gone", "version", 99)
    a.add("gone too", "delete", 99)
    a.relist(fd)
    assert list(a.versions.items()) == [("20200101T000000Z", v1), ("20200103T000000Z", v2)]
    assert a.deletes == {"20200102T000000Z": d} and a.taken == v1 + d + v2


def _full(where: Path, fd: int, versions: int = 4) -> tuple[Account, list[str], list[int]]:
    """A delete, then `versions` versions, listed in an account."""
    _item(where, "20200101T000000Z", "delete")
    names = [f"2020010{i + 2}T000000Z" for i in range(versions)]
    sizes = [_item(where, n) for n in names]
    a = Account()
    a.relist(fd)
    return a, names, sizes


def test_past_the_item_cap_the_oldest_versions_go_never_a_delete(trash):
    where, fd = trash
    a, names, sizes = _full(where, fd)
    assert a.trim(fd, replace(OPEN, trash_max_items=3), keep=names[-1]) == (2, sum(sizes[:2]))
    assert _stamps(where) == ["20200101T000000Z", *names[2:]]
    assert list(a.versions) == names[2:] and a.items == 3
    assert a.taken == on_disk_of(where)


def test_the_version_just_kept_is_never_trimmed(trash):
    where, fd = trash
    a, names, sizes = _full(where, fd)
    assert a.trim(fd, replace(OPEN, trash_max_items=3), keep=names[0]) == (2, sum(sizes[1:3]))
    assert _stamps(where) == ["20200101T000000Z", names[0], names[3]]


def test_when_only_the_version_just_kept_is_left_trimming_stops_past_the_cap(trash):
    where, fd = trash
    a, names, sizes = _full(where, fd, versions=2)
    assert a.trim(fd, replace(OPEN, trash_max_items=1), keep=names[1]) == (1, sizes[0])
    assert _stamps(where) == ["20200101T000000Z", names[1]] and a.items == 2


@pytest.mark.parametrize(("over", "removed"), [(0, 0), (1, 1)])
def test_at_the_item_cap_nothing_goes_one_past_it_the_oldest_does(trash, over, removed):
    where, fd = trash
    a, names, _ = _full(where, fd, versions=2)
    count, _ = a.trim(fd, replace(OPEN, trash_max_items=3 - over), keep=names[-1])
    assert count == removed and len(_stamps(where)) == 3 - removed


@pytest.mark.parametrize(("over", "removed"), [(0, 0), (1, 1)])
def test_at_the_byte_cap_nothing_goes_one_byte_under_it_the_oldest_does(trash, over,
                                                                         removed):
    where, fd = trash
    a, names, sizes = _full(where, fd, versions=2)
    cap = a.taken + _own(where) - over
    assert a.trim(fd, replace(OPEN, trash_max_bytes=cap), keep=names[-1]) == (
        removed, sizes[0] * removed)
    assert len(_stamps(where)) == 3 - removed


def test_the_trash_s_own_files_count_against_the_byte_cap(trash):
    where, fd = trash
    a, names, sizes = _full(where, fd, versions=2)
    (where / "dropped.json").write_text("x" * 5000)
    cap = a.taken + _own(where) - 1  # one byte under: without its own files it would fit
    assert a.trim(fd, replace(OPEN, trash_max_bytes=cap), keep=names[-1]) == (1, sizes[0])


def test_a_version_already_gone_frees_nothing_and_trimming_goes_on(trash):
    where, fd = trash
    a, names, sizes = _full(where, fd, versions=3)
    os.rename(where / names[0], where.parent / "elsewhere")  # another process removed it
    assert a.trim(fd, replace(OPEN, trash_max_items=2), keep=names[-1]) == (1, sizes[1])
    assert list(a.versions) == [names[2]] and a.taken == on_disk_of(where)


def test_a_version_that_cannot_be_removed_stops_the_trim_with_its_error(trash, monkeypatch):
    where, fd = trash
    a, names, _ = _full(where, fd, versions=3)

    def refused(*_a: object, **_k: object) -> object:
        raise OSError(errno.EACCES, "no")

    monkeypatch.setattr(ledger, "walk_tree", refused)
    with pytest.raises(PermissionError):
        a.trim(fd, replace(OPEN, trash_max_items=2), keep=names[-1])


# -- what the trash's own files take ---------------------------------------------------


def test_the_trash_s_own_files_are_the_folder_and_its_three_files_as_they_are(trash):
    where, fd = trash
    assert ledger.own_files(fd) == on_disk(where.lstat())
    for name in (".gitignore", "generation", "dropped.json"):
        (where / name).write_text("x" * 5000)
    (where / "other-by-hand").write_text("x" * 50_000)  # not the trash's own
    assert ledger.own_files(fd) == _own(where) > on_disk(where.lstat()) + 3 * 4096 - 1
    (where / "dropped.json").unlink()
    (where / "dropped.json").symlink_to("other-by-hand")  # the link, never its target
    assert ledger.own_files(fd) == _own(where)
    assert ledger.own_files(fd) < on_disk((where / "other-by-hand").stat())


# -- one account per trash ----------------------------------------------------------------


def test_each_trash_has_one_account_whatever_descriptor_it_is_reached_by(tmp_path):
    fds = []
    for name in ("a", "a", "b"):
        (tmp_path / name).mkdir(exist_ok=True)
        fds.append(os.open(tmp_path / name, os.O_RDONLY | os.O_DIRECTORY))
    try:
        first, again, other = (account_of(fd) for fd in fds)
        assert first is again and first is not other
    finally:
        for fd in fds:
            os.close(fd)


def test_past_the_accounts_kept_they_are_all_forgotten(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger, "MAX_ACCOUNTS", 2)
    fds = []
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        fds.append(os.open(tmp_path / name, os.O_RDONLY | os.O_DIRECTORY))
    try:
        a, b = account_of(fds[0]), account_of(fds[1])
        assert account_of(fds[0]) is a and account_of(fds[1]) is b  # two: both kept
        account_of(fds[2])
        assert len(ledger._accounts) == 1
        assert account_of(fds[0]) is not a  # listed again when next used
    finally:
        for fd in fds:
            os.close(fd)


# -- settling ---------------------------------------------------------------------------


def test_the_first_settle_lists_the_trash_the_next_adds_the_item_alone(trash):
    where, fd = trash
    _item(where, "20200101T000000Z")
    inventory.WORK.clear()
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)
    account = account_of(fd)
    assert inventory.WORK["listed"] > 0 and account.generation == 1
    assert (where / "generation").read_text() == "1\n"
    disk = _item(where, "20200102T000000Z", "delete")
    inventory.WORK.clear()
    ledger._settle(fd, "20200102T000000Z", "delete", OPEN)
    assert dict(inventory.WORK) == {}  # nothing listed, no record read
    assert account.deletes == {"20200102T000000Z": disk} and account.generation == 2
    assert account.taken == on_disk_of(where)


def test_a_counter_another_process_moved_lists_the_trash_again(trash):
    where, fd = trash
    _item(where, "20200101T000000Z")
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)
    _item(where, "20200102T000000Z")  # made by another process, which bumps the counter
    (where / "generation").write_text("7\n")
    _item(where, "20200103T000000Z")
    ledger._settle(fd, "20200103T000000Z", "version", OPEN)
    account = account_of(fd)
    assert list(account.versions) == ["20200101T000000Z", "20200102T000000Z",
                                      "20200103T000000Z"]
    assert account.generation == 8 and (where / "generation").read_text() == "8\n"


def test_a_trim_cut_short_bumps_the_counter_and_leaves_the_account_to_list(trash,
                                                                         monkeypatch):
    where, fd = trash
    _full(where, fd, versions=3)

    def refused(dir_fd: int, name: str, remove: bool) -> purge.Tally:
        if remove:
            raise OSError(errno.EIO, "I/O error")
        return purge.walk_tree(dir_fd, name, remove)

    ledger._settle(fd, "20200104T000000Z", "version", OPEN)
    monkeypatch.setattr(ledger, "walk_tree", refused)
    with pytest.raises(OSError):
        ledger._settle(fd, "20200104T000000Z", "version",
                       replace(OPEN, trash_max_items=1))
    assert account_of(fd).generation is None
    assert (where / "generation").read_text() == "2\n"
    assert not (where / "dropped.json").exists()


def test_a_list_cut_short_leaves_the_account_to_list_again(trash, monkeypatch):
    """Another process moved the counter, and the list that follows fails half-way: the
    account is not taken as listed (nor the counter moved), so the next settle lists again."""
    where, fd = trash
    _item(where, "20200101T000000Z")
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)
    (where / "generation").write_text("7\n")
    _item(where, "20200102T000000Z")

    def unreadable(*_a: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(ledger, "item_of", unreadable)
    with pytest.raises(OSError):
        ledger._settle(fd, "20200102T000000Z", "version", OPEN)
    assert account_of(fd).generation is None
    assert (where / "generation").read_text() == "7\n"
    monkeypatch.undo()
    ledger._settle(fd, "20200102T000000Z", "version", OPEN)
    assert list(account_of(fd).versions) == ["20200101T000000Z", "20200102T000000Z"]
    assert account_of(fd).generation == 8


def test_the_tally_s_time_is_utc_whatever_the_local_zone(trash, monkeypatch):
    where, fd = trash
    monkeypatch.setenv("TZ", "Asia/Kathmandu")  # UTC+05:45: no whole hour, no daylight saving
    time.tzset()
    assert time.timezone == -(5 * 3600 + 45 * 60)  # the zone is known here
    try:
        ledger._add_dropped(fd, 1, 1)
        now = datetime.now(timezone.utc)
    finally:
        monkeypatch.undo()
        time.tzset()
    last = json.loads((where / "dropped.json").read_text())["last"]
    at = datetime.strptime(last, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs((now - at).total_seconds()) < 60


def test_what_trimming_removed_is_tallied_in_dropped_json(trash):
    where, fd = trash
    _, names, sizes = _full(where, fd, versions=3)
    ledger._settle(fd, names[-1], "version", OPEN)
    assert not (where / "dropped.json").exists()  # nothing removed: nothing tallied
    ledger._settle(fd, names[-1], "version", replace(OPEN, trash_max_items=2))
    tally = json.loads((where / "dropped.json").read_text())
    assert (tally["versions"], tally["bytes"]) == (2, sizes[0] + sizes[1])
    assert len(tally["last"]) == 20 and tally["last"].endswith("Z") and tally["last"][10] == "T"
    assert (where / "dropped.json").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(("was", "versions", "bytes_"), [
    ('{"versions": 2, "bytes": 10, "last": "' + "x" * 500 + '"}', 5, 17),
    ("torn {", 3, 7),  # what does not read is nothing dropped so far
    ("", 3, 7),
])
def test_the_tally_adds_to_what_it_held_and_is_rewritten_whole(trash, was, versions,
                                                               bytes_):
    where, fd = trash
    (where / "dropped.json").write_text(was)
    ledger._add_dropped(fd, 3, 7)
    text = (where / "dropped.json").read_text()
    assert text.endswith("}\n") and text.count("\n") == 1
    tally = json.loads(text)
    assert (tally["versions"], tally["bytes"]) == (versions, bytes_)


def test_the_tally_is_never_written_through_a_link(trash, tmp_path):
    where, fd = trash
    (tmp_path / "target").write_text("untouched")
    (where / "dropped.json").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        ledger._add_dropped(fd, 1, 1)
    assert (tmp_path / "target").read_text() == "untouched"


def test_settle_never_fails_the_change_and_logs_a_trim_that_failed(tmp_path, monkeypatch,
                                                                   caplog):
    top = tmp_path / "r"
    top.mkdir()
    root = secure_root(top, name="ws")
    ledger.settle(root, "20200101T000000Z", "version")  # no trash: nothing to do, no error
    assert not caplog.records
    (top / ".mcp-trash").mkdir()
    _item(top / ".mcp-trash", "20200101T000000Z")

    def refused(*_a: object, **_k: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(ledger, "_settle", refused)
    with caplog.at_level(logging.WARNING, logger="loomfs.trash"):
        ledger.settle(root, "20200101T000000Z", "version")
    assert [r.getMessage() for r in caplog.records] == [
        "root ws: the trash could not be trimmed (I/O error)"]


def test_settle_accounts_the_item_against_the_root_s_caps(tmp_path):
    top = tmp_path / "r"
    where = top / ".mcp-trash"
    where.mkdir(parents=True)
    root = secure_root(top, name="ws")
    root.policy.recovery = replace(OPEN, trash_max_items=2)
    for i in range(4):
        _item(where, f"2020010{i + 1}T000000Z")
        ledger.settle(root, f"2020010{i + 1}T000000Z", "version")
    assert _stamps(where) == ["20200103T000000Z", "20200104T000000Z"]
    assert json.loads((where / "dropped.json").read_text())["versions"] == 2


# -- the split a page reads -------------------------------------------------------------


def test_the_split_is_known_only_while_the_account_is_current(trash):
    where, fd = trash
    assert ledger.known_split(fd) is None  # no account yet: nothing listed for it
    version = _item(where, "20200101T000000Z")
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)
    delete = _item(where, "20200102T000000Z", "delete")
    ledger._settle(fd, "20200102T000000Z", "delete", OPEN)
    inventory.WORK.clear()
    assert ledger.known_split(fd) == ledger.Split(1, version, 1, delete)
    assert dict(inventory.WORK) == {}  # nothing listed, no record read
    (where / "generation").write_text("7\n")  # another process changed the trash
    assert ledger.known_split(fd) is None
    (where / "generation").write_text("2\n")
    account = account_of(fd)
    with account.lock:  # a settle under way: not waited for
        assert ledger.known_split(fd) is None
    assert ledger.known_split(fd) is not None


def _emptying(where: Path, removed: list[str], bump: int = 1):
    """What `purge.empty_trash` does to the trash: `removed` gone, the counter bumped."""
    def run() -> purge.Emptied:
        for stamp in removed:
            shutil.rmtree(where / stamp)
        if removed:
            gen = int((where / "generation").read_text())
            (where / "generation").write_text(f"{gen + bump}\n")
        return purge.Emptied(removed=removed)
    return run


def test_an_empty_by_this_process_leaves_the_account_current_without_what_went(trash):
    where, fd = trash
    for stamp in ("20200101T000000Z", "20200102T000000Z"):
        _item(where, stamp)
        ledger._settle(fd, stamp, "version", OPEN)
    kept = _item(where, "20200103T000000Z", "delete")
    ledger._settle(fd, "20200103T000000Z", "delete", OPEN)
    ledger.emptied(fd, _emptying(where, ["20200101T000000Z", "20200102T000000Z"]))
    account = account_of(fd)
    assert account.generation == int((where / "generation").read_text())
    assert account.versions == {} and account.deletes == {"20200103T000000Z": kept}
    assert account.taken == on_disk_of(where)
    assert ledger.known_split(fd) == ledger.Split(0, 0, 1, kept)


@pytest.mark.parametrize("bump", [
    2,  # another process changed the trash meanwhile
    0,  # the counter of another folder was bumped: this one's did not move
])
def test_an_empty_with_any_other_counter_leaves_the_account_to_list(trash, bump):
    where, fd = trash
    _item(where, "20200101T000000Z")
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)
    ledger.emptied(fd, _emptying(where, ["20200101T000000Z"], bump=bump))
    assert account_of(fd).generation is None and ledger.known_split(fd) is None


def test_an_empty_that_raises_leaves_the_account_to_list(trash):
    where, fd = trash
    _item(where, "20200101T000000Z")
    ledger._settle(fd, "20200101T000000Z", "version", OPEN)

    def failing() -> purge.Emptied:
        raise OSError(errno.EIO, "Input/output error")

    with pytest.raises(OSError):
        ledger.emptied(fd, failing)
    assert account_of(fd).generation is None
