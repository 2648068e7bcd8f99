"""The searcher: each candidate file read once, asked of the matcher, reported to the sink.

`Searcher.run` takes the walk's folders in order, each with its candidate files (`walk.py`),
and reports progress. `scan_dir` opens each file by its folder's descriptor, reads it into
memory in one call when it is small (no fstat) and applies the guards: its size against the
per-file limit and the call's byte budget; a file holding a NUL byte anywhere is binary
and left out whole, none of its lines matching (ripgrep, in a walk, stops at the first NUL
and drops the file's matches unless it printed some from a buffer read before: at least
64 KiB before the NUL, the amount depending on its earlier files; `docs/tools.md`). A UTF-16/32
file (BOM) is searched as the UTF-8 of its text. The matcher's prefilter (`first`) passes
over a file without a match; in one that may have some, its matching lines are listed
(content) or tallied (files, counts) into the sink, each costing `LINE_COST` budget bytes on
top of the bytes read. The searcher knows the query only through the `Matcher` interface.
A call also stops, at a file, once it has spent `MAX_CPU_S` of CPU.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time
from collections.abc import Iterable

from app.fs.control import Control
from app.fs.search.lines import with_context
from app.fs.search.matcher import Matcher
from app.fs.search.options import CONTENT, COUNT, FILES, TextOptions
from app.fs.search.sink import LINE_COST, Sink
from app.fs.text.textio import WIDE_BOMS
from app.security import ops
from app.security.admission import Folder

PROGRESS_EVERY = 0.5  # seconds between progress notifications
WHOLE = 1 << 16  # files up to this size are read in one call, with no fstat
WIDE_FIRST = frozenset(bom[:1] for bom, _ in WIDE_BOMS)  # first bytes of UTF-16/32 BOMs
# CPU seconds one call may spend, looked at between files every CLOCK_EVERY bytes read:
# RE2 matches in linear time, but a pattern whose automaton has too many states
# (`[ab]*a[ab]{20}$`) leaves its DFA for a step-by-step NFA, about 2 MB/s: some 30 s
# (estimated) for the byte budget. A call may pass it by one file (about 5 s for an 8 MiB
# file at that rate).
MAX_CPU_S = 3.0
CLOCK_EVERY = 1 << 18


def wide_encoding(head: bytes | bytearray | memoryview) -> tuple[str, int] | None:
    """The encoding and BOM length of a UTF-16/32 file, else None."""
    start = bytes(head[:4])
    for bom, enc in WIDE_BOMS:
        if start.startswith(bom):
            return enc, len(bom)
    return None


class Searcher:
    """One call's pass over its files, with one matcher, writing to one sink."""

    def __init__(self, matcher: Matcher, sink: Sink, opts: TextOptions,
                 control: Control) -> None:
        self.matcher, self.sink, self.control = matcher, sink, control
        self.mode, self.context = opts.output_mode, opts.context
        self.file_limit, self.budget = opts.file_limit, opts.budget
        self.whole = min(WHOLE, opts.file_limit)  # files up to this size: read in one call
        self.ask = self.whole + 1  # a read of more than `whole` says the file is larger
        self.cpu_limit, self.started = MAX_CPU_S, time.thread_time()
        self.clock_at = CLOCK_EVERY  # bytes scanned when the clock is looked at next

    def run(self, dirs: Iterable[Folder]) -> None:
        """Every folder's candidates in walk order (its descriptor, its walk path prefix,
        the names), until the page is full or a budget spent."""
        sink, control = self.sink, self.control
        next_progress = time.monotonic() + PROGRESS_EVERY
        for fd, prefix, names in dirs:
            if names and self.scan_dir(fd, prefix, names):
                return
            if time.monotonic() >= next_progress:
                what = "matches" if self.mode == CONTENT else "files with matches"
                control.progress(sink.examined, None,
                                 f"{sink.examined} files searched, {sink.found} {what}")
                next_progress = time.monotonic() + PROGRESS_EVERY

    def scan_dir(self, dir_fd: int, prefix: str, names: list[str]) -> bool:
        """Reads and searches the files `names` of one folder (walk path `prefix + name`,
        made only where it is shown), in order; True when the call stops here: the page
        is full, the budget or the CPU time spent (the sink says where)."""
        # Per file one open, one read, one close: system calls are what a search costs,
        # and the Python around them is kept to this one loop.
        open_, read, close = ops.open_file, os.read, os.close
        sink, first, check = self.sink, self.matcher.first, self.control.check
        ask, whole, budget = self.ask, self.whole, self.budget
        for name in names:
            if sink.scanned >= self.clock_at and self._out_of_time(prefix + name):
                return True
            try:
                fd = open_(dir_fd, name)
            except OSError:  # gone, swapped for a link, or unreadable: skipped
                continue
            try:
                # One read answers for most files, with no fstat: a regular file gives
                # what it has, up to `whole`. Only a larger one is stat'ed (`_large`).
                data = read(fd, ask)
                if len(data) > whole:
                    large = self._large(fd, data, prefix + name)
                    if large is None:  # skipped, or past the budget (`stopped_at`)
                        if sink.stopped_at is not None:
                            return True
                        continue
                    data = large
                elif sink.scanned + sink.charged + len(data) > budget:
                    sink.stopped_at = prefix + name
                    return True
            except OSError:
                continue
            finally:
                close(fd)
            sink.examined += 1
            sink.scanned += len(data)
            check()
            if data[:1] in WIDE_FIRST and (wide := wide_encoding(data)) is not None:
                # UTF-16/32: searched as the UTF-8 of its text
                data = data[wide[1]:].decode(wide[0], "replace").encode("utf-8")
            if b"\0" in data:  # a NUL anywhere: binary, as ripgrep finds it in a walk
                sink.binary += 1
                continue
            # Where the first match may be: no matching line comes before its line.
            hint = first(data)
            if hint >= 0 and self.search(data, hint, prefix + name):
                return True
        return False

    def _out_of_time(self, path: str) -> bool:
        self.clock_at = self.sink.scanned + CLOCK_EVERY
        if time.thread_time() - self.started <= self.cpu_limit:
            return False
        self.sink.stopped_slow = (path, self.cpu_limit)
        return True

    def _large(self, fd: int, head: bytes, path: str) -> bytes | None:
        """A file larger than `whole`: its size against the guards, then the whole of it
        (in one read from its start: no copy of the head and the rest into a third)."""
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        if st.st_size > self.file_limit:
            self.sink.too_large += 1
            return None
        if self.sink.spent + st.st_size > self.budget:
            self.sink.stopped_at = path
            return None
        if b"\0" in head and not wide_encoding(head):
            return head  # binary: its head says so, the rest need not be read
        return os.pread(fd, st.st_size, 0)

    def search(self, data: bytes, hint: int, path: str) -> bool:
        """Records the matches in one file's text (`hint`: what the prefilter answered);
        True when the call stops here (the page is full, or matching lines used up the
        budget)."""
        sink = self.sink
        if self.mode == CONTENT:
            line = self._lines(data, hint, path)
        else:
            line = self._tally(data, hint, path)
        if sink.found < sink.want and sink.spent > self.budget:
            sink.stopped_in = (path, line)
        return sink.found >= sink.want or sink.stopped_in is not None

    def _lines(self, data: bytes, hint: int, path: str) -> int:
        """Content mode: the matching lines (with context); the last line looked at."""
        sink, budget, context = self.sink, self.budget, self.context
        n = len(data)
        it = self.matcher.lines(data, n, hint)
        line = k = 0  # k: this file's items so far
        skip = sink.skip if path == sink.resume_path else 0  # shown by the pages before
        if not context and (skip or sink.found < sink.offset):  # before the page: counted
            for hit in it:
                line = hit[0]
                k += 1
                sink.found += k > skip
                sink.charged += LINE_COST
                if (k >= skip and sink.found >= sink.offset) or sink.spent > budget:
                    break
        # A match with context shows up to 2 x context more lines: they cost too.
        cost = LINE_COST * (1 + 2 * context)
        rel = None
        if sink.spent <= budget:
            # With context, the items a cursor passes over are built all the same: what
            # the next one shows before it depends on them.
            for item in with_context(it, data, n, context):
                k += 1
                sink.charged += cost
                line = item["line"]  # type: ignore[assignment]
                if k <= skip:
                    continue
                if sink.found >= sink.offset:
                    if rel is None:
                        rel = sink.name_of(path)
                    item["path"] = rel
                    sink.hits.append(item)
                    sink.marks.append((path, k))
                sink.found += 1
                if sink.found >= sink.want or sink.spent > budget:
                    break
        return line

    def _tally(self, data: bytes, hint: int, path: str) -> int:
        """Files and count modes: whether, or on how many lines, the file matches;
        the last line looked at when the budget runs out in it."""
        sink, budget = self.sink, self.budget
        n = len(data)
        count = -1
        line = 0
        if self.mode == COUNT:
            # No line numbers worked out, and no more lines counted than the budget allows.
            most = max(0, (budget - sink.spent) // LINE_COST)
            count = self.matcher.count_lines(data, n, hint, most)
            if sink.spent + count * LINE_COST <= budget:
                sink.charged += count * LINE_COST
            else:
                count = -1  # the budget runs out in this file: find where, below
        if count < 0:
            count = 0
            for hit in self.matcher.lines(data, n, hint):
                line = hit[0]
                count += 1
                sink.charged += LINE_COST
                if self.mode == FILES or sink.spent > budget:
                    break
        if count and sink.spent <= budget:
            if sink.found >= sink.offset:
                rel = sink.name_of(path)
                sink.hits.append({"path": rel, "count": count} if self.mode == COUNT
                                 else {"path": rel})
                sink.marks.append((path, 1))
            sink.found += 1
        return line
