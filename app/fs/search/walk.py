"""The walk both searches take: the start folder, the filters that prune it, the names shown.

Breadth-first from `path`, opened through the choke point (`SecureRoot.open_dir`): denied
names pruned before descending, links never followed (`app.security.walk`); `exclude` globs
and, unless `no_ignore`, ignore files prune too (`app.fs.filters.ignore`). Walk paths are
the resolved ones; `name_of` spells them as the request did, for the page.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from typing import NamedTuple

from app.fs.filters.glob import Glob
from app.fs.filters.ignore import Filter
from app.fs.reading.listing import relabel
from app.fs.search.options import WalkOptions
from app.security.resolve import SecureRoot
from app.security.walk import Walker


class Walk(NamedTuple):
    walker: Walker
    filt: Filter
    name_of: Callable[[str], str]  # a walk path as the caller shows it
    strip: int  # characters of the start folder's path before a glob's relative path


def open_walk(root: SecureRoot, opts: WalkOptions, op: str) -> Walk:
    with root.open_dir(opts.path, op=op) as d:
        start, shown = d.parts, d.rel
    filt = Filter(root, start, opts.exclude, opts.no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    return Walk(walker, filt, relabel(start, shown), len("/".join(start)) + 1 if start else 0)


def candidates(walk: Walk, glob: Glob, after: tuple[tuple[str, ...], bool] | None = None
               ) -> Generator[tuple[int, str, list[str]], None, None]:
    """Each folder in walk order with the regular files in it that `glob` keeps: (its
    descriptor, its walk path prefix, their names; maybe none). With `after` (a file's
    parts, and whether that file is searched again), no file before it in the walk is
    named: the folders before its folder are listed (the walk finds the ones below them
    there) and their files passed over unread."""
    everything = glob.basename and glob.pattern in ("*", "**")
    matches, strip = glob.matches, walk.strip
    for d in walk.walker.dirs():
        prefix = d.prefix
        if after is not None:  # breadth-first, names sorted: folders by depth, then path
            mine, theirs = (len(d.parts), d.parts), (len(after[0]) - 1, after[0][:-1])
            if mine < theirs:
                continue  # a folder before the cursor's: no file in it is searched
            if mine > theirs:
                after = None  # past the cursor's folder: every file from here on
        try:
            names = [e.name for e in d.entries if e.is_file(follow_symlinks=False)]
        except OSError:  # an entry of unknown type gone before its lstat: one by one
            names = [e.name for e in d.entries if _regular(e)]
        if not everything:
            names = [n for n in names if matches((prefix + n)[strip:], n)]
        if after is not None:  # the cursor's folder: from its file on
            last, again = after[0][-1], after[1]
            names = [n for n in names if n > last or (again and n == last)]
            after = None
        yield d.fd, prefix, names


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False
