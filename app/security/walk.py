"""The walk: breadth-first, sorted per directory, pruned before descending.

A denied name costs one (cached) match and is never opened, so a `.venv` or
`node_modules` under a root costs one name lookup, not a traversal. Symlinks
are reported but never followed (which also settles cycles). A directory that
cannot be opened is skipped and counted, never fatal.

Every directory is opened with `O_NOFOLLOW|O_DIRECTORY`: from its parent's
handle, which the walk opened the same way and keeps until the parent's last
subdirectory is open (at most `MAX_HELD` of them, so a wide tree cannot
exhaust descriptors), or else from the root handle with no link followed at any
step (`Root.open_subdir`). A directory swapped for a link mid-walk is
therefore skipped, never entered. Limit (the one `resolve` states): a
directory moved *out* of the root while the walk holds its handle is listed
where it went; the walk never climbs out of it, since it never follows `..`
or a link.

The loop is the hot path of every search, so it comes in two shapes.
`Walker.dirs()` yields one `WalkDir` per directory: its visible entries as
sorted `os.DirEntry` objects, with no Python object built per entry; a search
that matches names should use it (`benchmarks/walk.py` holds it to within 2x
of a bare `os.scandir` walk). Iterating the `Walker` itself yields one
`WalkEntry` per entry (kind and relative path worked out), which is what
listings want and costs about a third more.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections import deque
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import NamedTuple

from app.security import admission
from app.security.handles import Descent
from app.security.resolve import DIR_FLAGS, Root

FILE, DIR, SYMLINK, OTHER = "file", "dir", "symlink", "other"
MAX_HELD = 32  # parent handles one walk keeps open for their subdirectories

_by_name = attrgetter("name")
_new_entry = tuple.__new__


class WalkDir(NamedTuple):
    """One listed directory and its visible entries."""

    parts: tuple[str, ...]  # relative to the root
    prefix: str  # "" or "a/b/": an entry's relative path is `prefix + entry.name`
    depth: int  # of its entries: 1 for the children of the start directory
    fd: int  # the open directory; valid only while this batch is current
    entries: list[os.DirEntry[str]]  # not denied, sorted by name; see `kind_of_entry`


class WalkEntry(NamedTuple):
    """One entry found by the walk (built with `tuple.__new__`: no Python-level init)."""

    parent: tuple[str, ...]  # the directory holding it, relative to the root
    name: str
    path: str  # `/`-separated, relative to the root
    kind: str  # file | dir | symlink | other
    depth: int  # 1 for the children of the start directory
    dir_fd: int  # the open parent directory; valid only while this entry is current
    entry: os.DirEntry[str]

    @property
    def parts(self) -> tuple[str, ...]:
        """The entry's path relative to the root, by component."""
        return (*self.parent, self.name)

    def lstat(self) -> os.stat_result:
        return self.entry.stat(follow_symlinks=False)


def kind_of_entry(entry: os.DirEntry[str]) -> str:
    # d_type answers these without a system call; lstat only where the filesystem has none.
    try:
        if entry.is_dir(follow_symlinks=False):
            return DIR
        if entry.is_file(follow_symlinks=False):
            return FILE
        if entry.is_symlink():
            return SYMLINK
    except OSError:
        pass
    return OTHER


def kind_of_mode(mode: int) -> str:
    if stat_mod.S_ISLNK(mode):
        return SYMLINK
    if stat_mod.S_ISDIR(mode):
        return DIR
    if stat_mod.S_ISREG(mode):
        return FILE
    return OTHER


# A filter of a listed directory's visible entries (parts, open fd, sorted entries), run
# before its subdirectories are queued: what it drops is neither yielded nor entered.
Keep = Callable[[tuple[str, ...], int, list[os.DirEntry[str]]], list[os.DirEntry[str]]]


class _Held:
    """A listed directory's handle, kept until its queued subdirectories are open."""

    __slots__ = ("fd", "waiting")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.waiting = 0


class Walker:
    """One walk under a root, with the counters a result reports.

    `examined_entries` counts the visible (not denied) entries of every
    directory listed so far, `dirs_opened` the directories actually opened,
    `skipped_links` the symlinks among the visible entries: a pruned name is
    in none of them. With `count_hidden`, `hidden_entries` counts the entries
    of listed directories that the rules hide (a denied name, a whole-path
    rule, the server's own files), never naming them.
    """

    def __init__(self, root: Root, start: tuple[str, ...], max_depth: int | None = None,
                 keep: Keep | None = None, count_hidden: bool = False):
        self.root = root
        self.count_hidden = count_hidden
        self.start = start
        self.max_depth = max_depth
        self.keep = keep
        self.skipped_links = 0
        self.unreadable_dirs = 0
        self.dirs_opened = 0
        self.examined_entries = 0
        self.hidden_entries = 0

    def __iter__(self) -> Iterator[WalkEntry]:
        for d in self.dirs():
            parts, prefix, depth, fd = d.parts, d.prefix, d.depth, d.fd
            for entry in d.entries:
                name = entry.name
                yield _new_entry(
                    WalkEntry, (parts, name, prefix + name, kind_of_entry(entry), depth, fd, entry)
                )

    def dirs(self) -> Iterator[WalkDir]:
        """One batch per directory, breadth-first; subdirectories already queued."""
        held: set[_Held] = set()
        try:
            yield from self._dirs(held)
        finally:
            # The consumer may stop early (a limit, a cancelled call): release every handle.
            for h in held:
                os.close(h.fd)

    def _dirs(self, held: set[_Held]) -> Iterator[WalkDir]:
        rules = self.root.rules
        open_subdir = self.root.open_subdir
        max_depth = self.max_depth
        keep = self.keep
        count_hidden = self.count_hidden
        queue: deque[tuple[tuple[str, ...], int, _Held | None]] = deque([(self.start, 0, None)])
        while queue:
            parts, depth, parent = queue.popleft()
            fd = self._open(parts, parent, held, open_subdir)
            if fd < 0:
                continue
            mine = _Held(fd) if len(held) < MAX_HELD else None
            try:
                try:
                    with os.scandir(fd) as it:
                        if count_hidden:
                            every = list(it)
                            entries = admission.listed(rules, parts, fd, every)
                            self.hidden_entries += len(every) - len(entries)
                        else:  # the hot path of every search: no list of its own
                            entries = admission.listed(rules, parts, fd, it)
                except OSError:
                    self.unreadable_dirs += 1
                    continue
                entries.sort(key=_by_name)
                self.examined_entries += len(entries)
                if keep is not None:
                    entries = keep(parts, fd, entries)
                depth += 1
                descend = max_depth is None or depth < max_depth
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if descend:
                                queue.append(((*parts, entry.name), depth, mine))
                                if mine is not None:
                                    mine.waiting += 1
                        elif entry.is_symlink():
                            self.skipped_links += 1
                    except OSError:
                        pass
                prefix = "/".join(parts) + "/" if parts else ""
                yield _new_entry(WalkDir, (parts, prefix, depth, fd, entries))
            finally:
                if mine is not None and mine.waiting:
                    held.add(mine)  # closed once its last subdirectory is open
                else:
                    os.close(fd)


    def _open(self, parts: tuple[str, ...], parent: _Held | None, held: set[_Held],
              open_subdir: Callable[[tuple[str, ...]], int]) -> int:
        """A queued directory, from its parent's handle (which stays open until its last
        subdirectory is) or else from the root's; -1, counted, when it cannot be opened."""
        try:
            if parent is None:
                fd = open_subdir(parts)
            else:
                try:
                    fd = os.open(parts[-1], DIR_FLAGS, dir_fd=parent.fd)
                finally:
                    parent.waiting -= 1
                    if not parent.waiting:
                        held.discard(parent)
                        os.close(parent.fd)
        except OSError:
            self.unreadable_dirs += 1
            return -1
        self.dirs_opened += 1
        return fd


class TooManyEntries(Exception):
    """`deeper_than` looked at more entries than it was allowed to."""


def _no_check() -> None:
    return None


def deeper_than(
    top: int, levels: int, *, max_entries: int, check: Callable[[], None] = _no_check
) -> bool:
    """Whether any entry below the folder `top` lies more than `levels` levels below it
    (its children are 1 level below). Every entry counts, denied or not: a move carries
    hidden entries too.

    Depth first, one handle per level carried down (`Descent`: each folder opened once,
    from its parent's handle, no link followed), and it stops at the first entry past
    `levels`: at most `levels` + 1 handles held and no folder deeper than `levels`
    opened. `check` runs before each folder is listed. OSError when a folder cannot be
    opened or listed (the caller refuses: not having looked is not having found nothing);
    `TooManyEntries` past `max_entries` entries."""
    seen = 0
    todo: list[list[str]] = []  # per level, the subfolders still to enter
    with Descent(top) as path:
        while True:
            check()
            with os.scandir(path.fd) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            seen += len(entries)
            if seen > max_entries:
                raise TooManyEntries()
            if entries and path.depth + 1 > levels:
                return True
            todo.append([name for name, is_dir in entries if is_dir])
            while todo and not todo[-1]:
                todo.pop()
                if todo:
                    path.leave()
            if not todo:
                return False
            path.enter(todo[-1].pop())
