"""The Nth change costs what the first did: no work that grows with the root's history.

A hypothesis `RuleBasedStateMachine` drives the fs functions the tools call
(write_file, create_directory, copy_file, move_file, delete) on a workspace root,
as an agent would over a long session: a chain of folders built one level deeper at
a time, files written at its bottom, one file overwritten again and again (each
overwrite keeps a version in the trash), copies over it, the chain's top moved
back and forth and copied. Each call's work is *counted*, never timed: the
descriptors it opens and the folder entries it reads (`os.open`, `openat2`,
`os.scandir`, `os.listdir`, wrapped for the length of the call), and apart from those, the trash
entries it lists (`inventory.stamps`).

Each session starts with one call of each kind on a fresh root and a chain of two
levels, then builds the chain to a drawn depth (up to `MAX_CHAIN`) before the
rules run. The invariants hold every later call to that first one of its kind, by
the work per unit of what it was asked to do (a path's components, a chain's
folders): within `FACTOR` of it, plus `SLACK` for fixed costs. Work that grows
with history (the versions kept, the folders made before) or with the square of
the depth breaks them (an extra depth-squared loop of opens put into any one of
the moves, copies, creates or writes at depth was caught in every trial).
After every step the trash's real use is measured as `du` would (blocks * 512 and
inodes, each inode once, the trash's own files included) and held to the root's
caps (`TRASH_MAX_BYTES`, `TRASH_MAX_ITEMS`, small enough that the loops trim): what
kept versions take, deletes apart (a delete is never dropped, so it is not capped).
One run of the machine (and one fixed long session, so that the deepest cases are
always measured) records every call over its bound; each invariant is then one
test over that record.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from app.errors import LoomError
from app.fs.change import copy, inventory, move, trash, write
from app.fs.change.layout import RECORD
from app.fs.change.layout import TRASH as TRASH_DIR
from app.registry import Registry
from app.security import openat2
from tests.kit import roots_toml

IO, TRASH = 0, 1  # the two measures of a call: opens and entries read per unit, trash listed
FACTOR = 3  # the Nth call's work per unit may be this many times the first's ...
SLACK = (4, 8)  # ... plus this much (IO per unit, TRASH entries): fixed costs
MAX_CHAIN = 40  # below the server's depth bound (64): every level is a legal path
LEVELS = 10  # one rule call makes the chain this many levels deeper
OVERWRITES = 30  # one rule call overwrites in a loop: enough versions to show a slope
# Calls that replace a file, so keep its version in the trash; and calls that do not.
KEEPING = ("overwrite", "copy over", "write over at depth")
OTHERS = ("create at depth", "write new at depth", "copy new", "move chain", "delete")
CHAIN_COPY = ("copy chain",)
TRASH_MAX_BYTES = 160 * 1024  # a kept version takes 3 inodes (folder, record, file): ~12 KiB
TRASH_MAX_ITEMS = 12


class Counter:
    """Work done since `start`: descriptors opened, entries read, trash entries listed."""

    def __init__(self) -> None:
        self.io = 0
        self.trash = 0

    @contextmanager
    def wrapped(self) -> Iterator[None]:
        real_open, real_scandir, real_listdir = os.open, os.scandir, os.listdir
        real_stamps, real_openat2 = inventory.stamps, openat2._call
        counter = self

        def counted_openat2(*a: Any, **k: Any) -> int:
            counter.io += 1
            return real_openat2(*a, **k)

        def counted_open(*a: Any, **k: Any) -> int:
            counter.io += 1
            return real_open(*a, **k)

        class CountedScandir:
            def __init__(self, *a: Any) -> None:
                counter.io += 1
                self._it = real_scandir(*a)

            def __enter__(self) -> CountedScandir:
                return self

            def __exit__(self, *exc: Any) -> None:
                self._it.close()

            def close(self) -> None:
                self._it.close()

            def __iter__(self) -> Iterator[os.DirEntry[Any]]:
                for entry in self._it:
                    counter.io += 1
                    yield entry

        def counted_listdir(*a: Any) -> list[Any]:
            names = real_listdir(*a)
            counter.io += 1 + len(names)
            return names

        def counted_stamps(fd: int) -> list[str]:
            names = real_stamps(fd)
            counter.trash += len(names)
            return names

        with pytest.MonkeyPatch.context() as mp:
            for owner, name, fn in ((os, "open", counted_open), (os, "scandir", CountedScandir),
                                    (os, "listdir", counted_listdir),
                                    (inventory, "stamps", counted_stamps),
                                    (openat2, "_call", counted_openat2)):
                mp.setattr(owner, name, fn)
            yield


class Bounds(RuleBasedStateMachine):

    @initialize(start=st.integers(1, MAX_CHAIN))
    def setup(self, start: int) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="loom-bounds-"))
        ws = self.tmp / "ws"
        ws.mkdir()
        cfg = self.tmp / "loom.toml"
        caps = {"trash_max_bytes": TRASH_MAX_BYTES, "trash_max_items": TRASH_MAX_ITEMS}
        cfg.write_text(roots_toml(("ws", ws, "workspace", caps),
                                  audit_log=self.tmp / "state" / "audit.log"))
        self.root = Registry(str(cfg), audit=False).current.root("ws")
        self.depth = 1
        write.create_directory(self.root, "c")
        write.write_file(self.root, "notes.txt", "version 0\n")  # each overwrite replaces it
        self.moved = False  # the chain's top is at `c` (False) or `m` (True)
        # kind -> [(work per unit, trash entries listed)], in call order
        self.seen: dict[str, list[tuple[float, int]]] = defaultdict(list)
        # The first call of each kind, on a fresh root and a chain of one or two levels: what
        # every later one is held to. Then the chain is built to where this session starts.
        self.deeper()
        for step in (self.write_bottom, self.write_bottom, self.overwrite, self.copy_over,
                     self.copy_over, self.delete_copy, self.move_chain, self.move_chain,
                     self.copy_chain):
            step()
        while self.depth < start:
            self.deeper()

    def chain(self, depth: int | None = None) -> str:
        top = "m" if self.moved else "c"
        return "/".join([top, *["d"] * ((depth or self.depth) - 1)])

    def exists(self, path: str) -> bool:
        return (self.tmp / "ws" / path).exists()

    def measured(self, kind: str, units: int, fn: Callable[[], Any]) -> None:
        c = Counter()
        with c.wrapped():
            try:
                fn()
            except LoomError:
                return  # refused: not a change to compare
        self.seen[kind].append((c.io / max(1, units), c.trash))

    # -- what an agent does, one call each ---------------------------------------

    def deeper(self) -> None:
        if self.depth < MAX_CHAIN:
            self.depth += 1
            self.measured("create at depth", self.depth,
                          partial(write.create_directory, self.root, self.chain()))

    def write_bottom(self, content: str = "a\n") -> None:
        path = f"{self.chain()}/f.txt"
        how = "over" if self.exists(path) else "new"
        self.measured(f"write {how} at depth", self.depth + 1,
                      partial(write.write_file, self.root, path, content, overwrite=True))

    def overwrite(self, i: int = 0) -> None:
        self.measured("overwrite", 1, partial(
            write.write_file, self.root, "notes.txt", f"version {i}\n", overwrite=True))

    def copy_over(self) -> None:
        how = "over" if self.exists("copy.txt") else "new"
        self.measured(f"copy {how}", 1, partial(
            copy.copy_file, self.root, "notes.txt", self.root, "copy.txt", overwrite=True))

    def delete_copy(self) -> None:
        if self.exists("copy.txt"):
            self.measured("delete", 1, partial(trash.delete, self.root, "copy.txt"))

    def move_chain(self) -> None:
        src, dst = ("m", "c") if self.moved else ("c", "m")

        def go() -> None:
            move.move_file(self.root, src, dst)
            self.moved = not self.moved

        self.measured("move chain", self.depth, go)

    def copy_chain(self) -> None:
        shutil.rmtree(self.tmp / "ws" / "chain-copy", ignore_errors=True)
        self.measured("copy chain", self.depth,
                      partial(copy.copy_file, self.root, self.chain(1), self.root, "chain-copy"))

    # -- the rules: an agent's session ----------------------------------------------

    @rule()
    def deepen(self) -> None:
        for _ in range(LEVELS):
            self.deeper()

    @rule(content=st.text(alphabet="ab\n", max_size=20))
    def write_at_the_bottom(self, content: str) -> None:
        self.write_bottom(content)

    @rule()
    def overwrite_in_a_loop(self) -> None:
        for i in range(OVERWRITES):
            self.overwrite(i)

    @rule()
    def copy_over_a_file(self) -> None:
        self.copy_over()

    @rule()
    def move_the_chain(self) -> None:
        self.move_chain()

    @rule()
    def copy_the_chain(self) -> None:
        self.copy_chain()

    @rule()
    def delete_a_copy(self) -> None:
        self.delete_copy()

    # -- after every step ----------------------------------------------------------

    @invariant()
    def the_trash_takes_no_more_than_its_caps(self) -> None:
        if not hasattr(self, "tmp"):
            return
        taken, versions = trash_use(self.tmp / "ws" / TRASH_DIR)
        if taken > TRASH_MAX_BYTES or versions > TRASH_MAX_ITEMS:
            FOUND["trash-within-its-caps"].append(
                f"{versions} versions taking {taken} bytes on disk (caps {TRASH_MAX_ITEMS}, "
                f"{TRASH_MAX_BYTES})")

    # -- over the whole run ------------------------------------------------------

    def teardown(self) -> None:
        for name, (measures, kinds) in INVARIANTS.items():
            FOUND[name].extend(violations(getattr(self, "seen", {}), measures, kinds))
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)


def trash_use(top: Path) -> tuple[int, int]:
    """(bytes on disk, versions) of the trash, its deleted items left out: blocks * 512
    of every inode once, the trash's own files and folders included."""
    if not top.exists():
        return 0, 0
    deleted: set[Path] = set()
    versions = 0
    for stamp in top.iterdir():
        record = stamp / RECORD
        if stamp.is_dir() and record.is_file():
            if json.loads(record.read_text()).get("kind") == "delete":
                deleted.add(stamp)
            else:
                versions += 1
    seen: set[int] = set()
    blocks = 0
    for here, dirs, files in os.walk(top):
        if Path(here) in deleted:
            dirs.clear()
            continue
        for path in (here, *(os.path.join(here, n) for n in files)):
            st = os.lstat(path)
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                blocks += st.st_blocks * 512
    return blocks, versions


def violations(seen: dict[str, list[tuple[float, int]]], measures: tuple[int, ...],
               kinds: tuple[str, ...]) -> Iterator[str]:
    """Each call of these kinds that did more than `FACTOR` times the first's work, plus slack."""
    for kind in kinds:
        calls = seen.get(kind, [])
        for n, call in enumerate(calls):
            for m in measures:
                now, first = call[m], calls[0][m]
                if now > FACTOR * first + SLACK[m]:
                    what = ("opens and entries read per unit", "trash entries listed")[m]
                    yield f"{kind} #{n + 1}: {now:.1f} {what}, the first {first:.1f}"


INVARIANTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "trash-listed-by-replacing-changes": ((TRASH,), KEEPING),
    "work-of-replacing-changes": ((IO,), KEEPING),
    "work-of-copying-a-deep-folder": ((IO,), CHAIN_COPY),
    "trash-listed-by-copying-a-deep-folder": ((TRASH,), CHAIN_COPY),
    "work-of-depth-moves-creates-deletes": ((IO,), OTHERS),
    "trash-listed-by-depth-moves-creates-deletes": ((TRASH,), OTHERS),
}
FOUND: dict[str, list[str]] = defaultdict(list)
RUN = settings(max_examples=6, stateful_step_count=15, deadline=None, database=None,
               suppress_health_check=[HealthCheck.too_slow],
               phases=[Phase.explicit, Phase.reuse, Phase.generate])  # nothing fails in the run


@pytest.fixture(scope="module")
def run() -> dict[str, list[str]]:
    """The violations of every invariant over one hypothesis run of sessions, and over one
    fixed long session (a chain as deep as it goes, then each rule in turn): whatever the
    draws, the deep cases are measured."""
    FOUND.clear()
    run_state_machine_as_test(Bounds, settings=RUN)
    fixed = Bounds()
    fixed.setup(MAX_CHAIN)
    for step in (fixed.overwrite_in_a_loop, fixed.copy_over_a_file, fixed.copy_the_chain,
                 fixed.move_the_chain, fixed.delete_a_copy, fixed.deepen):
        step()
    fixed.write_at_the_bottom("b\n")
    fixed.teardown()
    return dict(FOUND)


def test_the_trash_stays_within_its_caps_after_every_step(run: dict[str, list[str]]) -> None:
    broken = run.get("trash-within-its-caps", [])
    assert not broken, f"{len(broken)} steps over the caps, first: {broken[:3]}"


@pytest.mark.parametrize("invariant", [
    "trash-listed-by-replacing-changes",
    "work-of-replacing-changes",
    "work-of-copying-a-deep-folder",
    "trash-listed-by-copying-a-deep-folder",
    "work-of-depth-moves-creates-deletes",
    "trash-listed-by-depth-moves-creates-deletes",
])
def test_the_nth_call_costs_what_the_first_did(run: dict[str, list[str]], invariant: str) -> None:
    broken = run.get(invariant, [])
    assert not broken, f"{len(broken)} calls over the bound, first: {broken[:3]}"
