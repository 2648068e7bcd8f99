"""`search_files`: the names under `path` that a glob matches, one page at a time.

The walk (`walk.py`) is taken in batches per folder: no Python object per entry until a
name matches. Matches are collected in walk order, so a page is stable: the same call with
`next_offset` continues exactly where the last one stopped. A call stops once it has one
match more than its page needs (that is `has_more`), so a page deep in the results by
`offset` costs the walk and the match up to it. `next_cursor` names that one more match
(`cursor.py`): a call given it matches no entry before it (`walk.resumed`; the folders
before are still listed, to find the ones below them).
"""

from __future__ import annotations

import contextlib
import os

from app.fs.control import Control
from app.fs.filters.glob import compile_glob
from app.fs.reading.listing import unreadable_note
from app.fs.search import cursor
from app.fs.search.options import FilesOptions
from app.fs.search.results import SearchFilesResult, page_fields
from app.fs.search.walk import open_walk, resumed
from app.fs.text.paging import fit_page, page_note
from app.security import ops
from app.security.resolve import Root
from app.security.walk import FILE, kind_of_entry


def search_files(root: Root, opts: FilesOptions, control: Control) -> SearchFilesResult:
    glob = compile_glob(opts.pattern)
    resume = cursor.decode(opts.cursor, root.name, opts) if opts.cursor else None
    walker, filt, name_of, strip = open_walk(root, opts, "search_files")
    basename, match_name, full = glob.basename, glob.match_name, glob.match_path
    limit, start = opts.limit, walker.start
    # From a cursor: the walk from its entry on, and nothing passed over (offset: found).
    after = ((*start, *resume.rel), resume.shown == 0) if resume is not None else None
    offset, skip = (resume.before, 0) if resume is not None else (opts.offset, opts.offset)
    page: list[dict[str, object]] = []
    walked: list[str] = []  # the walk path of each item of the page, and of one more
    found = 0
    with contextlib.closing(resumed(walker, after)) as dirs:  # folders closed at once
        for d, entries in dirs:
            control.check()
            prefix = d.prefix
            for entry in entries:
                name = entry.name
                if not (match_name(name) if basename else full((prefix + name)[strip:])):
                    continue
                if found >= skip:
                    path = prefix + name
                    walked.append(path)
                    if len(page) == limit:
                        break
                    page.append(_file_match(entry, d.fd, name_of(path)))
                found += 1
            if len(walked) > limit:
                break
    more = len(walked) > limit

    def make(n: int) -> SearchFilesResult:
        cut = n < len(page)
        nxt = (tuple(walked[n].split("/"))[len(start):], 0) if n < len(walked) else None
        return SearchFilesResult(
            matches=page[:n], truncated=False, examined_entries=walker.examined_entries,  # type: ignore[arg-type]
            skipped_links=walker.skipped_links,
            next_cursor=cursor.following(nxt, offset + n, resume, start, root.name, opts),
            **page_fields(offset, limit, n, more or cut,
                          [page_note(n, offset, cut, opts.cap), unreadable_note(walker),
                           filt.note()]),
        )

    return fit_page(make, page, opts.cap)[0]


def _file_match(entry: os.DirEntry[str], dir_fd: int, path: str) -> dict[str, object]:
    kind = kind_of_entry(entry)
    size = None
    if kind == FILE:
        # os.stat by dir_fd: measured faster than DirEntry.stat, same system call.
        with contextlib.suppress(OSError):  # gone since the directory was read
            size = ops.lstat(dir_fd, entry.name).st_size
    return {"path": path, "type": kind, "size": size}
