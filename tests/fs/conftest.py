"""Fixtures for the write/delete tests: three real roots and a folder outside them.

One live server per test module (starting uvicorn per test would dominate the
run time); every test gets the roots wiped and rebuilt in place, so the
server's root handles stay valid and each test starts from the same tree.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from app.errors import LoomError
from app.security import Root
from tests.kit import config_file, loaded_root, roots_toml
from tests.live import LiveServer, call, live_server

MAX_READ = 65536
MAX_OUTPUT = 8000


@dataclass
class Disk:
    """The test's directories: roots `ws` (workspace), `src` (sourcecode), `ref`
    (reference), and `outside`, which no root reaches."""

    base: Path
    ws: Path
    src: Path
    ref: Path
    outside: Path

    def snapshot(self) -> dict[str, Any]:
        """Everything under the four folders: type, mode, content or link target."""
        found: dict[str, Any] = {}
        for top in ("ws", "src", "ref", "outside"):
            start = self.base / top
            found[top] = ("dir", stat.S_IMODE(start.lstat().st_mode))
            for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
                for name in dirnames + filenames:
                    p = Path(dirpath) / name
                    rel = p.relative_to(self.base).as_posix()
                    st = p.lstat()
                    if stat.S_ISLNK(st.st_mode):
                        found[rel] = ("link", os.readlink(p))
                    elif stat.S_ISDIR(st.st_mode):
                        found[rel] = ("dir", stat.S_IMODE(st.st_mode))
                    elif stat.S_ISREG(st.st_mode):
                        found[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
                    else:
                        found[rel] = ("other", stat.S_IFMT(st.st_mode))
        return found


def populate(disk: Disk) -> None:
    for top in (disk.ws, disk.src, disk.ref, disk.outside):
        for child in top.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    ws = disk.ws
    (ws / "dir" / "sub").mkdir(parents=True)
    (ws / "notes.txt").write_text("one\ntwo\nthree\n")
    (ws / "dir" / "a.txt").write_text("alpha\n")
    (ws / "dir" / "sub" / "b.txt").write_text("beta\n")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "link_out").symlink_to(disk.outside)  # leaves the root
    (ws / "link_in").symlink_to("dir")  # stays inside
    (ws / "link_file").symlink_to("notes.txt")
    (ws / "secret_link").symlink_to(".env")
    (ws / "gitlink").symlink_to(".git")  # an in-root link into a denied folder
    os.mkfifo(ws / "fifo")
    (disk.src / "main.py").write_text("print('hello')\n")
    (disk.src / "pkg").mkdir()
    (disk.src / "pkg" / "mod.py").write_text("X = 1\n")
    (disk.ref / "doc.md").write_text("# Doc\n")
    (disk.outside / "secret.txt").write_text("outside\n")


def make_disk(base: Path) -> Disk:
    disk = Disk(base, base / "ws", base / "src", base / "ref", base / "outside")
    for p in (disk.ws, disk.src, disk.ref, disk.outside):
        p.mkdir(parents=True, exist_ok=True)
    return disk


def roots_config(disk: Disk, extra: str = "", max_read: int = MAX_READ) -> Path:
    return config_file(disk.base, roots_toml(
        ("ws", disk.ws, "workspace", {"max_read_bytes": max_read}),
        ("src", disk.src, "sourcecode"),
        ("ref", disk.ref, "reference"),
        audit_log=disk.base / "state" / "audit.log",
        extra=f'default_root = "ws"\nmax_output_chars = {MAX_OUTPUT}\n{extra}',
    ))


def populated_ws(base: Path) -> tuple[Disk, Root]:
    """A populated disk under `base` and its `ws` root as the server loads it."""
    disk = make_disk(base)
    populate(disk)
    return disk, loaded_root(roots_config(disk), "ws")


@pytest.fixture(scope="module")
def _module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Disk, LiveServer]]:
    disk = make_disk(tmp_path_factory.mktemp("wtools"))
    populate(disk)
    with live_server(roots_config(disk)) as srv:
        yield disk, srv


@pytest.fixture
def disk(_module_server: tuple[Disk, LiveServer]) -> Disk:
    """The roots, rebuilt for this test."""
    d, _ = _module_server
    populate(d)
    return d


@pytest.fixture
def server(_module_server: tuple[Disk, LiveServer], disk: Disk) -> LiveServer:
    return _module_server[1]


async def refusal(disk: Disk, via: ClientSession | LiveServer, tool: str, **args: Any) -> str:
    """The error text of a call that must be refused and leave the disk as it was."""
    before = disk.snapshot()
    is_error, text = await call(via, tool, **args)
    assert is_error, text
    assert disk.snapshot() == before
    return str(text)


# Sessions are opened inside the tests: an async-generator fixture would enter the
# SDK client's cancel scopes in one task and leave them in another.
def temp_leftovers(top: Path) -> list[str]:
    return [
        str(p.relative_to(top)) for p in top.rglob("*") if p.name.startswith(".mcp-tmp-")
    ]


@contextlib.contextmanager
def umask(value: int) -> Iterator[int]:
    old = os.umask(value)
    try:
        yield value
    finally:
        os.umask(old)


def race(n: int, action: Callable[[int], object]) -> tuple[list[int], list[str]]:
    """action(i) in n threads released together by a barrier: (winners, refusal texts)."""
    barrier = threading.Barrier(n)
    won: list[int] = []
    refused: list[str] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            action(i)
            won.append(i)
        except LoomError as exc:
            refused.append(exc.message)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return won, refused


class Cancelled(Exception):
    pass


class CancelAfter:
    """A call's control whose client goes away after `n` checks."""

    def __init__(self, n: int) -> None:
        self.left = n

    def check(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise Cancelled()

    def progress(self, *a: Any) -> None:
        pass


@pytest.fixture
def audited(tmp_path: Path) -> tuple[Path, Root, list[tuple[str, str, str]]]:
    """A workspace root holding `f.txt`, and the (decision, path, op) of each audit line."""
    from tests.security.conftest import make_root

    top = tmp_path / "r"
    top.mkdir()
    (top / "f.txt").write_text("F")
    lines: list[tuple[str, str, str]] = []
    root = make_root(top, audit=lambda decision, _root, rel, op, _rule: lines.append(
        (decision, rel, op)))
    return top, root, lines
