"""Nothing is lost over any history of changes and restores.

A hypothesis `RuleBasedStateMachine` writes files (every content unique), overwrites
them, edits them, deletes files and folders, moves files over others, and restores
items of the trash in any order, refused or not, including restores of the versions
the restores themselves kept. After every step: every content ever written is still
somewhere in the root (at a path or in the trash); the trash's listing (`newest`) counts
every stamp folder and lists them newest first; and no restore left a stamp folder
empty or an item half moved (each stamp folder holds its record and one item).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from app.errors import LoomError
from app.fs.change import edit, move, trash, write
from app.fs.change.edit import TextEdit
from app.fs.change.undo import UndoRefused, newest, put_back
from tests.fs.conftest import populated_ws

TRASH = ".mcp-trash"
PATHS = ["a.txt", "b.txt", "d/c.txt", "d/e/f.txt"]
paths = st.sampled_from(PATHS)


class Undoing(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.base = Path(tempfile.mkdtemp(prefix="undo-machine-"))
        disk, self.root = populated_ws(self.base)
        self.top = disk.ws
        self.n = 0
        self.written: set[bytes] = set()
        for p in self.top.rglob("*"):
            if p.is_file() and not p.is_symlink():
                self.written.add(p.read_bytes())

    def teardown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def _text(self) -> str:
        self.n += 1
        text = f"content {self.n}\n"
        self.written.add(text.encode())
        return text

    @rule(path=paths)
    def write_file(self, path: str) -> None:
        with contextlib.suppress(LoomError):
            write.write_file(self.root, path, self._text(), overwrite=True)

    @rule(path=paths)
    def edit_file(self, path: str) -> None:
        target = self.top / path
        if not target.is_file():
            return
        old = target.read_text()
        new = old.replace("content", f"edited {self.n}", 1)
        self.n += 1
        self.written.add(new.encode())
        with contextlib.suppress(LoomError):
            edit.edit_file(self.root, path, [TextEdit(old_text=old, new_text=new)],
                           max_output_chars=1000)

    @rule(path=st.sampled_from([*PATHS, "d", "d/e"]))
    def delete(self, path: str) -> None:
        with contextlib.suppress(LoomError):
            trash.delete(self.root, path)

    @rule(src=paths, dst=paths)
    def move_over(self, src: str, dst: str) -> None:
        with contextlib.suppress(LoomError):
            move.move_file(self.root, src, dst, overwrite=True)

    @rule(pick=st.integers(min_value=0, max_value=50))
    def restore(self, pick: int) -> None:
        items = newest(self.root, 100).items
        if not items:
            return
        with contextlib.suppress(UndoRefused):
            put_back(self.root, items[pick % len(items)].id)

    @invariant()
    def nothing_written_is_lost(self) -> None:
        found: set[bytes] = set()
        for dirpath, _dirs, files in os.walk(self.top):
            for name in files:
                p = Path(dirpath) / name
                if p.is_file() and not p.is_symlink():
                    found.add(p.read_bytes())
        assert self.written <= found, sorted(self.written - found)

    @invariant()
    def every_stamp_folder_is_listed_and_whole(self) -> None:
        base = self.top / TRASH
        folders = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
        listing = newest(self.root, 10_000)
        assert listing.total == len(folders)
        assert sorted(i.stamp for i in listing.items) == sorted(p.name for p in folders)
        assert [i.stamp for i in listing.items] == sorted(
            (i.stamp for i in listing.items), key=lambda s: (s[:16], int(s[17:] or 0)),
            reverse=True)
        for folder in folders:
            names = os.listdir(folder)
            assert len(names) == 2 and TRASH in names, (folder.name, names)


def test_no_history_of_changes_and_restores_loses_a_content() -> None:
    run_state_machine_as_test(Undoing, settings=settings(
        max_examples=25, stateful_step_count=30, deadline=None, database=None))
