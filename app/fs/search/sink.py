"""What one `search_text` call finds and spends: the sink its searcher reports to.

The searcher (`searcher.py`) writes here as it goes: each item the page lists (a matching
line with its context, a file, a file's count of matching lines), how many it has found in
all (those before `offset` are counted, not kept), the files it examined and the ones it
skipped (too large, binary), the bytes it read and the budget it charged for matching lines
(`LINE_COST` each), and where it stopped, if it did: at a file the byte budget left out
(`stopped_at`), at a line of a file where matching lines used the budget up (`stopped_in`),
or at a file left out for want of CPU time (`stopped_slow`). The page, its `truncated`
flag and its notes are read from here (`text.py`); nothing is threaded back through
return values.
"""

from __future__ import annotations

from collections.abc import Callable

from app.fs.search.options import TextOptions

# What one matching line costs the call's byte budget on top of the bytes read:
# each is found, counted and maybe previewed in Python, so a file of millions of
# one-character matching lines must not be millions of steps (tens of seconds).
LINE_COST = 128


class Sink:
    """The matches, files or counts one call has found so far, and what it has spent."""

    def __init__(self, opts: TextOptions, name_of: Callable[[str], str]) -> None:
        self.mode, self.offset, self.want = opts.output_mode, opts.offset, opts.want
        self.budget, self.file_limit = opts.budget, opts.file_limit
        self.name_of = name_of  # a walk path as the page shows it
        self.hits: list[dict[str, object]] = []  # the page's items, and one more
        # Per item of `hits`: its file's walk path and its place among that file's items.
        self.marks: list[tuple[str, int]] = []
        # From a cursor: the file the call resumes in and how many of its items the
        # pages before showed (left out here).
        self.resume_path: str | None = None
        self.skip = 0
        self.found = 0  # items found, those before `offset` included
        self.examined = self.scanned = self.too_large = self.binary = 0
        self.charged = 0  # LINE_COST per matching line
        self.stopped_at: str | None = None  # the first file the byte budget left out
        self.stopped_in: tuple[str, int] | None = None  # (file, line) where lines used it up
        # The first file left out for want of CPU time, and the seconds the call had.
        self.stopped_slow: tuple[str, float] | None = None

    def shown_in(self, path: str) -> int:
        """How many of `path`'s items this page and the ones before it showed."""
        if self.marks and self.marks[-1][0] == path:
            return self.marks[-1][1]
        return self.skip if path == self.resume_path else 0

    @property
    def spent(self) -> int:
        return self.scanned + self.charged

    @property
    def truncated(self) -> bool:
        """The search stopped before the end of the tree (not for a full page)."""
        return (self.stopped_at is not None or self.stopped_in is not None
                or self.stopped_slow is not None)

    def notes(self) -> list[str]:
        """What the page must say about where the search stopped and what it skipped."""
        name_of, budget = self.name_of, self.budget
        notes: list[str] = []
        if self.stopped_at is not None:
            notes.append(
                f"stopped at the byte budget (max_search_bytes = {budget}) after scanning "
                f"{self.scanned} bytes in {self.examined} files; '{name_of(self.stopped_at)}' "
                "and the files after it (breadth-first order) were not examined: narrow the "
                "search with path=, file_glob= or exclude="
            )
        if self.stopped_in is not None:
            notes.append(
                f"stopped at the budget (max_search_bytes = {budget}, each matching line "
                f"counting {LINE_COST} bytes, more with context) at line {self.stopped_in[1]} "
                f"of '{name_of(self.stopped_in[0])}'; the rest of it and the files after it "
                "(breadth-first order) were not examined: narrow the search with path=, "
                "file_glob= or exclude=, or a more specific query"
            )
        if self.stopped_slow is not None:
            path, seconds = self.stopped_slow
            notes.append(
                f"stopped after {seconds:g} s of CPU, having scanned {self.scanned} bytes in "
                f"{self.examined} files (usually a regex too large for RE2's fast automaton, "
                f"such as a class under a long count); '{name_of(path)}' and the files after "
                "it were not examined: narrow the search with path=, file_glob= or "
                "exclude=, or a simpler pattern"
            )
        if self.too_large:
            notes.append(f"{self.too_large} file(s) over {self.file_limit} bytes were not "
                         "searched")
        return notes
