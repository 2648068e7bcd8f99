"""Confinement under a race: a directory inside the root keeps turning into a link out.

An attacker thread swaps `root/d` (a real directory) with `root/swap` (a
symlink to a directory outside) as fast as it can — atomically with
`renameat2(RENAME_EXCHANGE)` where libc has it, else with a rename loop —
while the main thread reads `d/f.txt` and creates `d/new-N` through the choke
point. Every read must return the inside content or be refused; no file may
appear outside. The same harness run against a naive `realpath`-then-`open`
implementation must escape at least once: that is what shows the harness can
catch an escape at all.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.errors import LoomError
from tests.security.conftest import make_root

pytestmark = pytest.mark.slow

SECURE_SECONDS = 2.0
NAIVE_SECONDS = 5.0  # an upper bound: the naive run stops at its first escape
INSIDE, SECRET = "INSIDE", "SECRET"

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _renameat2() -> Callable[[str, str], None] | None:
    """An atomic exchange of two names, or None where libc does not offer one."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

    def exchange(a: str, b: str) -> None:
        if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return exchange


@dataclass
class Arena:
    root: Path
    outside: Path
    d: Path
    swap: Path
    stop: threading.Event = field(default_factory=threading.Event)
    swaps: int = 0
    atomic: bool = True

    def attack(self) -> None:
        exchange = _renameat2()
        if exchange is not None:
            try:
                exchange(str(self.d), str(self.swap))
                exchange(str(self.d), str(self.swap))
            except OSError:
                exchange = None  # e.g. a filesystem without RENAME_EXCHANGE
        self.atomic = exchange is not None
        while not self.stop.is_set():
            try:
                if exchange is not None:
                    exchange(str(self.d), str(self.swap))
                else:
                    # Not atomic, but the windows are the same: d is a dir, then a link.
                    os.rename(self.d, self.swap.with_name("d.real"))
                    os.rename(self.swap, self.d)
                    os.rename(self.d, self.swap)
                    os.rename(self.swap.with_name("d.real"), self.d)
                self.swaps += 1
            except OSError:
                pass


@pytest.fixture
def arena(tmp_path: Path) -> Arena:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text(INSIDE)
    (outside / "f.txt").write_text(SECRET)
    os.symlink(outside, root / "swap")
    return Arena(root, outside, root / "d", root / "swap")


@dataclass
class Tally:
    reads_ok: int = 0
    writes_ok: int = 0
    refused: int = 0
    # What each refusal was: the error's class and message.
    kinds: Counter[str] = field(default_factory=Counter)
    read_escapes: int = 0
    write_escapes: int = 0


def _kind(exc: BaseException) -> str:
    if isinstance(exc, LoomError):
        return f"{type(exc).__name__}: {exc.message}"
    return type(exc).__name__


ESCAPE = "EscapesRoot: path escapes the root"
# The refusals that mean "the attacker's link was met": the link leaves the root, or it
# was swapped back between the open that met it and the readlink (then the open's own
# answer stands: ELOOP, or ENOTDIR for a link opened as a directory). `d` is never
# missing (the swap is an atomic exchange) and never a file.
LINK_MET = {
    ESCAPE,
    "SymlinkLoop: too many levels of symbolic links",
    "NotADirectory: not a directory: 'd/f.txt'",
    "NotADirectory: not a directory: 'd'",
}


def run_race(
    arena: Arena,
    read: Callable[[str], str],
    create: Callable[[str], None],
    seconds: float,
    *,
    stop_on_escape: bool = False,
) -> Tally:
    tally = Tally()
    attacker = threading.Thread(target=arena.attack, daemon=True)
    attacker.start()
    deadline = time.monotonic() + seconds
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            try:
                text = read("d/f.txt")
                if text == SECRET:
                    tally.read_escapes += 1
                else:
                    assert text == INSIDE
                    tally.reads_ok += 1
            except (LoomError, OSError) as exc:
                tally.refused += 1
                tally.kinds[_kind(exc)] += 1
            try:
                create(f"d/new-{i}")
                tally.writes_ok += 1
            except (LoomError, OSError) as exc:
                tally.refused += 1
                tally.kinds[_kind(exc)] += 1
            if i % 16 == 0:
                tally.write_escapes = sum(1 for n in os.listdir(arena.outside) if n != "f.txt")
                if stop_on_escape and (tally.read_escapes or tally.write_escapes):
                    break
    finally:
        arena.stop.set()
        attacker.join(timeout=5)
    tally.write_escapes = sum(1 for n in os.listdir(arena.outside) if n != "f.txt")
    return tally


def test_the_choke_point_never_escapes_under_a_swap_race(arena: Arena, engine: str) -> None:
    root = make_root(arena.root, engine=engine)

    def read(path: str) -> str:
        with root.open_file(path, op="read_text_file") as f:
            return os.read(f.fd, 100).decode()

    def create(path: str) -> None:
        with root.open_parent(path, op="write_file", perm="write") as p:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            os.close(os.open(p.name, flags, 0o600, dir_fd=p.fd))

    tally = run_race(arena, read, create, SECURE_SECONDS)
    assert tally.read_escapes == 0
    assert tally.write_escapes == 0
    assert (arena.outside / "f.txt").read_text() == SECRET
    # The race really ran: the attacker swapped, and calls both succeeded and were refused.
    assert arena.swaps > 100
    assert tally.reads_ok > 0 and tally.writes_ok > 0 and tally.refused > 0
    if not arena.atomic:
        return  # no atomic exchange here: `d` is sometimes missing, other refusals are right
    # Every refusal was the attacker's link being met, not a lookup that failed for some
    # other reason, and the escape itself was named at least once. How the refusals split
    # between the kinds is the scheduler's business: 94% escapes on an idle machine, 36% in
    # one CI run (the link swapped back before the readlink more often), so no share is asserted.
    assert set(tally.kinds) <= LINK_MET, tally.kinds
    assert tally.kinds[ESCAPE] > 0, tally.kinds


def test_the_harness_catches_a_naive_realpath_check(arena: Arena) -> None:
    real_root = os.path.realpath(arena.root)

    def check(path: str) -> str:
        full = os.path.realpath(os.path.join(real_root, path))
        if os.path.commonpath([full, real_root]) != real_root:
            raise PermissionError("escapes")
        return os.path.join(real_root, path)  # the check is done; the open re-resolves

    def read(path: str) -> str:
        with open(check(path)) as f:
            return f.read()

    def create(path: str) -> None:
        parent, name = os.path.split(path)
        check(parent)
        with open(os.path.join(real_root, parent, name), "x"):
            pass

    tally = run_race(arena, read, create, NAIVE_SECONDS, stop_on_escape=True)
    assert tally.read_escapes + tally.write_escapes > 0, tally
