"""The names in a root's trash, and what its entries take on disk.

`<root>/.mcp-trash/` holds one stamp folder per item (`<UTC stamp>[-N]`), each
with its record (`RECORD`) and the item under its own last name; beside them
`.gitignore` (`*`), `dropped.json` (what trimming removed) and `generation` (the
counter every writer bumps, `app.fs.change.ledger`). No name but a stamp's is an
item, so a file or folder a person puts there by hand is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat as stat_mod
from collections.abc import Iterator
from datetime import datetime, timezone

from app.security import ops

TRASH = ".mcp-trash"
# Each stamp folder's one-line record of what it holds (JSON: kind, path, name, op,
# client, and a version's bytes): named like the trash itself, a floor name no entry the
# agent deletes or replaces can ever have.
RECORD = TRASH
IGNORE = ".gitignore"  # `*`: the trash never shows up as untracked in a git work tree
DROPPED = "dropped.json"
GENERATION = "generation"
_GEN_FLAGS = os.O_RDWR | os.O_CREAT
_MAX_GEN = 64
STAMP = re.compile(r"^(\d{8}T\d{6}Z)(?:-\d+)?$")


def stamp_key(name: str) -> tuple[str, int] | None:
    """Sort key of a stamp folder's name (time, then `-N`), None for any other name."""
    m = STAMP.match(name)
    if m is None:
        return None
    return m.group(1), int(name[len(m.group(1)) + 1 :] or 0)


def stamp_time(name: str) -> datetime:
    return datetime.strptime(name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)


def on_disk(st: os.stat_result) -> int:
    """What an entry takes on disk: its blocks (`st_blocks` * 512), and a folder at least
    one block of its file system (some report none for a folder)."""
    taken = st.st_blocks * 512
    return max(taken, st.st_blksize) if stat_mod.S_ISDIR(st.st_mode) else taken


class Generation:
    """The trash's `generation` file, held under an exclusive `flock`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def read(self) -> int | None:
        data = os.pread(self.fd, _MAX_GEN, 0)
        text = data.decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None

    def bump(self) -> int:
        now = (self.read() or 0) + 1
        data = f"{now}\n".encode()
        os.pwrite(self.fd, data, 0)
        os.ftruncate(self.fd, len(data))
        return now


@contextlib.contextmanager
def generation_lock(trash_fd: int) -> Iterator[Generation]:
    fd = ops.open_at(trash_fd, GENERATION, _GEN_FLAGS)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield Generation(fd)
    finally:
        os.close(fd)  # releases the flock


def bump_generation(trash_fd: int) -> None:
    """For every writer outside the server: the trash changed, accounts must re-list."""
    with generation_lock(trash_fd) as gen:
        gen.bump()
