"""The walk: breadth-first, sorted per directory, pruned before descending.

A denied name costs one (cached) match and is never opened, so a `.venv` or
`node_modules` under a root costs one name lookup, not a traversal. Symlinks
are reported but never followed (which also settles cycles). A directory that
cannot be opened is skipped and counted, never fatal. Every directory is
opened through the root handle with no link followed at any step, so a
directory swapped for a link mid-walk is skipped rather than entered.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from app.security.resolve import SecureRoot

FILE, DIR, SYMLINK, OTHER = "file", "dir", "symlink", "other"


@dataclass(slots=True)
class WalkEntry:
    parts: tuple[str, ...]  # relative to the root
    name: str
    kind: str
    depth: int  # 1 for the children of the start directory
    dir_fd: int  # the open parent directory; valid only while this entry is current
    entry: os.DirEntry[str]

    @property
    def path(self) -> str:
        return "/".join(self.parts)

    def lstat(self) -> os.stat_result:
        return self.entry.stat(follow_symlinks=False)


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return SYMLINK
        if entry.is_dir(follow_symlinks=False):
            return DIR
        if entry.is_file(follow_symlinks=False):
            return FILE
    except OSError:
        return OTHER
    return OTHER


def kind_of_mode(mode: int) -> str:
    if stat_mod.S_ISLNK(mode):
        return SYMLINK
    if stat_mod.S_ISDIR(mode):
        return DIR
    if stat_mod.S_ISREG(mode):
        return FILE
    return OTHER


class Walker:
    """One walk under a root, with the counters a result reports."""

    def __init__(self, root: SecureRoot, start: tuple[str, ...], max_depth: int | None = None):
        self.root = root
        self.start = start
        self.max_depth = max_depth
        self.skipped_links = 0
        self.unreadable_dirs = 0
        self.dirs_opened = 0
        self.examined_entries = 0

    def __iter__(self) -> Iterator[WalkEntry]:
        rules = self.root.rules
        whole_paths = rules.protects_whole_paths()
        queue: deque[tuple[tuple[str, ...], int]] = deque([(self.start, 0)])
        while queue:
            parts, depth = queue.popleft()
            try:
                fd = self.root.open_subdir(parts)
            except OSError:
                self.unreadable_dirs += 1
                continue
            self.dirs_opened += 1
            try:
                try:
                    with os.scandir(fd) as it:
                        entries = sorted(it, key=lambda e: e.name)
                except OSError:
                    self.unreadable_dirs += 1
                    continue
                for entry in entries:
                    name = entry.name
                    if rules.name(name) is not None:
                        continue
                    child = (*parts, name)
                    if whole_paths and rules.prefixes(child) is not None:
                        continue
                    self.examined_entries += 1
                    kind = _kind(entry)
                    if kind == SYMLINK:
                        self.skipped_links += 1
                    yield WalkEntry(child, name, kind, depth + 1, fd, entry)
                    if kind == DIR and (self.max_depth is None or depth + 1 < self.max_depth):
                        queue.append((child, depth + 1))
            finally:
                os.close(fd)
