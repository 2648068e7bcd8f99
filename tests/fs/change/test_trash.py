"""app.fs.change.trash on its own: a private trash, a refused delete that leaves nothing behind
and says why, UTC stamps whatever the local zone, the audit line's operation."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app.audit import current_client, current_grant
from app.errors import LoomError, OSRefusal
from app.fs.change import copy, edit, move, trash, write
from app.fs.change.edit import TextEdit
from app.fs.change.layout import on_disk
from tests.fs.conftest import make_disk, populate, roots_config, umask
from tests.kit import loaded_root
from tests.security.conftest import make_root

NOW = datetime(2026, 11, 30, 7, 15, 0, tzinfo=timezone.utc)


@pytest.fixture
def ws(tmp_path: Path):
    disk = make_disk(tmp_path)
    populate(disk)
    (disk.ws / "dir" / "sub" / "deep").mkdir()
    (disk.ws / "dir" / "sub" / "deep" / "c.txt").write_text("C\n")
    root = loaded_root(roots_config(disk), "ws")
    return disk.ws, root


def test_the_trash_and_everything_made_in_it_is_private(ws):
    top, root = ws
    with umask(0o022):
        res = trash.delete(root, "dir/sub/deep/c.txt", now=NOW)
    assert res.trashed_to == ".mcp-trash/20261130T071500Z/c.txt"  # flat: no replica of dir/
    made = [top / ".mcp-trash", top / ".mcp-trash" / "20261130T071500Z"]
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in made} == {
        p.name: 0o700 for p in made
    }
    assert sorted(os.listdir(made[-1])) == [".mcp-trash", "c.txt"]
    assert stat.S_IMODE((made[-1] / ".mcp-trash").stat().st_mode) == 0o600
    assert (made[-1] / "c.txt").read_text() == "C\n"


def test_the_record_says_where_it_lived_what_replaced_it_and_who(ws):
    top, root = ws
    token = current_client.set("127.0.0.1:5000")
    try:
        trash.delete(root, "dir/sub/deep/c.txt", now=NOW)
        kept = write.write_file(root, "dir/a.txt", "new", overwrite=True).kept_version
        edited = edit.edit_file(root, "notes.txt", [TextEdit(old_text="one", new_text="1")],
                                max_output_chars=1000).kept_version
        (top / "m.txt").write_text("moved\n")
        (top / "c.txt").write_text("copied\n")
        moved = move.move_file(root, "m.txt", "dir/a.txt", overwrite=True).kept_version
        copied = copy.copy_file(root, "c.txt", root, "notes.txt", overwrite=True).kept_version
    finally:
        current_client.reset(token)
    records = [json.loads((top / ".mcp-trash" / "20261130T071500Z" / ".mcp-trash").read_text())]
    for item in (kept, edited, moved, copied):
        assert item is not None and item.count("/") == 2  # .mcp-trash/<stamp>/<name>
        records.append(json.loads((top / Path(item).parent / ".mcp-trash").read_text()))
    assert [(r["kind"], r["path"], r["name"], r["op"], r["client"]) for r in records] == [
        ("delete", "dir/sub/deep/c.txt", "c.txt", "delete", "127.0.0.1:5000"),
        ("version", "dir/a.txt", "a.txt", "write", "127.0.0.1:5000"),
        ("version", "notes.txt", "notes.txt", "edit", "127.0.0.1:5000"),
        ("version", "dir/a.txt", "a.txt", "move", "127.0.0.1:5000"),
        ("version", "notes.txt", "notes.txt", "copy", "127.0.0.1:5000"),
    ]


@pytest.mark.parametrize("grant,client,peer", [
    (None, "127.0.0.1:5000", None),  # no [[clients]]: the peer, as the audit log says
    ("claude-code", "claude-code", "127.0.0.1:5000"),  # the client by its name
])
def test_the_record_names_the_client_as_the_audit_log_does(ws, grant, client, peer):
    top, root = ws
    tokens = current_client.set("127.0.0.1:5000"), current_grant.set(grant)
    try:
        kept = write.write_file(root, "dir/a.txt", "new", overwrite=True).kept_version
    finally:
        current_client.reset(tokens[0])
        current_grant.reset(tokens[1])
    assert kept is not None
    record = json.loads((top / Path(kept).parent / ".mcp-trash").read_text())
    assert (record["client"], record.get("peer")) == (client, peer)


def _inodes_and_blocks(top: Path) -> tuple[int, int]:
    found = [top, *top.rglob("*")]
    return len({p.lstat().st_ino for p in found}), sum(p.lstat().st_blocks for p in found)


def _version_cost(tmp_path: Path, depth: int) -> tuple[int, int]:
    """Inodes and 512-byte blocks that 3 kept versions of an empty file `depth` folders deep
    add to the trash."""
    disk = make_disk(tmp_path / str(depth))
    root = loaded_root(roots_config(disk), "ws")
    path = "/".join(["d"] * depth + ["f.txt"])
    (disk.ws / path).parent.mkdir(parents=True, exist_ok=True)
    (disk.ws / path).write_text("")
    write.write_file(root, path, "", overwrite=True)  # the trash and its own files exist
    before = _inodes_and_blocks(disk.ws / ".mcp-trash")
    for _ in range(3):
        write.write_file(root, path, "", overwrite=True)
    after = _inodes_and_blocks(disk.ws / ".mcp-trash")
    return after[0] - before[0], after[1] - before[1]


def test_a_kept_version_costs_the_same_whatever_the_depth_of_its_file(tmp_path):
    """On main a version of a file 60 folders deep made 60 folders in the trash."""
    top, deep = _version_cost(tmp_path, 0), _version_cost(tmp_path, 60)
    assert deep == top
    inodes, blocks = top  # per version: its stamp folder, its record, the kept file
    assert inodes <= 3 * 3 and blocks <= 3 * 16, top


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (errno.EXDEV, "'dir/sub/deep/c.txt' is on another file system than the root's trash; "
                      "not deleted"),
        (errno.EIO, "'dir/sub/deep/c.txt'"),
    ],
)
def test_a_refused_delete_leaves_nothing_behind_and_says_why(ws, monkeypatch, failure, message):
    top, root = ws
    trash.delete(root, "notes.txt", now=NOW)  # the trash and one stamp exist already
    before = sorted(p.relative_to(top).as_posix() for p in (top / ".mcp-trash").rglob("*"))

    def refuse(*args):
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(trash, "rename_noreplace", refuse)
    with pytest.raises(LoomError) as exc:
        trash.delete(root, "dir/sub/deep/c.txt", now=NOW)
    assert message in exc.value.message
    if failure == errno.EXDEV:
        assert exc.value.message == message
    after = sorted(p.relative_to(top).as_posix() for p in (top / ".mcp-trash").rglob("*"))
    assert after == before  # the stamp and the three folders it made are gone again
    assert (top / "dir" / "sub" / "deep" / "c.txt").read_text() == "C\n"


def test_too_many_deletes_in_one_second_is_refused_clearly(ws, monkeypatch):
    top, root = ws
    monkeypatch.setattr(trash, "MAX_SAME_SECOND", 2)
    trash.delete(root, "notes.txt", now=NOW)
    trash.delete(root, "dir/a.txt", now=NOW)
    with pytest.raises(OSRefusal) as exc:
        trash.delete(root, "dir/sub/b.txt", now=NOW)
    assert exc.value.message == "too many deletes within one second"
    assert (top / "dir" / "sub" / "b.txt").exists()


def test_stamps_are_utc_whatever_the_local_zone(ws, monkeypatch):
    _, root = ws
    monkeypatch.setenv("TZ", "LOOM-5:30")
    time.tzset()
    try:
        before = datetime.now(timezone.utc).replace(microsecond=0)
        res = trash.delete(root, "notes.txt")
    finally:
        monkeypatch.undo()
        time.tzset()
    stamp = res.trashed_to.split("/")[1]
    when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    assert before - timedelta(seconds=1) <= when <= before + timedelta(seconds=5)


def test_the_audit_line_names_the_delete(tmp_path):
    lines: list[tuple] = []
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "f.txt").write_text("F")
    root = make_root(tmp_path / "r", audit=lambda *a: lines.append(a))
    trash.delete(root, "f.txt", now=NOW)
    assert [(d, rel, op) for d, _, rel, op, _ in lines] == [("ALLOW", "f.txt", "delete")]


# -- what a stamp folder reads as (app.fs.change.inventory.item_of), in-process ---------


@pytest.mark.parametrize(("record", "files", "expected"), [
    ('{"kind": "version", "path": "a/b/f.txt", "name": "f.txt", "op": "edit", '
     '"client": "stdio", "bytes": 3}', {"f.txt": "abc"},
     ("S/f.txt", "a/b/f.txt", "version", 3, "edit", "stdio")),
    ('{"kind": "delete", "path": "a/f.txt"}', {"a/f.txt": "abcd"},  # nested layout
     ("S/a/f.txt", "a/f.txt", "delete", 4, "-", "-")),
    (None, {"a/b/f.txt": "ab"},  # record-less: down while one entry
     ("S/a/b/f.txt", "a/b/f.txt", "delete", 2, "-", "-")),
    (None, {"a/x": "1", "a/y": "22"},  # record-less: a folder of two
     ("S/a", "a", "delete", 3, "-", "-")),
    ('{"kind": "delete", "path": "../../out/f", "name": "f"}', {"f": "x"},  # leads out
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": "a/./f", "name": "f"}', {"f": "x"},
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": "a//f", "name": "f"}', {"f": "x"},  # an empty part
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": 7, "name": "f"}', {"f": "x"},  # a path that is no text
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": "f", "name": "../f"}', {"f": "x"},
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": "a/f", "name": "a/f"}', {"a/f": "xy"},  # a name is one part
     ("S/a/f", "a/f", "delete", 2, "-", "-")),
    ('{"kind": "delete", "path": "f", "name": ".."}', {"f": "x"},
     ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "delete", "path": "d/f", "name": "f", "op": "delete", "client": "http"}',
     {"f": "x"}, ("S/f", "d/f", "delete", 1, "delete", "http")),  # a delete's own record
    ('{"kind": "purge", "path": "f", "name": "f"}', {"f": "x"},  # an unknown kind
     ("S/f", "f", "delete", 1, "-", "-")),
    ('not json', {"f": "x"}, ("S/f", "f", "delete", 1, "-", "-")),
    ('["kind", "version"]', {"f": "x"}, ("S/f", "f", "delete", 1, "-", "-")),
    ('{"kind": "version", "path": "g", "name": "g"}', {"f": "x"}, None),  # names nothing
    (None, {}, None),  # made but never filled
])
def test_a_stamp_folder_reads_as_its_record_says_or_fails_safe(tmp_path, record, files,
                                                               expected):
    from app.fs.change import inventory

    stamp = tmp_path / "20200101T000000Z"
    stamp.mkdir()
    if record is not None:
        (stamp / ".mcp-trash").write_text(record + "\n")
    for rel, text in files.items():
        (stamp / rel).parent.mkdir(parents=True, exist_ok=True)
        (stamp / rel).write_text(text)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        item = inventory.item_of(fd, stamp.name)
    finally:
        os.close(fd)
    if expected is None:
        assert item is None
        return
    assert item is not None
    got = (item.id.replace(stamp.name, "S", 1), item.path, item.kind, item.bytes, item.op,
           item.client)
    assert got == expected
    assert item.stamp == stamp.name and item.when == datetime(2020, 1, 1, tzinfo=timezone.utc)
    assert item.disk == sum(on_disk(p.lstat()) for p in (stamp, *stamp.rglob("*")))


def test_a_record_that_is_a_link_is_not_read(tmp_path):
    from app.fs.change import inventory

    stamp = tmp_path / "20200101T000000Z"
    stamp.mkdir()
    (tmp_path / "elsewhere").write_text('{"kind": "version", "path": "f", "name": "f"}')
    (stamp / ".mcp-trash").symlink_to(tmp_path / "elsewhere")
    (stamp / "f").write_text("x")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert inventory.read_record(fd, stamp.name) is None
        item = inventory.item_of(fd, stamp.name)
    finally:
        os.close(fd)
    assert item is not None and item.kind == "delete"


@pytest.mark.parametrize(("record", "expected"), [
    ('{"kind": "delete", "path": "a/f"}', None),  # nested: its folder is a link
    ('{"kind": "delete", "path": "a/f", "name": "a/f"}', ("S/a", 0)),  # refused: guessed
])
def test_an_item_is_never_reached_through_a_link_in_its_stamp_folder(tmp_path, record,
                                                                     expected):
    """The record's path is opened one folder at a time with no link followed, and a name
    is one part: a link `a` in the stamp folder to a folder outside never leads to `a/f`."""
    from app.fs.change import inventory

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_text("outside")
    stamp = tmp_path / "20200101T000000Z"
    stamp.mkdir()
    (stamp / ".mcp-trash").write_text(record)
    (stamp / "a").symlink_to(tmp_path / "elsewhere")
    fd = _trash_fd(tmp_path)
    try:
        item = inventory.item_of(fd, stamp.name)
    finally:
        os.close(fd)
    got = None if item is None else (item.id.replace(stamp.name, "S", 1), item.bytes)
    assert got == expected


def _trash_fd(top: Path) -> int:
    return os.open(top, os.O_RDONLY | os.O_DIRECTORY)


def test_reading_the_trash_counts_each_record_read_and_each_entry_listed(tmp_path):
    from app.fs.change import inventory

    for name in ("20200101T000000Z", "20200101T000000Z-1"):
        (tmp_path / name).mkdir()
    (tmp_path / "dropped.json").write_text("{}")
    fd = _trash_fd(tmp_path)
    inventory.WORK.clear()
    try:
        for _ in range(3):
            inventory.read_record(fd, "20200101T000000Z")
        inventory.stamps(fd)
        inventory.stamps(fd)
    finally:
        os.close(fd)
    assert dict(inventory.WORK) == {"records": 3, "listed": 6}


def test_only_stamp_named_folders_are_stamps_oldest_first(tmp_path):
    """Sorted by (time, suffix), not by name: `-10` after `-2`; a link to a folder, a file
    with a stamp's name and the trash's own files are not stamps."""
    from app.fs.change import inventory

    for name in ("20200101T000000Z-10", "20200101T000000Z-2", "20200101T000000Z",
                 "19991231T235959Z", "not-a-stamp"):
        (tmp_path / name).mkdir()
    (tmp_path / "20210101T000000Z").symlink_to(tmp_path / "20200101T000000Z")
    (tmp_path / "20220101T000000Z").write_text("a file")
    (tmp_path / "dropped.json").write_text("{}")
    fd = _trash_fd(tmp_path)
    try:
        assert inventory.stamps(fd) == ["19991231T235959Z", "20200101T000000Z",
                                        "20200101T000000Z-2", "20200101T000000Z-10"]
    finally:
        os.close(fd)


@pytest.mark.parametrize(("text", "expected"), [
    (None, {}),  # nothing trimmed yet
    ('{"versions": 2, "bytes": 8192, "last": "20200101T000000Z"}',
     {"versions": 2, "bytes": 8192, "last": "20200101T000000Z"}),
    ("[2, 8192]", {}),  # not an account
    ('"2"', {}),
    ("{not json", {}),
])
def test_what_trimming_dropped_reads_as_an_account_or_nothing(tmp_path, text, expected):
    from app.fs.change import inventory

    if text is not None:
        (tmp_path / "dropped.json").write_text(text)
    fd = _trash_fd(tmp_path)
    try:
        assert inventory.dropped(fd) == expected
    finally:
        os.close(fd)


@pytest.mark.parametrize(("pad", "read"), [(0, True), (1, False)])
def test_a_record_is_read_within_max_record_bytes(tmp_path, pad, read):
    """A record of exactly MAX_RECORD bytes reads; one byte more is cut, so it does not."""
    from app.fs.change import inventory

    stamp = tmp_path / "20200101T000000Z"
    stamp.mkdir()
    head = '{"kind": "version", "path": "f", "name": "f", "pad": "'
    text = head + "x" * (inventory.MAX_RECORD - len(head) - 2 + pad) + '"}'
    (stamp / ".mcp-trash").write_text(text)
    assert len(text) == inventory.MAX_RECORD + pad
    fd = _trash_fd(tmp_path)
    try:
        record = inventory.read_record(fd, stamp.name)
    finally:
        os.close(fd)
    assert (record is not None and record["kind"] == "version") is read


def test_a_record_that_is_a_folder_is_not_read(tmp_path):
    from app.fs.change import inventory

    stamp = tmp_path / "20200101T000000Z"
    (stamp / ".mcp-trash").mkdir(parents=True)
    fd = _trash_fd(tmp_path)
    try:
        assert inventory.read_record(fd, stamp.name) is None
        assert inventory.read_record(fd, "20200101T000000Z-9") is None  # no such stamp
    finally:
        os.close(fd)


# The trash's names and its generation counter (app.fs.change.layout) on their own.

@pytest.mark.parametrize("name, key", [
    ("20261130T071500Z", ("20261130T071500Z", 0)),
    ("20261130T071500Z-1", ("20261130T071500Z", 1)),
    ("20261130T071500Z-12", ("20261130T071500Z", 12)),
    ("20261130T071500Z-", None),
    ("20261130T071500Z-1a", None),
    ("20261130T071500Zx", None),
    ("x20261130T071500Z", None),
    ("2026113T071500Z", None),
    ("20261130T071500", None),
    (".gitignore", None),
    ("dropped.json", None),
])
def test_only_a_stamps_name_has_a_sort_key(name, key):
    from app.fs.change.layout import stamp_key
    assert stamp_key(name) == key


def test_a_stamps_time_is_utc_whatever_its_suffix():
    from app.fs.change.layout import stamp_time
    assert stamp_time("20261130T071500Z") == NOW
    assert stamp_time("20261130T071500Z-7") == NOW


@pytest.mark.parametrize("mode, blocks, taken", [
    (stat.S_IFREG | 0o644, 0, 0),
    (stat.S_IFREG | 0o644, 3, 1536),
    (stat.S_IFDIR | 0o755, 0, 4096),  # a folder that reports no blocks: one of its fs
    (stat.S_IFDIR | 0o755, 16, 8192),
])
def test_what_an_entry_takes_on_disk(mode, blocks, taken):
    from types import SimpleNamespace
    st = SimpleNamespace(st_mode=mode, st_blocks=blocks, st_blksize=4096)
    assert on_disk(st) == taken


@pytest.mark.parametrize("before, read, after", [
    (None, None, b"1\n"),
    (b"41\n", 41, b"42\n"),
    (b"  7      \n\n\n", 7, b"8\n"),  # the longer old text is cut away
    (b"9\xff", None, b"1\n"),  # not a number: counted afresh
    (b"-3\n", None, b"1\n"),
    (b"0" * 64 + b"5", 0, b"1\n"),  # at most 64 bytes are read
])
def test_the_generation_counter_reads_and_bumps(tmp_path: Path, before, read, after):
    from app.fs.change.layout import GENERATION, bump_generation, generation_lock
    if before is not None:
        (tmp_path / GENERATION).write_bytes(before)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with generation_lock(fd) as gen:
            assert gen.read() == read
        bump_generation(fd)
        assert (tmp_path / GENERATION).read_bytes() == after
        with generation_lock(fd) as gen:
            assert gen.bump() == int(after) + 1
    finally:
        os.close(fd)
    assert (tmp_path / GENERATION).read_bytes() == b"%d\n" % (int(after) + 1)
    if before is None:  # made by the lock: private
        assert stat.S_IMODE(os.stat(tmp_path / GENERATION).st_mode) == 0o600


# -- the trash's own files, the record's fields, stamps within one second, a failing cleanup --


BASE = "20261130T071500Z"  # stamp(NOW)


def test_the_trash_keeps_itself_out_of_git_status(ws):
    top, root = ws
    trash.delete(root, "notes.txt", now=NOW)
    assert (top / ".mcp-trash" / ".gitignore").read_bytes() == b"*\n"


def test_a_trash_whose_own_files_cannot_be_made_refuses_the_delete_and_holds_nothing(
        ws, monkeypatch):
    top, root = ws
    real = trash.ops.create

    def create(dir_fd, name):
        if name == ".gitignore":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real(dir_fd, name)

    monkeypatch.setattr(trash.ops, "create", create)
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(LoomError) as exc:
        trash.delete(root, "notes.txt", now=NOW)
    assert exc.value.message.endswith("'notes.txt'")
    assert len(os.listdir("/proc/self/fd")) == fds
    assert os.listdir(top / ".mcp-trash") == [] and (top / "notes.txt").exists()


def test_the_record_holds_the_size_of_a_kept_version_only_and_names_as_they_are(ws):
    top, root = ws
    (top / "dir" / "ünï.txt").write_text("x")
    trash.delete(root, "dir/ünï.txt", now=NOW)
    kept = write.write_file(root, "dir/a.txt", "new", overwrite=True).kept_version
    assert kept is not None
    raw = (top / ".mcp-trash" / BASE / ".mcp-trash").read_bytes()
    assert "ünï.txt".encode() in raw  # UTF-8 as it is, not \u escapes
    deleted = json.loads(raw)
    version = json.loads((top / Path(kept).parent / ".mcp-trash").read_text())
    assert "bytes" not in deleted and deleted["name"] == "ünï.txt"
    assert version["bytes"] == len("alpha\n")


def test_a_new_stamp_of_a_second_sorts_after_every_one_made_before_even_once_removed(
        ws, monkeypatch):
    """Two deletes made while a third one's stamp folder was being made (as by other
    threads), then their folders removed: the next delete of that second still sorts last."""
    top, root = ws
    table: dict = {}
    monkeypatch.setattr(trash, "_last", table)
    real, inner = trash.ops.mkdir, []

    def mkdir(dir_fd, name, mode):
        real(dir_fd, name, mode)
        if name == BASE and not inner:
            inner.append(trash.delete(root, "dir/a.txt", now=NOW))
            inner.append(trash.delete(root, "dir/sub/b.txt", now=NOW))

    monkeypatch.setattr(trash.ops, "mkdir", mkdir)
    outer = trash.delete(root, "notes.txt", now=NOW)
    monkeypatch.undo()
    stamps = [r.trashed_to.split("/")[1] for r in (outer, *inner)]
    assert stamps == [BASE, f"{BASE}-1", f"{BASE}-2"]
    for name in stamps[1:]:
        shutil.rmtree(top / ".mcp-trash" / name)
    monkeypatch.setattr(trash, "_last", table)
    res = trash.delete(root, "dir/sub/deep/c.txt", now=NOW)
    assert res.trashed_to.split("/")[1] == f"{BASE}-3"


def test_a_second_s_removed_stamp_is_not_taken_again(ws, monkeypatch):
    top, root = ws
    monkeypatch.setattr(trash, "_last", {})
    trash.delete(root, "notes.txt", now=NOW)
    trash.delete(root, "dir/a.txt", now=NOW)
    shutil.rmtree(top / ".mcp-trash" / f"{BASE}-1")
    res = trash.delete(root, "dir/sub/b.txt", now=NOW)
    assert res.trashed_to == f".mcp-trash/{BASE}-2/b.txt"


@pytest.mark.parametrize(("others", "after"), [(1024, 1025), (1025, 1)])
def test_the_table_of_same_second_counts_is_cleared_once_past_1024(ws, monkeypatch, others,
                                                                  after):
    _, root = ws
    table = {(0, i, "x"): 1 for i in range(others)}
    monkeypatch.setattr(trash, "_last", table)
    trash.delete(root, "notes.txt", now=NOW)
    assert len(table) == after


def test_a_cleanup_that_fails_does_not_hide_why_the_delete_was_refused(ws, monkeypatch):
    _, root = ws

    def refuse(*args):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(trash, "rename_noreplace", refuse)
    monkeypatch.setattr(trash.ops, "rmdir", refuse)
    with pytest.raises(LoomError) as exc:
        trash.delete(root, "dir/a.txt", now=NOW)
    assert exc.value.message.endswith("'dir/a.txt'")
