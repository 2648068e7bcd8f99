"""app.fs.change.locks on its own: one global order, nothing left behind, shared keys for
two paths to one entry."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from app.fs.change import locks
from app.fs.change.locks import TABLE, LockTable, changing, name_key
from tests.fs.conftest import populated_ws


class Cancelled(Exception):
    pass


def test_keys_taken_in_opposite_orders_never_deadlock():
    table = LockTable()
    keys = [("0name", 1, i, "x") for i in range(5)] + [("1file", 1, i) for i in range(5)]
    done: list[int] = []

    def run(order: list) -> None:
        for _ in range(300):
            with table.hold(order):
                pass
        done.append(1)

    threads = [threading.Thread(target=run, args=(ks,), daemon=True)
               for ks in (keys, keys[::-1], keys[3:] + keys[:3], keys[::-1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(done) == 4 and len(table) == 0


def test_a_waiter_that_is_cancelled_holds_nothing_and_leaves_no_entry(monkeypatch):
    monkeypatch.setattr(locks, "POLL_SECONDS", 0.01)
    table = LockTable()
    key = ("1file", 1, 2)
    polls = []

    def cancel() -> None:
        polls.append(1)
        raise Cancelled

    with table.hold([key]):
        with pytest.raises(Cancelled), table.hold([("0name", 1, 1, "a"), key], wait=cancel):
            pass
        assert polls == [1] and len(table) == 1  # only the holder's entry
    assert len(table) == 0
    with table.hold([("0name", 1, 1, "a"), key]):  # nothing was left locked
        pass


def test_two_paths_to_one_folder_share_the_name_key_and_links_share_the_file_key(tmp_path: Path):
    disk, root = populated_ws(tmp_path)
    os.link(disk.ws / "dir" / "a.txt", disk.ws / "twin.txt")
    with root.open_parent("link_in/a.txt", op="t", perm="write") as via_link, \
            root.open_parent("dir/a.txt", op="t", perm="write") as direct, \
            root.open_parent("twin.txt", op="t", perm="write") as twin:
        assert name_key(via_link) == name_key(direct) != name_key(twin)
        entered = threading.Event()

        def other() -> None:
            with changing(twin):  # another name of the same file: waits for the key
                entered.set()

        with changing(direct):
            t = threading.Thread(target=other, daemon=True)
            t.start()
            assert not entered.wait(0.2)
        t.join(timeout=10)
        assert entered.is_set()
    assert len(TABLE) == 0


def test_a_name_key_is_its_folders_identity_and_name_and_sorts_before_every_file_key(
        tmp_path: Path):
    # One global order: a call holding both kinds takes every name key first.
    disk, root = populated_ws(tmp_path)
    st = os.stat(disk.ws / "dir")
    with root.open_parent("dir/a.txt", op="t", perm="write") as parent:
        key = name_key(parent)
    assert key == ("0name", st.st_dev, st.st_ino, "a.txt")
    assert sorted([("1file", 0, 0), key, ("1file", st.st_dev, st.st_ino)])[0] == key
