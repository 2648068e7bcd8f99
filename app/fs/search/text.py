"""search_files and search_text: one pruned walk, offset pages, honest stops.

Both walk breadth-first from `path` (denied names pruned before descending,
links never followed; `exclude` globs and, unless `no_ignore`, ignore files
prune too: `app.fs.filters.ignore`) and collect matches in walk order, so a page is stable:
the same call with `next_offset` continues exactly where the last one
stopped. A call stops once it has one match more than its page needs (that
is `has_more`), so a page deep in the results costs the walk up to it.

`search_text` reads each candidate file once (`app.fs.search.searcher`), after three
guards: its size against `max_search_file_bytes` (default: the root's
`max_read_bytes`), a NUL in its first 4 KiB (binary), and the call's global
byte budget `max_search_bytes`. A file skipped by a
guard is counted; running out of budget stops the call with `truncated` and
a note that names the first file not examined and how to narrow.

The query is a literal (`app.fs.search.finders.Matcher`, or RE2 on the escaped text when
folded) or, with `regex`, an RE2 pattern matched line by line
(`app.fs.search.regex`). `output_mode` picks what a page lists: matching lines (with
`context` lines around them), files with a match, or counts of matching lines
per file; the three page alike.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from pydantic import BaseModel, Field

from app.errors import BadArgument
from app.fs.filters.glob import Glob, compile_glob
from app.fs.filters.ignore import Filter
from app.fs.listing import relabel, unreadable_note
from app.fs.paging import Control, fit_page, page_note
from app.fs.search.finders import Matcher
from app.fs.search.regex import RegexMatcher
from app.fs.search.searcher import CONTENT, COUNT, FILES, LINE_COST, TextScan
from app.security.resolve import SecureRoot
from app.security.walk import FILE, Walker, kind_of_entry

PROGRESS_EVERY = 0.5  # seconds between progress notifications
MAX_QUERY = 1000
MAX_CONTEXT = 10
MAX_EXCLUDE = 64
OUTPUT_MODES = (CONTENT, FILES, COUNT)


def _absent(value: object) -> bool:
    return value is None


class FileMatch(BaseModel):
    path: str
    type: str
    size: int | None


class TextMatch(BaseModel):
    path: str
    line: int
    preview: str
    # Only with context > 0: the lines before and after that no neighbouring match shows.
    before: list[str] | None = Field(default=None, exclude_if=_absent)
    after: list[str] | None = Field(default=None, exclude_if=_absent)


class FileCount(BaseModel):
    path: str
    count: int  # matching lines, as `rg -c` counts


class _Page(BaseModel):
    offset: int
    limit: int
    returned: int
    has_more: bool
    next_offset: int | None
    truncated: bool
    note: str | None


class SearchFilesResult(_Page):
    matches: list[FileMatch]
    examined_entries: int
    skipped_links: int


class SearchTextResult(_Page):
    # One of the three, by output_mode: content, files_with_matches, count.
    matches: list[TextMatch] | None = Field(default=None, exclude_if=_absent)
    files: list[str] | None = Field(default=None, exclude_if=_absent)
    counts: list[FileCount] | None = Field(default=None, exclude_if=_absent)
    examined_files: int
    scanned_bytes: int
    skipped_too_large: int
    skipped_binary: int
    skipped_links: int


def _page_fields(offset: int, limit: int, n: int, more: bool, notes: list[str | None]):
    return dict(
        offset=offset, limit=limit, returned=n, has_more=more,
        next_offset=offset + n if more else None, note="; ".join(x for x in notes if x) or None,
    )


class _Walk(NamedTuple):
    walker: Walker
    filt: Filter
    name_of: Callable[[str], str]  # a walk path as the caller shows it
    strip: int  # characters of the start folder's path before a glob's relative path


def _globs(pattern: str, exclude: Sequence[str]) -> Glob:
    glob = compile_glob(pattern)
    for g in exclude:
        compile_glob(g)  # a bad glob is refused before anything is opened
    return glob


def _open_walk(root: SecureRoot, path: str, exclude: Sequence[str], no_ignore: bool,
               op: str) -> _Walk:
    with root.open_dir(path, op=op) as d:
        start, shown = d.parts, d.rel
    if len(exclude) > MAX_EXCLUDE:
        raise BadArgument(f"exclude takes at most {MAX_EXCLUDE} globs")
    filt = Filter(root, start, exclude, no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    return _Walk(walker, filt, relabel(start, shown), len("/".join(start)) + 1 if start else 0)


def search_files(
    root: SecureRoot, pattern: str, path: str, *, offset: int, limit: int, cap: int,
    control: Control, exclude: Sequence[str] = (), no_ignore: bool = False,
) -> SearchFilesResult:
    glob = _globs(pattern, exclude)
    walker, filt, name_of, strip = _open_walk(root, path, exclude, no_ignore, "search_files")
    basename, match_name, full = glob.basename, glob.match_name, glob.match_path
    page: list[dict[str, object]] = []
    found = 0
    more = False
    # Batches per directory: no Python object per entry until a name matches.
    for d in walker.dirs():
        control.check()
        prefix = d.prefix
        for entry in d.entries:
            if not (match_name(entry.name) if basename else full((prefix + entry.name)[strip:])):
                continue
            if found >= offset:
                if len(page) == limit:
                    more = True
                    break
                page.append(_file_match(entry, d.fd, name_of(prefix + entry.name)))
            found += 1
        if more:
            break

    def make(n: int) -> SearchFilesResult:
        cut = n < len(page)
        return SearchFilesResult(
            # Matches stay dicts: pydantic validates them, cheaper than a model each.
            matches=page[:n], truncated=False, examined_entries=walker.examined_entries,  # type: ignore[arg-type]
            skipped_links=walker.skipped_links,
            **_page_fields(offset, limit, n, more or cut,
                           [page_note(n, offset, cut, cap), unreadable_note(walker),
                            filt.note()]),
        )

    return fit_page(make, page, cap)[0]


def _file_match(entry: os.DirEntry[str], dir_fd: int, path: str) -> dict[str, object]:
    kind = kind_of_entry(entry)
    size = None
    if kind == FILE:
        # os.stat by dir_fd: measured faster than DirEntry.stat, same system call.
        with contextlib.suppress(OSError):  # gone since the directory was read
            size = os.stat(entry.name, dir_fd=dir_fd, follow_symlinks=False).st_size
    return {"path": path, "type": kind, "size": size}


def _check_text_args(query: str, context: int, output_mode: str) -> None:
    if not query:
        raise BadArgument("query must not be empty")
    if len(query) > MAX_QUERY:
        raise BadArgument(f"query is longer than {MAX_QUERY} characters")
    if not 0 <= context <= MAX_CONTEXT:
        raise BadArgument(f"context must be between 0 and {MAX_CONTEXT} lines")
    if output_mode not in OUTPUT_MODES:
        raise BadArgument(f"output_mode must be one of {', '.join(OUTPUT_MODES)}")


def _matcher(query: str, regex: bool, case_sensitive: bool) -> Matcher | RegexMatcher:
    if regex:
        return RegexMatcher(query, case_sensitive)
    if not case_sensitive and "\n" not in query and "\r" not in query:
        return RegexMatcher(query, False, literal=True)
    return Matcher(query, case_sensitive)


def search_text(
    root: SecureRoot, query: str, path: str, *, file_glob: str, case_sensitive: bool,
    offset: int, limit: int, cap: int, file_limit: int, budget: int, control: Control,
    regex: bool = False, context: int = 0, output_mode: str = CONTENT,
    exclude: Sequence[str] = (), no_ignore: bool = False,
) -> SearchTextResult:
    _check_text_args(query, context, output_mode)
    glob = _globs(file_glob, exclude)
    matcher = _matcher(query, regex, case_sensitive)
    walk = _open_walk(root, path, exclude, no_ignore, "search_text")
    scan = TextScan(matcher, output_mode, context, offset, offset + limit + 1, file_limit,
                    budget, control, walk.name_of)
    _scan_tree(scan, walk, glob, control)
    return _text_result(scan, walk, offset, limit, cap)


def _scan_tree(scan: TextScan, walk: _Walk, glob: Glob, control: Control) -> None:
    """Every candidate file in walk order, until the page is full or the budget spent."""
    everything = glob.basename and glob.pattern in ("*", "**")
    matches, strip = glob.matches, walk.strip
    next_progress = time.monotonic() + PROGRESS_EVERY
    for d in walk.walker.dirs():
        prefix = d.prefix
        try:
            names = [e.name for e in d.entries if e.is_file(follow_symlinks=False)]
        except OSError:  # an entry of unknown type gone before its lstat: one by one
            names = [e.name for e in d.entries if _regular(e)]
        if not everything:
            names = [n for n in names if matches((prefix + n)[strip:], n)]
        if names and scan.scan_dir(d.fd, prefix, names):
            return
        if time.monotonic() >= next_progress:
            what = "matches" if scan.mode == CONTENT else "files with matches"
            control.progress(scan.examined, None,
                             f"{scan.examined} files searched, {scan.found} {what}")
            next_progress = time.monotonic() + PROGRESS_EVERY


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _text_notes(scan: TextScan, walk: _Walk) -> list[str | None]:
    name_of, budget = walk.name_of, scan.budget
    notes: list[str | None] = []
    if scan.stopped_at is not None:
        notes.append(
            f"stopped at the byte budget (max_search_bytes = {budget}) after scanning "
            f"{scan.scanned} bytes in {scan.examined} files; '{name_of(scan.stopped_at)}' and "
            "the files after it (breadth-first order) were not examined: narrow the search "
            "with path=, file_glob= or exclude="
        )
    if scan.stopped_in is not None:
        notes.append(
            f"stopped at the budget (max_search_bytes = {budget}, each matching line counting "
            f"{LINE_COST} bytes, more with context) at line {scan.stopped_in[1]} of "
            f"'{name_of(scan.stopped_in[0])}'; the rest of it and the files after it "
            "(breadth-first order) were not examined: narrow the search with path=, "
            "file_glob= or exclude=, or a more specific query"
        )
    if scan.stopped_slow is not None:
        notes.append(
            f"stopped after {scan.cpu_limit:g} s of CPU, having scanned {scan.scanned} bytes in "
            f"{scan.examined} files (usually a regex too large for RE2's fast automaton, "
            f"such as a class under a long count); '{name_of(scan.stopped_slow)}' and the "
            "files after it were not examined: narrow the search with path=, file_glob= or "
            "exclude=, or a simpler pattern"
        )
    if scan.too_large:
        notes.append(f"{scan.too_large} file(s) over {scan.file_limit} bytes were not searched")
    notes.append(unreadable_note(walk.walker))
    notes.append(walk.filt.note())
    return notes


def _text_result(scan: TextScan, walk: _Walk, offset: int, limit: int, cap: int
                 ) -> SearchTextResult:
    more = len(scan.hits) > limit
    page = scan.hits[:limit]
    notes = _text_notes(scan, walk)
    key = {CONTENT: "matches", FILES: "files", COUNT: "counts"}[scan.mode]

    def make(n: int) -> SearchTextResult:
        cut = n < len(page)
        shown = [h["path"] for h in page[:n]] if scan.mode == FILES else page[:n]
        return SearchTextResult(
            truncated=(scan.stopped_at is not None or scan.stopped_in is not None
                       or scan.stopped_slow is not None),
            examined_files=scan.examined,
            scanned_bytes=scan.scanned, skipped_too_large=scan.too_large,
            skipped_binary=scan.binary, skipped_links=walk.walker.skipped_links,
            **{key: shown},  # type: ignore[arg-type]  # dicts, validated by pydantic
            **_page_fields(offset, limit, n, more or cut, [page_note(n, offset, cut, cap), *notes]),
        )

    return fit_page(make, page, cap)[0]
