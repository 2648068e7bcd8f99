"""`search_text`: the lines under `path` that match a query, one page at a time.

The call's pieces are built once from its options: the matcher (`matcher_for`: a literal,
a literal without case, or a regex), the walk (`walk.py`, pruned by the filters, with the
files `file_glob` keeps), the sink that collects what is found (`sink.py`); the searcher
(`searcher.py`) then reads each candidate file once, within the call's budgets, until the
page is full. A search that ran out of a budget says so (`truncated`, and a note naming the
first file not examined and how to narrow). `output_mode` picks what a page lists: matching
lines (with `context` lines around them), files with a match, or counts of matching lines
per file; the three page alike, in walk order.
"""

from __future__ import annotations

import contextlib

from app.fs.control import Control
from app.fs.filters.glob import compile_glob
from app.fs.reading.listing import unreadable_note
from app.fs.search import cursor
from app.fs.search.literal import LiteralMatcher
from app.fs.search.matcher import Matcher
from app.fs.search.needs import Narrow, Narrowed, needs_of
from app.fs.search.options import CONTENT, COUNT, FILES, TextOptions
from app.fs.search.regex import RegexMatcher
from app.fs.search.results import SearchTextResult, page_fields
from app.fs.search.searcher import Searcher
from app.fs.search.sink import Sink
from app.fs.search.walk import Walk, candidates, open_walk
from app.fs.text.paging import fit_page, page_note
from app.security.resolve import Root


def matcher_for(opts: TextOptions) -> Matcher:
    """The query's matcher: RE2 for a regex, and for a literal without case (Unicode's
    folding, as ripgrep's `-i`) unless it holds a line break; bytes for any other literal."""
    query = opts.query
    if opts.regex:
        return RegexMatcher(query, opts.case_sensitive)
    if not opts.case_sensitive and "\n" not in query and "\r" not in query:
        return RegexMatcher(query, False, literal=True)
    return LiteralMatcher(query, opts.case_sensitive)


def search_text(root: Root, opts: TextOptions, control: Control,
                narrow: Narrow | None = None) -> SearchTextResult:
    """`narrow`: an index that proposes the files that may match (`needs.py`); the
    searcher reads and matches each of them as it would in a scan."""
    glob = compile_glob(opts.file_glob)
    matcher = matcher_for(opts)
    resume = cursor.decode(opts.cursor, root.name, opts) if opts.cursor else None
    walk = open_walk(root, opts, "search_text")
    sink = Sink(opts, walk.name_of)
    after = None
    if resume is not None:
        parts = (*walk.walker.start, *resume.rel)
        sink.resume_path, sink.skip = "/".join(parts), resume.shown
        # The file itself again when lines of it are still to come (or none were shown).
        after = (parts, resume.shown == 0 or opts.output_mode == CONTENT)
    narrowed = None
    with contextlib.closing(candidates(walk, glob, after)) as dirs:  # folders closed at once
        needs = needs_of(opts) if narrow is not None else None
        if narrow is not None and needs is not None:
            # Resumed by a cursor: the index only filters the walk, which starts after it.
            narrowed = narrow(needs, walk, glob, dirs, resume is not None)
        Searcher(matcher, sink, opts, control).run(dirs if narrowed is None else narrowed.folders)
    return _page(sink, walk, opts, root.name, resume, narrowed)


def _next(sink: Sink, n: int, start: tuple[str, ...]) -> tuple[tuple[str, ...], int] | None:
    """Where the page after the first `n` items starts: at the first item not returned
    when more were found, else where the search stopped (a budget), else None (the end)."""
    if len(sink.hits) > n:  # just before the first item not returned (the files between
        path, shown = sink.marks[n]  # the two have none: they are not read again)
        shown -= 1
    elif sink.stopped_in is not None and sink.examined:
        path = sink.stopped_in[0]
        shown = sink.shown_in(path) if sink.mode == CONTENT else 0
    elif sink.stopped_at is not None and sink.examined:
        path, shown = sink.stopped_at, 0
    elif sink.stopped_slow is not None and sink.examined:
        path, shown = sink.stopped_slow[0], 0
    else:
        return None
    return tuple(path.split("/"))[len(start):], shown


def _page(sink: Sink, walk: Walk, opts: TextOptions, root: str,
          resume: cursor.Resume | None, narrowed: Narrowed | None = None) -> SearchTextResult:
    limit, cap = opts.limit, opts.cap
    offset = resume.before if resume is not None else opts.offset
    start = walk.walker.start
    more = len(sink.hits) > limit
    page = sink.hits[:limit]
    notes: list[str | None] = [*sink.notes(), unreadable_note(walk.walker), walk.filt.note(),
                               narrowed.note() if narrowed is not None else None]
    key = {CONTENT: "matches", FILES: "files", COUNT: "counts"}[sink.mode]

    def make(n: int) -> SearchTextResult:
        cut = n < len(page)
        shown = [h["path"] for h in page[:n]] if sink.mode == FILES else page[:n]
        token = cursor.following(_next(sink, n, start), offset + n, resume, start, root, opts)
        fields = page_fields(offset, limit, n, more or cut,
                             [page_note(n, offset, cut, cap), *notes,
                              RESUME_NOTE if token and sink.truncated else None])
        fields["has_more"] = fields["has_more"] or token is not None
        return SearchTextResult(
            truncated=sink.truncated, examined_files=sink.examined,
            scanned_bytes=sink.scanned, skipped_too_large=sink.too_large,
            skipped_binary=sink.binary, skipped_links=walk.walker.skipped_links,
            next_cursor=token,
            **{key: shown},  # type: ignore[arg-type]  # dicts, validated by pydantic
            **fields,
        )

    return fit_page(make, page, cap)[0]


RESUME_NOTE = "call again with cursor=next_cursor to go on from where it stopped"
