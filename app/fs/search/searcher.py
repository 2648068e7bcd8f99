"""One `search_text` call's pass over its files: read each once, match, spend the budget.

`TextScan.read` opens a candidate file by its directory's descriptor, reads it
into memory in one call when it is small (no fstat), and applies the guards:
its size against the per-file limit, a NUL in its first 4 KiB (binary), and
the call's byte budget. `TextScan.search` then finds its matching lines with
the call's matcher (`app.fs.search.finders` or `app.fs.search.regex`) and records what the
output mode lists. Each matching line costs `LINE_COST` budget bytes on top of
the bytes read; where the budget runs out, the scan records the file and line.
A call also stops, at a file, once it has spent `MAX_CPU_S` of CPU.
"""

from __future__ import annotations

import itertools
import os
import stat as stat_mod
import time
from collections.abc import Callable, Iterator

from app.fs.paging import Control
from app.fs.search.finders import FirstOf, Matcher, preview, wide_encoding
from app.fs.search.regex import RegexMatcher
from app.fs.textio import HEAD, WIDE_BOMS
from app.security.resolve import FILE_FLAGS

WHOLE = 1 << 16  # files up to this size are read in one call, with no fstat
WIDE_FIRST = frozenset(bom[:1] for bom, _ in WIDE_BOMS)  # first bytes of UTF-16/32 BOMs
CONTENT, FILES, COUNT = "content", "files_with_matches", "count"
# What one matching line costs the call's byte budget on top of the bytes read:
# each is found, counted and maybe previewed in Python, so a file of millions of
# one-character matching lines must not be millions of steps (tens of seconds).
LINE_COST = 128
# CPU seconds one call may spend, looked at between files every CLOCK_EVERY bytes read:
# RE2 matches in linear time, but a pattern whose automaton has too many states
# (`[ab]*a[ab]{20}$`) leaves its DFA for a step-by-step NFA, about 2 MB/s: some 30 s
# (estimated) for the byte budget. A call may pass it by one file (about 5 s for an 8 MiB
# file at that rate).
MAX_CPU_S = 3.0
CLOCK_EVERY = 1 << 18


class TextScan:
    """What one call has found and spent so far, and where it stopped."""

    def __init__(self, matcher: Matcher | RegexMatcher, mode: str, context: int, offset: int,
                 want: int, file_limit: int, budget: int, control: Control,
                 name_of: Callable[[str], str]) -> None:
        self.matcher, self.mode, self.context = matcher, mode, context
        self.offset, self.want = offset, want  # want: one more than the page (has_more)
        self.file_limit, self.budget, self.control, self.name_of = (
            file_limit, budget, control, name_of)
        self.first = min(WHOLE, file_limit)
        self.find = matcher.find if matcher.plain else None
        self.ask = self.first + 1  # a read of more than `first` says the file is larger
        self.hits: list[dict[str, object]] = []
        self.found = 0
        self.examined = self.scanned = self.too_large = self.binary = 0
        self.charged = 0  # LINE_COST per matching line
        self.stopped_at: str | None = None  # the first file the byte budget left out
        self.stopped_in: tuple[str, int] | None = None  # (file, line) where lines used it up
        self.stopped_slow: str | None = None  # the first file left out for want of CPU time
        self.cpu_limit, self.started = MAX_CPU_S, time.thread_time()
        self.clock_at = CLOCK_EVERY  # bytes scanned when the clock is looked at next

    @property
    def spent(self) -> int:
        return self.scanned + self.charged

    def scan_dir(self, dir_fd: int, prefix: str, names: list[str]) -> bool:
        """Reads and searches the files `names` of one directory (walk path `prefix +
        name`, made only where it is shown), in order; True when the call stops here:
        the page is full, the budget or the CPU time spent (`stopped_at`, `stopped_in`,
        `stopped_slow` say where)."""
        # Per file one open, one read, one close: system calls are what a search costs,
        # and the Python around them is kept to this one loop.
        open_, read, close, flags = os.open, os.read, os.close, FILE_FLAGS
        ask, first, budget, find, check = self.ask, self.first, self.budget, self.find, \
            self.control.check
        for name in names:
            if self.scanned >= self.clock_at and self._out_of_time(prefix + name):
                return True
            try:
                fd = open_(name, flags, dir_fd=dir_fd)
            except OSError:  # gone, swapped for a link, or unreadable: skipped
                continue
            try:
                # One read answers for most files, with no fstat: a regular file gives
                # what it has, up to `first`. Only a larger one is stat'ed (`_large`).
                data = read(fd, ask)
                if len(data) > first:
                    large = self._large(fd, data, prefix + name)
                    if large is None:  # skipped, or past the budget (`stopped_at`)
                        if self.stopped_at is not None:
                            return True
                        continue
                    data = large
                elif self.scanned + self.charged + len(data) > budget:
                    self.stopped_at = prefix + name
                    return True
            except OSError:
                continue
            finally:
                close(fd)
            self.examined += 1
            self.scanned += len(data)
            check()
            if data[:1] in WIDE_FIRST and (wide := wide_encoding(data)) is not None:
                # UTF-16/32: searched as the UTF-8 of its text
                data = data[wide[1]:].decode(wide[0], "replace").encode("utf-8")
            elif data.find(b"\0", 0, HEAD) >= 0:
                self.binary += 1
                continue
            # Where the required literal is first: no matching line comes before its line.
            hint = find(data) if find is not None else 0
            if hint >= 0 and self.search(data, hint, prefix + name):
                return True
        return False

    def _out_of_time(self, path: str) -> bool:
        self.clock_at = self.scanned + CLOCK_EVERY
        if time.thread_time() - self.started <= self.cpu_limit:
            return False
        self.stopped_slow = path
        return True

    def _large(self, fd: int, head: bytes, path: str) -> bytes | None:
        """A file larger than `first`: its size against the guards, then the whole of it
        (in one read from its start: no copy of the head and the rest into a third)."""
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        if st.st_size > self.file_limit:
            self.too_large += 1
            return None
        if self.spent + st.st_size > self.budget:
            self.stopped_at = path
            return None
        if head.find(b"\0", 0, HEAD) >= 0 and not wide_encoding(head):
            return head  # binary: its head says so
        return os.pread(fd, st.st_size, 0)

    def search(self, data: bytes, hint: int, path: str) -> bool:
        """Records the matches in one file's text (`hint`: where the required literal is
        first); True when the call stops here (the page is full, or matching lines used
        up the budget)."""
        if self.mode == CONTENT:
            line = self._lines(data, hint, path)
        else:
            line = self._tally(data, hint, path)
        if self.found < self.want and self.spent > self.budget:
            self.stopped_in = (path, line)
        return self.found >= self.want or self.stopped_in is not None

    def _lines(self, data: bytes, hint: int, path: str) -> int:
        """Content mode: the matching lines (with context); the last line looked at."""
        n = len(data)
        it = self.matcher.lines(data, n, hint)
        line = 0
        if not self.context and self.found < self.offset:  # before the page: counted only
            for hit in it:
                line = hit[0]
                self.found += 1
                self.charged += LINE_COST
                if self.found >= self.offset or self.spent > self.budget:
                    break
        # A match with context shows up to 2 x context more lines: they cost too.
        cost = LINE_COST * (1 + 2 * self.context)
        rel = None
        if self.spent <= self.budget:
            for item in _content(it, data, n, self.context):
                if self.found >= self.offset:
                    if rel is None:
                        rel = self.name_of(path)
                    item["path"] = rel
                    self.hits.append(item)
                self.found += 1
                self.charged += cost
                line = item["line"]  # type: ignore[assignment]
                if self.found >= self.want or self.spent > self.budget:
                    break
        return line

    def _tally(self, data: bytes, hint: int, path: str) -> int:
        """Files and count modes: whether, or on how many lines, the file matches;
        the last line looked at when the budget runs out in it."""
        n = len(data)
        count = -1
        line = 0
        if self.mode == COUNT:
            # No line numbers worked out, and no more lines counted than the budget allows.
            most = max(0, (self.budget - self.spent) // LINE_COST)
            count = count_lines(self.matcher, data, n, hint, most)
            if self.spent + count * LINE_COST <= self.budget:
                self.charged += count * LINE_COST
            else:
                count = -1  # the budget runs out in this file: find where, below
        if count < 0:
            count = 0
            for hit in self.matcher.lines(data, n, hint):
                line = hit[0]
                count += 1
                self.charged += LINE_COST
                if self.mode == FILES or self.spent > self.budget:
                    break
        if count and self.spent <= self.budget:
            if self.found >= self.offset:
                rel = self.name_of(path)
                self.hits.append({"path": rel, "count": count} if self.mode == COUNT
                                 else {"path": rel})
            self.found += 1
        return line


def count_lines(matcher: Matcher | RegexMatcher, data: bytes, n: int, hint: int = 0,
                most: int = -1) -> int:
    """Matching lines of data[:n], with no line numbers worked out; `hint` as `lines` takes
    it; with `most` >= 0, counting stops past it."""
    if isinstance(matcher, RegexMatcher):
        return matcher.count_lines(data, n, hint, most)
    if not matcher.plain:  # a folded literal with a line break in it: the general path
        return sum(1 for _ in itertools.islice(matcher.lines(data, n),
                                               most + 1 if most >= 0 else None))
    find = matcher.find
    if isinstance(find, FirstOf) and n == len(data) and b"\n" not in matcher.needle:
        return find.count_lines(data, hint, most)  # from its listed matches, in windows
    needle = len(matcher.needle)
    count = 0
    at = hint if hint > 0 else find(data, 0)
    while at >= 0 and at + needle <= n:
        count += 1
        if count == most + 1:
            break
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
