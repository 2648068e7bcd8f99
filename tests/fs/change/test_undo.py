"""app.fs.change.undo: the owner's restore. A delete back where it was and never over an
existing entry; a version over the current file, that file kept as a version first (so
the restore is undone by restoring that); every refusal leaves the disk and the trash as
they were; a writer racing the restore loses nothing; the listing reads only the records
it shows."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest

from app.audit import current_client
from app.fs.change import inventory, trash, undo, write
from app.fs.change.undo import UndoRefused, newest, put_back, read_item
from app.security.policy import Recovery
from tests.fs.conftest import populated_ws

TRASH = ".mcp-trash"


@pytest.fixture
def ws(tmp_path: Path):
    disk, root = populated_ws(tmp_path)
    return disk.ws, root


def _items(top: Path) -> list[str]:
    """Every item of the trash, as `<stamp>/<name>`."""
    base = top / TRASH
    if not base.is_dir():
        return []
    found = []
    for stamp in base.iterdir():
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # restored meanwhile
            found += [f"{stamp.name}/{n.name}" for n in stamp.iterdir() if n.name != TRASH]
    return sorted(found)


def _tree(top: Path) -> dict[str, object]:
    """What the root holds outside the trash: each entry's kind and content."""
    seen: dict[str, object] = {}
    for dirpath, dirs, files in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        if rel.split(os.sep)[0] == TRASH:
            continue
        for name in dirs + files:
            p = Path(dirpath) / name
            key = os.path.normpath(os.path.join(rel, name))
            if p.is_symlink():
                seen[key] = ("link", os.readlink(p))
            elif p.is_dir():
                seen[key] = "dir"
            elif p.is_file():
                seen[key] = p.read_bytes()
            else:
                seen[key] = "other"
    return seen


def _version(root, top: Path, path: str, new: str) -> str:
    """Overwrite `path` with `new`; the ID of the version kept of what it held."""
    kept = write.write_file(root, path, new, overwrite=True).kept_version
    assert kept is not None
    return kept.split("/", 1)[1]


def test_a_delete_goes_back_where_it_was_and_leaves_no_stamp(ws):
    top, root = ws
    moved = trash.delete(root, "dir/sub/b.txt").trashed_to.split("/", 1)[1]
    (top / "dir" / "sub").rmdir()  # the folder on the way is made again
    done = put_back(root, moved)
    assert (done.path, done.replaced) == ("dir/sub/b.txt", None)
    assert (top / "dir" / "sub" / "b.txt").read_text() == "beta\n"
    assert _items(top) == []
    assert [p.name for p in (top / TRASH).iterdir() if p.name[0].isdigit()] == []


def test_a_version_replaces_the_file_and_keeps_it_so_the_restore_is_undone_the_same_way(ws):
    top, root = ws
    old = _version(root, top, "notes.txt", "agent's text\n")
    token = current_client.set("owner")
    try:
        done = put_back(root, old)
    finally:
        current_client.reset(token)
    assert (top / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert done.replaced is not None and done.replaced in _items(top)
    assert old not in _items(top)
    record = json.loads((top / TRASH / done.replaced.split("/")[0] / TRASH).read_text())
    assert (record["kind"], record["path"], record["op"], record["client"]) == (
        "version", "notes.txt", "restore", "owner")
    assert read_item(root, done.replaced, 1000) == b"agent's text\n"
    again = put_back(root, done.replaced)  # the undo of the restore
    assert (top / "notes.txt").read_text() == "agent's text\n"
    assert again.replaced is not None
    assert read_item(root, again.replaced, 1000) == b"one\ntwo\nthree\n"


def test_a_version_of_a_file_gone_since_goes_back_without_replacing(ws):
    top, root = ws
    old = _version(root, top, "dir/a.txt", "beta-ish\n")
    (top / "dir" / "a.txt").unlink()
    done = put_back(root, old)
    assert (done.path, done.replaced) == ("dir/a.txt", None)
    assert (top / "dir" / "a.txt").read_text() == "alpha\n"


def _deleted_over_existing(top, root):
    item = trash.delete(root, "dir/a.txt").trashed_to.split("/", 1)[1]
    (top / "dir" / "a.txt").write_text("made after the delete\n")
    return item


def _version_over_folder(top, root):
    item = _version(root, top, "dir/a.txt", "x")
    (top / "dir" / "a.txt").unlink()
    (top / "dir" / "a.txt").mkdir()
    return item


def _version_over_link(top, root):
    item = _version(root, top, "dir/a.txt", "x")
    (top / "dir" / "a.txt").unlink()
    (top / "dir" / "a.txt").symlink_to("../notes.txt")
    return item


def _versions_off(top, root):
    item = _version(root, top, "dir/a.txt", "x")
    root.policy.recovery = Recovery(keep_versions=False)
    return item


def _too_large_to_keep(top, root):
    item = _version(root, top, "dir/a.txt", "x")
    root.policy.recovery = Recovery(keep_versions=True, version_max_bytes=0)
    return item


def _record_says(path: str):
    def make(top, root):
        item = trash.delete(root, "dir/sub/b.txt").trashed_to.split("/", 1)[1]
        record = top / TRASH / item.split("/")[0] / TRASH
        fields = json.loads(record.read_text())
        record.write_text(json.dumps(fields | {"path": path}))
        return item
    return make


def _on_the_way_a_link_out(top, root):
    item = trash.delete(root, "dir/sub/b.txt").trashed_to.split("/", 1)[1]
    (top / "dir" / "sub").rmdir()
    (top / "dir" / "sub").symlink_to(top.parent / "outside")
    return item


REFUSALS = [
    ("a delete over an entry made since", _deleted_over_existing, "never restored over it"),
    ("a version where a folder is now", _version_over_folder,
     "not a regular file now (a folder or a link); nothing was restored"),
    ("a version where a link is now", _version_over_link,
     "not a regular file now (a folder or a link); nothing was restored"),
    ("a root that keeps no versions", _versions_off, "keeps no versions"),
    ("a file above the limit of a kept version", _too_large_to_keep, "above this root's limit"),
    ("a record edited to name .env", _record_says(".env"), "deny"),
    ("a record edited to name .git/", _record_says(".git/hooks/post-commit"), "deny"),
    ("a record edited to name the trash", _record_says(".MCP-TRASH/x"), "deny"),
    ("a folder on the way that links out", _on_the_way_a_link_out, "escapes the root"),
]


@pytest.mark.parametrize("make,words", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_a_refused_restore_says_why_and_changes_nothing(ws, make, words):
    top, root = ws
    item = make(top, root)
    before, held = _tree(top), _items(top)
    with pytest.raises(UndoRefused) as refused:
        put_back(root, item)
    assert words in refused.value.message
    assert "nothing was restored" in refused.value.message
    assert str(top) not in refused.value.message
    assert (_tree(top), _items(top)) == (before, held)


@pytest.mark.parametrize("item_id", [
    "", "x", "../notes.txt", "20200101T000000Z/../../notes.txt", "20200101T000000Z/nope",
    "20200101T000000Z", "not-a-stamp/notes.txt", "/etc/passwd", "20200101T000000Z/a/b",
])
def test_an_id_that_is_not_an_item_is_refused(ws, item_id):
    top, root = ws
    trash.delete(root, "dir/a.txt")
    before, held = _tree(top), _items(top)
    with pytest.raises(UndoRefused, match="no item"):
        put_back(root, item_id)
    assert (_tree(top), _items(top)) == (before, held)


def test_a_root_without_a_trash_says_so_and_makes_none(ws):
    top, root = ws
    with pytest.raises(UndoRefused, match="has no trash"):
        put_back(root, "20200101T000000Z/a.txt")
    assert not (top / TRASH).exists()
    assert newest(root, 10) == undo.Newest()


@pytest.mark.parametrize("removable", [True, False], ids=["extra version removed",
                                                         "extra version cannot be removed"])
def test_a_writer_between_the_keep_and_the_rename_loses_nothing(ws, monkeypatch, removable):
    """Another program replaces the file after its version was kept: the restore is
    refused, the extra version removed (or, when it cannot be, refused all the same), the
    other program's file left as it wrote it."""
    top, root = ws
    item = _version(root, top, "notes.txt", "agent\n")
    real_keep = undo.keep

    def keep_then_write(*args, **kwargs):
        kept = real_keep(*args, **kwargs)
        (top / "other.tmp").write_text("another program\n")
        os.replace(top / "other.tmp", top / "notes.txt")
        return kept

    def cannot(*args, **kwargs):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(undo, "keep", keep_then_write)
    if not removable:
        monkeypatch.setattr(undo, "walk_tree", cannot)
    held = _items(top)
    with pytest.raises(UndoRefused,
                       match=r"changed while it was being restored; nothing was restored$"):
        put_back(root, item)
    assert (top / "notes.txt").read_text() == "another program\n"
    if removable:
        assert _items(top) == held


def test_two_restores_of_one_item_at_once_restore_it_once_and_lose_nothing(ws):
    top, root = ws
    item = _version(root, top, "notes.txt", "agent\n")
    results: list[object] = []
    start = threading.Barrier(4)

    def one() -> None:
        start.wait()
        try:
            results.append(put_back(root, item))
        except UndoRefused as exc:
            results.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [r for r in results if isinstance(r, undo.Restored)]
    assert len(done) == 1, results
    assert all("no item" in r.message for r in results if isinstance(r, UndoRefused))
    assert (top / "notes.txt").read_text() == "one\ntwo\nthree\n"
    kept = [read_item(root, i, 100) for i in _items(top)]
    assert kept == [b"agent\n"]  # the replaced content, once


def test_restores_racing_writes_on_one_file_lose_no_content(ws):
    """Writers and restores on one file, in threads: every content that was ever the
    file's is, at the end, the file or an item of the trash."""
    top, root = ws
    written = {b"one\ntwo\nthree\n"}
    stop = threading.Event()

    def writer(n: int) -> None:
        for i in range(15):
            text = f"writer {n} round {i}\n"
            write.write_file(root, "notes.txt", text, overwrite=True)
            written.add(text.encode())

    def restorer() -> None:
        while not stop.is_set():
            for item in _items(top):
                with contextlib.suppress(UndoRefused):
                    put_back(root, item)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    back = threading.Thread(target=restorer)
    back.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    back.join()
    held = {read_item(root, i, 1000) for i in _items(top)} | {(top / "notes.txt").read_bytes()}
    assert written <= held


def test_the_listing_is_the_newest_first_and_reads_only_the_records_it_shows(ws):
    top, root = ws
    base = top / TRASH
    base.mkdir()
    for n in range(40):
        folder = base / f"2020010{1 + n // 10}T0000{n % 10:02d}Z"
        folder.mkdir()
        (folder / "f.txt").write_text(str(n))
        (folder / TRASH).write_text(json.dumps(
            {"kind": "delete", "path": f"d/f{n}.txt", "name": "f.txt", "op": "delete"}))
    before = inventory.WORK["records"]
    shown = newest(root, 5)
    assert inventory.WORK["records"] - before == 5
    assert shown.total == 40
    assert [i.path for i in shown.items] == [f"d/f{n}.txt" for n in (39, 38, 37, 36, 35)]
    assert newest(root, 0).items == []


def test_read_item_is_bounded_and_only_for_regular_files(ws):
    top, root = ws
    item = _version(root, top, "notes.txt", "x")
    folder = trash.delete(root, "dir").trashed_to.split("/", 1)[1]
    assert read_item(root, item, 14) == b"one\ntwo\nthree\n"
    assert read_item(root, item, 13) is None  # one byte above the bound
    assert read_item(root, folder, 1 << 20) is None


def test_a_file_made_at_the_path_just_before_the_rename_is_never_replaced(ws, monkeypatch):
    top, root = ws
    item = trash.delete(root, "dir/a.txt").trashed_to.split("/", 1)[1]
    real = undo.rename_noreplace

    def made_first(src_fd, src, dst_fd, dst):
        (top / "dir" / "a.txt").write_text("another program\n")
        real(src_fd, src, dst_fd, dst)

    monkeypatch.setattr(undo, "rename_noreplace", made_first)
    with pytest.raises(UndoRefused, match=r"just made by another program; nothing was restored$"):
        put_back(root, item)
    assert (top / "dir" / "a.txt").read_text() == "another program\n"
    assert item in _items(top)


def test_a_restore_in_this_process_keeps_the_account_so_the_next_change_reads_no_record(ws):
    """The trash's account stays current through a restore (`ledger.forget`): the change
    after it settles without listing the trash, and the account equals a fresh listing."""
    from app.fs.change import ledger
    from app.security import ops

    top, root = ws
    for n in range(30):
        (top / f"f{n}.txt").write_text(f"{n}\n")
        trash.delete(root, f"f{n}.txt")
    old = _version(root, top, "notes.txt", "agent\n")
    before = inventory.WORK["records"]
    put_back(root, old)
    write.write_file(root, "dir/a.txt", "changed\n", overwrite=True)
    assert inventory.WORK["records"] - before <= 2  # the item's own (twice), not 32
    top_fd = ops.open_root(str(top))
    fd = ops.open_dir(top_fd, TRASH)
    os.close(top_fd)
    try:
        account = ledger.account_of(fd)
        fresh = ledger.Account()
        fresh.relist(fd)
        assert (account.versions, account.deletes, account.taken) == (
            fresh.versions, fresh.deletes, fresh.taken)
    finally:
        os.close(fd)


def test_a_huge_deleted_tree_is_measured_to_its_bound_and_said_at_least(ws, monkeypatch):
    """The listing walks at most `MEASURED` entries of an item: a deleted folder of more
    is shown as at least its measured part, the others whole."""
    top, root = ws
    monkeypatch.setattr(undo, "MEASURED", 50)
    big = top / "big"
    big.mkdir()
    for n in range(120):
        (big / f"{n}.txt").write_text("x" * 10)
    trash.delete(root, "big")
    trash.delete(root, "notes.txt")
    shown = {i.path: i for i in newest(root, 10).items}
    assert shown["notes.txt"].whole and shown["notes.txt"].bytes == 14
    assert not shown["big"].whole
    assert 0 < shown["big"].bytes < 1200  # part of it, never more than what is there


# -- the edges (each found by mutating undo.py) ------------------------------------------


def test_a_file_exactly_at_the_limit_of_a_kept_version_is_replaced_and_kept(ws):
    top, root = ws
    item = _version(root, top, "dir/a.txt", "x")  # "x": 1 byte now
    root.policy.recovery = Recovery(keep_versions=True, version_max_bytes=1)
    done = put_back(root, item)
    assert (top / "dir" / "a.txt").read_text() == "alpha\n"
    assert done.replaced is not None and read_item(root, done.replaced, 10) == b"x"


def test_the_refusals_say_how_to_restore_elsewhere(ws):
    top, root = ws
    version = _version(root, top, "dir/a.txt", "x")
    root.policy.recovery = Recovery(keep_versions=False)
    with pytest.raises(UndoRefused) as off:
        put_back(root, version)
    assert f"--restore {root.name} ID --to PATH puts the version elsewhere" in off.value.message
    deleted = _deleted_over_existing(top, root)
    with pytest.raises(UndoRefused) as over:
        put_back(root, deleted)
    assert over.value.message.endswith(
        f"(--restore {root.name} {deleted} --to PATH puts it elsewhere)")


def test_an_item_of_the_older_nested_layout_goes_back_and_its_folders_are_tidied(ws):
    """A stamp folder of an older server holds the item at its whole path (no `name` in
    the record): read, restored, and the folders that held it removed with the stamp."""
    top, root = ws
    stamp = top / TRASH / "20200101T000000Z"
    (stamp / "dir" / "sub").mkdir(parents=True)
    (stamp / "dir" / "sub" / "old.txt").write_text("nested\n")
    (stamp / TRASH).write_text(json.dumps({"kind": "delete", "path": "dir/sub/old.txt"}))
    item = "20200101T000000Z/dir/sub/old.txt"
    assert read_item(root, item, 100) == b"nested\n"
    assert put_back(root, item).path == "dir/sub/old.txt"
    assert (top / "dir" / "sub" / "old.txt").read_text() == "nested\n"
    assert not stamp.exists()


def test_a_stamp_folder_holding_something_else_too_stays_after_its_item_goes(ws):
    top, root = ws
    item = trash.delete(root, "dir/a.txt").trashed_to.split("/", 1)[1]
    stray = top / TRASH / item.split("/")[0] / "put-here-by-hand"
    stray.write_text("?")
    assert put_back(root, item).path == "dir/a.txt"
    assert stray.read_text() == "?"  # not ours: the stamp folder stays for it


def test_a_trash_that_is_a_link_is_refused_as_not_a_plain_folder(ws):
    top, root = ws
    (top / "elsewhere").mkdir()
    (top / TRASH).symlink_to("elsewhere")
    for call in (lambda: put_back(root, "20200101T000000Z/a.txt"),
                 lambda: newest(root, 10),
                 lambda: read_item(root, "20200101T000000Z/a.txt", 10)):
        with pytest.raises(UndoRefused, match="is not a plain folder"):
            call()


def test_reading_an_item_of_a_root_without_a_trash_says_so(ws):
    _, root = ws
    with pytest.raises(UndoRefused, match="has no trash"):
        read_item(root, "20200101T000000Z/a.txt", 10)


def test_a_path_deeper_than_the_server_makes_is_refused(ws):
    from app.security.paths import MAX_DEPTH

    top, root = ws
    make = _record_says("/".join(["d"] * (MAX_DEPTH + 1)))
    item = make(top, root)
    with pytest.raises(UndoRefused, match=r"nothing was restored$"):
        put_back(root, item)
    assert item in _items(top)


def test_the_newest_one_is_listed_alone(ws):
    _, root = ws
    trash.delete(root, "dir/a.txt")
    trash.delete(root, "notes.txt")
    assert [i.path for i in newest(root, 1).items] == ["notes.txt"]


def test_finding_an_item_measures_it_to_the_bound(ws, monkeypatch):
    top, root = ws
    monkeypatch.setattr(undo, "MEASURED", 5)
    big = top / "big"
    big.mkdir()
    for n in range(20):
        (big / f"{n}.txt").write_text("x")
    item = trash.delete(root, "big").trashed_to.split("/", 1)[1]
    assert not undo.find(root, item).whole


def test_through_an_audited_root_the_restore_is_asked_as_owner_restore(audited):
    _, root, seen = audited
    item = trash.delete(root, "f.txt").trashed_to.split("/", 1)[1]
    put_back(root, item)
    assert seen[-1] == ("ALLOW", "f.txt", "owner_restore")


def test_a_trash_gone_between_the_look_and_the_move_says_so(ws, monkeypatch):
    top, root = ws
    item = trash.delete(root, "dir/a.txt").trashed_to.split("/", 1)[1]
    real, calls = undo._trash, []

    def gone_the_second_time(r):
        calls.append(r)
        return None if len(calls) == 2 else real(r)

    monkeypatch.setattr(undo, "_trash", gone_the_second_time)
    with pytest.raises(UndoRefused, match=f"root '{root.name}' has no trash"):
        put_back(root, item)
    assert not (top / "dir" / "a.txt").exists()
