"""What every match of a call holds, for an index that narrows its files (`text.Narrow`).

`needs_of` answers a few strings one of which every match contains (in some case, when
`fold`): the query itself for a literal, else the literal or the alternatives `required.py`
finds in a regex; None when there is none (the call scans every file). An index given these
proposes the files that may hold one; the searcher still reads and matches each of them,
so an index can cost speed, never a match it did not propose and the file did not hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from app.fs.filters.glob import Glob
from app.fs.search.options import TextOptions
from app.fs.search.required import required_alternatives, required_literal
from app.fs.search.walk import Walk
from app.security.admission import Folder


class Needs(NamedTuple):
    strings: tuple[str, ...]  # every match holds one of these
    fold: bool  # ... in some case (Unicode's folding)


class Narrowed(NamedTuple):
    folders: Iterable[Folder]  # the candidate files, folder by folder, in walk order
    note: Callable[[], str | None]  # what the index did, once the folders are used up


# (what matches hold, the call's walk, its file glob, the walk's folders, whether the call
# resumes by a cursor: then the index may only filter those folders, which start after the
# cursor) -> the files to search, or None: the index cannot narrow this call; all are scanned.
Narrow = Callable[[Needs, Walk, Glob, Iterator[Folder], bool], Narrowed | None]


def needs_of(opts: TextOptions) -> Needs | None:
    query, fold = opts.query, not opts.case_sensitive
    if not opts.regex:
        return Needs((query,), fold)
    lit = required_literal(query)
    if lit is not None:
        return Needs((lit[0],), fold or lit[1])
    alternatives = required_alternatives(query)
    if alternatives is not None:
        return Needs(tuple(alternatives), fold)
    return None
