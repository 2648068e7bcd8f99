"""Races: while writes, edits, mkdirs, moves and deletes run, an attacker keeps
swapping a directory on their path for a symlink to outside the root. Nothing
outside is ever created, modified or moved, with openat2 and with the
component walk alike.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from app.errors import LoomError
from app.fs.change import edit as edit_mod
from app.fs.change import move as move_mod
from app.fs.change import trash
from app.fs.change import write as write_mod
from app.fs.change.edit import TextEdit
from app.security import openat2
from tests.fs.conftest import make_disk, populate, populated_ws, race, roots_config
from tests.kit import loaded_root

RACE_SECONDS = 1.2


def outside_state(top: Path) -> dict[str, Any]:
    """Names, contents and directory mtimes: even a file created and removed shows."""
    state: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        d = Path(dirpath)
        state[str(d.relative_to(top))] = ("dir", d.lstat().st_mtime_ns)
        for name in filenames + dirnames:
            p = d / name
            st = p.lstat()
            if stat.S_ISREG(st.st_mode):
                state[str(p.relative_to(top))] = ("file", p.read_bytes(), st.st_mtime_ns)
    return state


def bait(outside: Path) -> None:
    """Files with the names the workers use, so a write through the link would hit them."""
    for name in ("f.txt", "e.txt", "a.txt", "b.txt", "x.txt"):
        (outside / name).write_text(f"outside {name}\n")
    (outside / "d").mkdir()


class Attacker(threading.Thread):
    """Swap `victim` for a symlink to outside and back, as fast as it can."""

    def __init__(self, victim: Path, outside: Path, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.victim, self.outside, self.stop = victim, outside, stop
        self.swaps = 0
        self.fresh = 0

    def run(self) -> None:
        aside = self.victim.with_name(self.victim.name + ".aside")
        while not self.stop.is_set():
            os.rename(self.victim, aside)
            self._retry(lambda: os.symlink(self.outside, self.victim))
            time.sleep(0)  # let a worker resolve through the link
            os.unlink(self.victim)
            self._retry(lambda: os.rename(aside, self.victim))
            self.swaps += 1
            time.sleep(0.0005)  # and let some work succeed in between

    def _retry(self, action) -> None:
        # Writers create missing parents (mkdir -p), so the name may be taken again
        # the moment it is free: move such a fresh directory out of the way.
        for _ in range(1000):
            try:
                return action()
            except OSError:
                self.fresh += 1
                fresh = self.victim.with_name(f"{self.victim.name}.fresh{self.fresh}")
                os.rename(self.victim, fresh)
        raise RuntimeError("attacker could not take the name back")


def worker(root, base: str, stop: threading.Event, tally: Counter, crashes: list) -> None:
    to_b = [TextEdit(old_text="state A", new_text="state B")]
    to_a = [TextEdit(old_text="state B", new_text="state A")]
    ops = [
        ("write", lambda: write_mod.write_file(root, f"{base}/f.txt", "inside\n", overwrite=True)),
        ("edit", lambda: edit_mod.edit_file(root, f"{base}/e.txt", to_b, max_output_chars=500)),
        ("edit", lambda: edit_mod.edit_file(root, f"{base}/e.txt", to_a, max_output_chars=500)),
        ("mkdir", lambda: write_mod.create_directory(root, f"{base}/d/e")),
        ("move", lambda: move_mod.move_file(root, f"{base}/a.txt", f"{base}/b.txt")),
        ("move", lambda: move_mod.move_file(root, f"{base}/b.txt", f"{base}/a.txt")),
        ("write", lambda: write_mod.write_file(root, f"{base}/x.txt", "doomed\n")),
        ("delete", lambda: trash.delete(root, f"{base}/x.txt")),
    ]
    while not stop.is_set():
        for kind, op in ops:
            try:
                op()
                tally[kind] += 1
            except LoomError as exc:
                tally[f"refused: {exc.message.split(':')[0]}"] += 1
            except Exception as exc:  # anything else is a bug in the write path
                crashes.append(repr(exc))


@pytest.mark.parametrize("victim", ["work/box", "work"], ids=["parent", "grandparent"])
@pytest.mark.parametrize("use_openat2", [True, False], ids=["openat2", "component-walk"])
def test_swapping_a_parent_for_an_outside_link_never_reaches_outside(
    tmp_path: Path, victim: str, use_openat2: bool
) -> None:
    if use_openat2 and not openat2.available():
        pytest.skip("openat2 is not available on this kernel")
    disk = make_disk(tmp_path)
    populate(disk)
    box = disk.ws / "work" / "box"
    box.mkdir(parents=True)
    (box / "e.txt").write_text("state A\n")
    (box / "a.txt").write_text("moving\n")
    bait(disk.outside)
    before = outside_state(disk.outside)
    root = loaded_root(roots_config(disk), "ws")
    root._use_openat2 = use_openat2

    stop = threading.Event()
    tally: Counter[str] = Counter()
    crashes: list[str] = []
    attacker = Attacker(disk.ws / victim, disk.outside, stop)
    workers = [
        threading.Thread(target=worker, args=(root, "work/box", stop, tally, crashes))
        for _ in range(2)
    ]
    attacker.start()
    for w in workers:
        w.start()
    time.sleep(RACE_SECONDS)
    stop.set()
    for t in (attacker, *workers):
        t.join(timeout=10)

    assert not crashes, crashes[:5]
    assert outside_state(disk.outside) == before
    # The race was real: the attacker swapped many times, work got done in
    # between, and some calls met the link and were refused as escapes.
    assert attacker.swaps > 50
    for kind in ("write", "edit", "mkdir", "move", "delete"):
        assert tally[kind] > 0, str(sorted(tally.items()))
    assert tally["refused: path escapes the root"] > 0, str(sorted(tally.items()))
    # Whatever the moves did, the moving file is still inside the root, once.
    found = [p for p in disk.ws.rglob("*") if p.name in ("a.txt", "b.txt") and "box" in str(p)]
    assert len(found) == 1 and found[0].read_text() == "moving\n"


@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_creates_of_one_name_leave_exactly_one_winner(tmp_path: Path, attempt):
    disk, root = populated_ws(tmp_path)
    n = 8
    won, refused = race(n, lambda i: write_mod.write_file(root, "new/same.txt", f"writer {i}\n"))
    assert len(won) == 1, (won, refused)
    assert refused == ["'new/same.txt' already exists; pass overwrite=true to replace it"] * (n - 1)
    assert (disk.ws / "new" / "same.txt").read_text() == f"writer {won[0]}\n"
    assert not [p for p in (disk.ws / "new").iterdir() if p.name != "same.txt"]


@pytest.mark.parametrize("attempt", range(3))
def test_concurrent_moves_onto_one_name_never_overwrite(tmp_path: Path, attempt):
    disk, root = populated_ws(tmp_path)
    n = 8
    for i in range(n):
        (disk.ws / f"src{i}.txt").write_text(f"source {i}\n")
    won, refused = race(n, lambda i: move_mod.move_file(root, f"src{i}.txt", "dest.txt"))
    assert len(won) == 1, (won, refused)
    assert all("destination 'dest.txt' already exists" in m for m in refused)
    assert (disk.ws / "dest.txt").read_text() == f"source {won[0]}\n"
    # every loser still has its file: nothing was lost
    assert sorted(p.name for p in disk.ws.glob("src*.txt")) == sorted(
        f"src{i}.txt" for i in range(n) if i != won[0])
