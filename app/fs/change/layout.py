"""The names in a root's trash, and what its entries take on disk.

`<root>/.mcp-trash/` holds one stamp folder per item (`<UTC stamp>[-N]`), each
with its record (`RECORD`) and the item under its own last name; beside them
`.gitignore` (`*`), `dropped.json` (what trimming removed) and `generation` (the
counter every writer bumps, `app.fs.change.ledger`). No name but a stamp's is an
item, so a file or folder a person puts there by hand is left alone.
"""

from __future__ import annotations

import os
import re
import stat as stat_mod
from datetime import datetime, timezone

TRASH = ".mcp-trash"
# Each stamp folder's one-line record of what it holds (JSON: kind, path, name, op,
# client, and a version's bytes): named like the trash itself, a floor name no entry the
# agent deletes or replaces can ever have.
RECORD = TRASH
IGNORE = ".gitignore"  # `*`: the trash never shows up as untracked in a git work tree
DROPPED = "dropped.json"
GENERATION = "generation"
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
