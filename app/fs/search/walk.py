"""The walk both searches take: the start folder, the filters that prune it, the names shown.

Breadth-first from `path`, opened through the choke point (`Root.open_dir`): denied
names pruned before descending, links never followed (`app.security.walk`); `exclude` globs
and, unless `no_ignore`, ignore files prune too (`app.fs.filters.ignore`). Walk paths are
the resolved ones; `name_of` spells them as the request did, for the page.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator
from typing import NamedTuple

from app.fs.filters.glob import Glob
from app.fs.filters.ignore import Filter
from app.fs.reading.listing import relabel
from app.fs.search.options import WalkOptions
from app.security.admission import Folder
from app.security.resolve import Root
from app.security.walk import WalkDir, Walker


class Walk(NamedTuple):
    walker: Walker
    filt: Filter
    name_of: Callable[[str], str]  # a walk path as the caller shows it
    strip: int  # characters of the start folder's path before a glob's relative path


def open_walk(root: Root, opts: WalkOptions, op: str) -> Walk:
    with root.open_dir(opts.path, op=op) as d:
        start, shown = d.parts, d.rel
    filt = Filter(root, start, opts.exclude, opts.no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    return Walk(walker, filt, relabel(start, shown), len("/".join(start)) + 1 if start else 0)


def resumed(walker: Walker, after: tuple[tuple[str, ...], bool] | None
            ) -> Generator[tuple[WalkDir, list[os.DirEntry[str]]], None, None]:
    """Each folder in walk order with its entries; with `after` (a walk path's parts, and
    whether that entry is given again), only the entries after it: the folders before
    its folder are listed (the walk finds the ones below them there) and passed over,
    and in its folder the entries from it on are kept. Both searches resume here."""
    for d in walker.dirs():
        entries = d.entries
        if after is not None:  # breadth-first, names sorted: folders by depth, then path
            mine, theirs = (len(d.parts), d.parts), (len(after[0]) - 1, after[0][:-1])
            if mine < theirs:
                continue  # a folder before the cursor's: none of its entries
            if mine == theirs:  # the cursor's folder: from its entry on
                last, again = after[0][-1], after[1]
                entries = [e for e in entries if e.name > last or (again and e.name == last)]
            after = None  # past the cursor's folder: every entry from here on
        yield d, entries


def candidates(walk: Walk, glob: Glob, after: tuple[tuple[str, ...], bool] | None = None
               ) -> Generator[Folder, None, None]:
    """Each folder in walk order with the regular files in it that `glob` keeps: (its
    descriptor, its walk path prefix, their names; maybe none). With `after` (a file's
    parts, and whether that file is searched again), no file before it in the walk is
    named (`resumed`): their folders are listed, their files passed over unread."""
    everything = glob.basename and glob.pattern in ("*", "**")
    matches, strip = glob.matches, walk.strip
    with contextlib.closing(resumed(walk.walker, after)) as dirs:
        for d, entries in dirs:
            prefix = d.prefix
            try:
                names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
            except OSError:  # an entry of unknown type gone before its lstat: one by one
                names = [e.name for e in entries if _regular(e)]
            if not everything:
                names = [n for n in names if matches((prefix + n)[strip:], n)]
            yield Folder(d.fd, prefix, names)


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False
