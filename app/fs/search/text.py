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
from app.security.resolve import SecureRoot


def matcher_for(opts: TextOptions) -> Matcher:
    """The query's matcher: RE2 for a regex, and for a literal without case (Unicode's
    folding, as ripgrep's `-i`) unless it holds a line break; bytes for any other literal."""
    query = opts.query
    if opts.regex:
        return RegexMatcher(query, opts.case_sensitive)
    if not opts.case_sensitive and "\n" not in query and "\r" not in query:
        return RegexMatcher(query, False, literal=True)
    return LiteralMatcher(query, opts.case_sensitive)


def search_text(root: SecureRoot, opts: TextOptions, control: Control,
                narrow: Narrow | None = None) -> SearchTextResult:
    """`narrow`: an index that proposes the files that may match (`needs.py`); the
    searcher reads and matches each of them as it would in a scan."""
    glob = compile_glob(opts.file_glob)
    matcher = matcher_for(opts)
    walk = open_walk(root, opts, "search_text")
    sink = Sink(opts, walk.name_of)
    narrowed = None
    with contextlib.closing(candidates(walk, glob)) as dirs:  # its folders closed at once
        needs = needs_of(opts) if narrow is not None else None
        if narrow is not None and needs is not None:
            narrowed = narrow(needs, walk, glob, dirs)
        Searcher(matcher, sink, opts, control).run(dirs if narrowed is None else narrowed.folders)
    return _page(sink, walk, opts, narrowed)


def _page(sink: Sink, walk: Walk, opts: TextOptions,
          narrowed: Narrowed | None = None) -> SearchTextResult:
    offset, limit, cap = opts.offset, opts.limit, opts.cap
    more = len(sink.hits) > limit
    page = sink.hits[:limit]
    notes: list[str | None] = [*sink.notes(), unreadable_note(walk.walker), walk.filt.note(),
                               narrowed.note() if narrowed is not None else None]
    key = {CONTENT: "matches", FILES: "files", COUNT: "counts"}[sink.mode]

    def make(n: int) -> SearchTextResult:
        cut = n < len(page)
        shown = [h["path"] for h in page[:n]] if sink.mode == FILES else page[:n]
        return SearchTextResult(
            truncated=sink.truncated, examined_files=sink.examined,
            scanned_bytes=sink.scanned, skipped_too_large=sink.too_large,
            skipped_binary=sink.binary, skipped_links=walk.walker.skipped_links,
            **{key: shown},  # type: ignore[arg-type]  # dicts, validated by pydantic
            **page_fields(offset, limit, n, more or cut,
                          [page_note(n, offset, cut, cap), *notes]),
        )

    return fit_page(make, page, cap)[0]
