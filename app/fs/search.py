"""search_files and search_text: one pruned walk, offset pages, honest stops.

Both walk breadth-first from `path` (denied names pruned before descending,
links never followed; `exclude` globs and, unless `no_ignore`, ignore files
prune too: `app.fs.ignore`) and collect matches in walk order, so a page is stable:
the same call with `next_offset` continues exactly where the last one
stopped. A call stops once it has one match more than its page needs (that
is `has_more`), so a page deep in the results costs the walk up to it.

`search_text` reads each candidate file once, with one read into a reused
buffer, after three guards: its size against `max_search_file_bytes`
(default: the root's `max_read_bytes`), a NUL in its first 4 KiB (binary),
and the call's global byte budget `max_search_bytes`. A file skipped by a
guard is counted; running out of budget stops the call with `truncated` and
a note that names the first file not examined and how to narrow.

The query is a literal (`app.fs.grep.Matcher`, or RE2 on the escaped text when
folded) or, with `regex`, an RE2 pattern matched line by line
(`app.fs.regex`). `output_mode` picks what a page lists: matching lines (with
`context` lines around them), files with a match, or counts of matching lines
per file; the three page alike.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import time
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, Field

from app.errors import BadArgument
from app.fs.glob import compile_glob
from app.fs.grep import Matcher, preview, wide_encoding
from app.fs.ignore import Filter
from app.fs.listing import relabel, unreadable_note
from app.fs.paging import Control, fit_page, page_note
from app.fs.regex import RegexMatcher
from app.fs.textio import HEAD, WIDE_BOMS
from app.security.resolve import FILE_FLAGS, SecureRoot
from app.security.walk import FILE, Walker, kind_of_entry

PROGRESS_EVERY = 0.5  # seconds between progress notifications
WHOLE = 1 << 16  # files up to this size are read in one call, with no fstat
WIDE_FIRST = frozenset(bom[:1] for bom, _ in WIDE_BOMS)  # first bytes of UTF-16/32 BOMs
MAX_QUERY = 1000
MAX_CONTEXT = 10
MAX_EXCLUDE = 64
CONTENT, FILES, COUNT = "content", "files_with_matches", "count"
OUTPUT_MODES = (CONTENT, FILES, COUNT)
# What one matching line costs the call's byte budget on top of the bytes read:
# each is found, counted and maybe previewed in Python, so a file of millions of
# one-character matching lines must not be millions of steps (tens of seconds).
LINE_COST = 128


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


def _filter(root: SecureRoot, start: tuple[str, ...], exclude: Sequence[str],
            no_ignore: bool) -> Filter:
    if len(exclude) > MAX_EXCLUDE:
        raise BadArgument(f"exclude takes at most {MAX_EXCLUDE} globs")
    return Filter(root, start, exclude, no_ignore)


def search_files(
    root: SecureRoot, pattern: str, path: str, *, offset: int, limit: int, cap: int,
    control: Control, exclude: Sequence[str] = (), no_ignore: bool = False,
) -> SearchFilesResult:
    glob = compile_glob(pattern)
    for g in exclude:
        compile_glob(g)  # a bad glob is refused before anything is opened
    with root.open_dir(path, op="search_files") as d:
        start, shown = d.parts, d.rel
    filt = _filter(root, start, exclude, no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    name_of = relabel(start, shown)
    strip = len("/".join(start)) + 1 if start else 0
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


class _Stats:
    __slots__ = ("binary", "charged", "examined", "scanned", "too_large")

    def __init__(self) -> None:
        self.examined = self.scanned = self.too_large = self.binary = 0
        self.charged = 0  # LINE_COST per matching line

    @property
    def spent(self) -> int:
        return self.scanned + self.charged


def _check_text_args(query: str, context: int, output_mode: str) -> None:
    if not query:
        raise BadArgument("query must not be empty")
    if len(query) > MAX_QUERY:
        raise BadArgument(f"query is longer than {MAX_QUERY} characters")
    if not 0 <= context <= MAX_CONTEXT:
        raise BadArgument(f"context must be between 0 and {MAX_CONTEXT} lines")
    if output_mode not in OUTPUT_MODES:
        raise BadArgument(f"output_mode must be one of {', '.join(OUTPUT_MODES)}")


def search_text(
    root: SecureRoot, query: str, path: str, *, file_glob: str, case_sensitive: bool,
    offset: int, limit: int, cap: int, file_limit: int, budget: int, control: Control,
    regex: bool = False, context: int = 0, output_mode: str = CONTENT,
    exclude: Sequence[str] = (), no_ignore: bool = False,
) -> SearchTextResult:
    _check_text_args(query, context, output_mode)
    glob = compile_glob(file_glob)
    for g in exclude:
        compile_glob(g)
    matcher: Matcher | RegexMatcher
    if regex:
        matcher = RegexMatcher(query, case_sensitive)
    elif not case_sensitive and "\n" not in query and "\r" not in query:
        matcher = RegexMatcher(query, False, literal=True)
    else:
        matcher = Matcher(query, case_sensitive)
    everything = glob.basename and glob.pattern in ("*", "**")
    with root.open_dir(path, op="search_text") as d:
        start, shown = d.parts, d.rel
    filt = _filter(root, start, exclude, no_ignore)
    walker = Walker(root, start, keep=filt if filt.active else None)
    name_of = relabel(start, shown)
    strip = len("/".join(start)) + 1 if start else 0
    want = offset + limit + 1  # one more than the page: that is has_more
    hits: list[dict[str, object]] = []
    found = 0
    s = _Stats()
    stopped_at: str | None = None
    stopped_in: tuple[str, int] | None = None  # (file, line) where matching lines used it up
    next_progress = time.monotonic() + PROGRESS_EVERY
    # Hot loop: per file one open, one read, one close (system calls are what a
    # search costs); a file without the needle then costs one C-level find.
    plain, find, lines = matcher.plain, matcher.find, matcher.lines
    isreg, read, fstat, close = stat_mod.S_ISREG, os.read, os.fstat, os.close
    first = min(WHOLE, file_limit)
    mode = output_mode
    for d in walker.dirs():
        prefix, dir_fd = d.prefix, d.fd
        for entry in d.entries:
            name = entry.name
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if not (everything or glob.matches((prefix + name)[strip:], name)):
                continue
            try:
                fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
            except OSError:  # gone, swapped for a link, or unreadable: skipped
                continue
            try:
                # One read answers for most files, with no fstat: a regular file
                # gives what it has, up to `first`. Only a larger one is stat'ed,
                # for its size guard, and read on unless its head is binary.
                data = read(fd, first + 1)
                if len(data) > first:
                    st = fstat(fd)
                    if not isreg(st.st_mode):
                        continue
                    if st.st_size > file_limit:
                        s.too_large += 1
                        continue
                    if s.spent + st.st_size > budget:
                        stopped_at = prefix + name
                        break
                    if data.find(b"\0", 0, HEAD) < 0 or wide_encoding(data):
                        data += read(fd, st.st_size - len(data))
                elif s.spent + len(data) > budget:
                    stopped_at = prefix + name
                    break
            except OSError:
                continue
            finally:
                close(fd)
            wide = wide_encoding(data) if data[:1] in WIDE_FIRST else None
            binary = wide is None and data.find(b"\0", 0, HEAD) >= 0
            n = len(data)
            s.examined += 1
            s.scanned += n
            control.check()
            if binary:
                s.binary += 1
                continue
            if wide is not None:  # UTF-16/32: searched as the UTF-8 of its text
                data = data[wide[1]:].decode(wide[0], "replace").encode("utf-8")
                n = len(data)
            # Where the required literal is first: no matching line comes before its line.
            hint = find(data) if plain else 0
            if hint < 0:
                continue
            rel = None
            line = 0
            if mode == CONTENT:
                it = lines(data, n, hint)
                if not context and found < offset:  # before the page: counted, not previewed
                    for hit in it:
                        line = hit[0]
                        found += 1
                        s.charged += LINE_COST
                        if found >= offset or s.spent > budget:
                            break
                # A match with context shows up to 2 x context more lines: they cost too.
                cost = LINE_COST * (1 + 2 * context)
                if s.spent <= budget:
                    for item in _content(it, data, n, context):
                        if found >= offset:
                            if rel is None:
                                rel = name_of(prefix + name)
                            item["path"] = rel
                            hits.append(item)
                        found += 1
                        s.charged += cost
                        line = item["line"]  # type: ignore[assignment]
                        if found >= want or s.spent > budget:
                            break
            else:
                count = -1
                if mode == COUNT:
                    count = _count_lines(matcher, data, n, hint)  # no line numbers worked out
                    if s.spent + count * LINE_COST <= budget:
                        s.charged += count * LINE_COST
                    else:
                        count = -1  # the budget runs out in this file: find where, below
                if count < 0:
                    count = 0
                    for hit in lines(data, n, hint):
                        line = hit[0]
                        count += 1
                        s.charged += LINE_COST
                        if mode == FILES or s.spent > budget:
                            break
                if count and s.spent <= budget:
                    if found >= offset:
                        rel = name_of(prefix + name)
                        hits.append({"path": rel, "count": count} if mode == COUNT
                                    else {"path": rel})
                    found += 1
            if found < want and s.spent > budget:
                stopped_in = (prefix + name, line)
            if found >= want or stopped_in is not None:
                break
        if found >= want or stopped_at is not None or stopped_in is not None:
            break
        if time.monotonic() >= next_progress:
            what = "matches" if mode == CONTENT else "files with matches"
            control.progress(s.examined, None, f"{s.examined} files searched, {found} {what}")
            next_progress = time.monotonic() + PROGRESS_EVERY
    more = len(hits) > limit
    page = hits[:limit]
    notes: list[str | None] = []
    if stopped_at is not None:
        notes.append(
            f"stopped at the byte budget (max_search_bytes = {budget}) after scanning "
            f"{s.scanned} bytes in {s.examined} files; '{name_of(stopped_at)}' and the files "
            "after it (breadth-first order) were not examined: narrow the search with path=, "
            "file_glob= or exclude="
        )
    if stopped_in is not None:
        notes.append(
            f"stopped at the budget (max_search_bytes = {budget}, each matching line counting "
            f"{LINE_COST} bytes, more with context) at line {stopped_in[1]} of "
            f"'{name_of(stopped_in[0])}'; the rest of it and the files after it (breadth-first "
            "order) were not examined: narrow the search with path=, file_glob= or exclude=, "
            "or a more specific query"
        )
    if s.too_large:
        notes.append(f"{s.too_large} file(s) over {file_limit} bytes were not searched")
    notes.append(unreadable_note(walker))
    notes.append(filt.note())

    def make(n: int) -> SearchTextResult:
        cut = n < len(page)
        shown_items = page[:n]
        out: dict[str, object] = {}
        if mode == CONTENT:
            out["matches"] = shown_items
        elif mode == FILES:
            out["files"] = [h["path"] for h in shown_items]
        else:
            out["counts"] = shown_items
        return SearchTextResult(
            truncated=stopped_at is not None or stopped_in is not None,
            examined_files=s.examined,
            scanned_bytes=s.scanned, skipped_too_large=s.too_large, skipped_binary=s.binary,
            skipped_links=walker.skipped_links,
            **out,  # type: ignore[arg-type]  # dicts, validated by pydantic
            **_page_fields(offset, limit, n, more or cut, [page_note(n, offset, cut, cap), *notes]),
        )

    return fit_page(make, page, cap)[0]


def _count_lines(matcher: Matcher | RegexMatcher, data: bytes, n: int, hint: int = 0) -> int:
    """Matching lines of data[:n], with no line numbers worked out; `hint` as `lines` takes it."""
    if isinstance(matcher, RegexMatcher):
        return matcher.count_lines(data, n, hint)
    if not matcher.plain:  # a folded literal with a line break in it: the general path
        return sum(1 for _ in matcher.lines(data, n))
    find = matcher.find
    needle = len(matcher.needle)
    count = 0
    at = hint if hint > 0 else find(data, 0)
    while at >= 0 and at + needle <= n:
        count += 1
        end = data.find(b"\n", at, n)  # as `lines` does: the line the match starts on
        if end < 0:
            break
        at = find(data, end + 1)
    return count


def _content(found: Iterator[tuple[int, int, int, int]], buf: bytes, n: int, context: int
             ) -> Iterator[dict[str, object]]:
    """One item per matching line; with context, the lines around it no neighbour shows.

    As ripgrep prints them: a line is shown once, as a match if it is one, else as
    the after-context of the match above it or the before-context of the one below.
    """
    if not context:
        for line, ls, le, pos in found:
            yield {"path": "", "line": line, "preview": preview(buf[ls:le], pos - ls)}
        return
    shown = 0  # last line number already shown (a match or its after-context)
    cur = next(found, None)
    while cur is not None:
        nxt = next(found, None)
        line, ls, le, pos = cur
        before: list[str] = []
        s = ls
        for _ in range(min(context, line - 1 - shown)):
            e = s - 1
            s = buf.rfind(b"\n", 0, e) + 1
            before.append(preview(buf[s:e], 0))
        before.reverse()
        after: list[str] = []
        room = context if nxt is None else min(context, nxt[0] - line - 1)
        e = le
        for _ in range(room):
            s = e + 1
            if s >= n:
                break
            e = buf.find(b"\n", s, n)
            if e < 0:
                e = n
            after.append(preview(buf[s:e], 0))
        shown = line + len(after)
        yield {"path": "", "line": line, "preview": preview(buf[ls:le], pos - ls),
               "before": before, "after": after}
        cur = nxt


