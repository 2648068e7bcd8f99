"""One root's files as documents for `search` and `fetch` (docs/tools.md): scanned, or read whole.

The ways in are the same as every other tool's: `Scan.root` walks with
`app.security.walk.Walker` (denied names pruned before descending and
invisible, symlinks never followed, files opened by name from the walk's own
directory handle), and `read_document` opens through `Root.open_file`
(permission, confinement, deny on the request *and* on the in-root target).
A denied file is therefore neither found nor fetched.

The scan (the search without an index): case-insensitive words; a file
matches when at least one word occurs in its root-relative path or its text.
Best first: the whole query as a phrase, then the most distinct words, then
words in the path, then occurrences, then walk order (deterministic). Its
content is capped by a byte budget shared by every root of the call; after
that only paths are matched (`over_budget`). A file above the per-file cap, or
binary, is matched by its path only. Which roots, the cap on results and the
answer's shape are decided above fs (`app.corpus.deep_research`).
"""

from __future__ import annotations

import heapq
import os
import stat as stat_mod
import time
from dataclasses import dataclass, field

from app.errors import BinaryFile, os_error
from app.fs.control import Control
from app.fs.index.fulltext.prepare import Source
from app.fs.index.fulltext.tokens import as_text
from app.fs.text import textio
from app.security import ops
from app.security.resolve import Root
from app.security.walk import FILE, WalkEntry, Walker

CHECK_EVERY = 256  # entries between two cancellation checks
PROGRESS_EVERY = 0.5  # seconds between progress notifications (when the client asked)

Scored = tuple[tuple[int, ...], str, str]  # (score, root, path)


@dataclass
class Scan:
    """The search without an index, one root after another (`root`), keeping the `cap`
    best; `best_first()` gives them, `matched` counts every match."""

    terms: list[str]
    phrase: str  # the whole query, spaces folded, case-folded
    cap: int
    budget: int  # content bytes, across every root
    control: Control
    scanned: int = 0
    over_budget: bool = False  # some file's text was not scanned for lack of budget
    order: int = 0
    matched: int = 0
    best: list[Scored] = field(default_factory=list)  # a min-heap of the `cap` best
    next_progress: float = field(default_factory=lambda: time.monotonic() + PROGRESS_EVERY)

    def root(self, root: Root, per_file: int) -> None:
        """Walk one root (already authorized), scoring each file."""
        for entry in Walker(root, ()):
            self.order += 1
            if self.order % CHECK_EVERY == 0:
                self._check()
            if entry.kind == FILE:
                self._file(root.name, entry, per_file)

    def _check(self) -> None:
        self.control.check()
        if time.monotonic() >= self.next_progress:
            self.control.progress(
                self.order, None, f"{self.order} entries examined, {self.matched} matches"
            )
            self.next_progress = time.monotonic() + PROGRESS_EVERY

    def _file(self, root_name: str, entry: WalkEntry, per_file: int) -> None:
        terms, rel = self.terms, entry.path
        path_text = rel.casefold()
        in_path = {t for t in terms if t in path_text}
        found, count, whole = set(in_path), len(in_path), self.phrase in path_text
        if len(in_path) < len(terms) or not whole:
            left = self.budget - self.scanned
            got, used, late = _content(entry.name, entry.dir_fd, per_file, left, terms, self.phrase)
            self.scanned += used
            self.over_budget = self.over_budget or late
            if got is not None:
                counts, has_phrase = got
                for t, n in counts.items():
                    if n:
                        found.add(t)
                        count += n
                whole = whole or has_phrase
        if not found:
            return
        self.matched += 1
        score = (int(whole), len(found), len(in_path), min(count, 10_000), -self.order)
        item = (score, root_name, rel)
        if len(self.best) < self.cap:
            heapq.heappush(self.best, item)
        elif item > self.best[0]:
            heapq.heapreplace(self.best, item)

    def best_first(self) -> list[tuple[str, str]]:
        return [(r, rel) for _, r, rel in sorted(self.best, reverse=True)]


Counts = tuple[dict[str, int], bool]  # occurrences of each term; the phrase occurs


def _content(
    name: str, dir_fd: int, per_file: int, left: int, terms: list[str], phrase: str
) -> tuple[Counts | None, int, bool]:
    """A walked file's counts (None when its text was not scanned), bytes it costs the
    budget, and whether it went unscanned for lack of budget. Too large, binary,
    unreadable or no longer a regular file: matched by path only, and not a budget
    matter."""
    try:
        fd = ops.open_file(dir_fd, name)
    except OSError:  # gone, swapped for a link, unreadable
        return None, 0, False
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size > per_file:
            return None, 0, False
        if st.st_size > left:
            return None, 0, True
        limit = min(per_file, left)
        return _count(fd, limit, terms, phrase), min(st.st_size, limit), False
    except OSError:
        return None, 0, False
    finally:
        os.close(fd)


def _count(fd: int, limit: int, terms: list[str], phrase: str) -> Counts | None:
    """How often each term occurs in the case-folded text of the file open at `fd`, and
    whether the phrase does; None for a binary file. Read, decoded and folded a window
    at a time (`prepare.Source`: the decision fetch makes), so an 8 MiB file of
    characters that fold to three costs a window, not three copies of the file. A
    match across two windows is found in the seam between them."""
    src = Source(fd, limit)
    texts = src.texts()
    if texts is None:
        return None
    if src.whole:  # one window: no seams to look at
        folded = next(texts)[0].casefold()
        return {t: folded.count(t) for t in terms}, phrase in folded
    counts = dict.fromkeys(terms, 0)
    has_phrase = False
    keep = max(len(w) for w in [*terms, phrase]) - 1  # the previous window's end kept
    tail = ""
    for text, _last in texts:
        folded = text.casefold()
        for t in terms:
            counts[t] += folded.count(t) + _seam(tail, folded, t).count(t)
        has_phrase = has_phrase or phrase in folded or phrase in _seam(tail, folded, phrase)
        tail = (tail + folded[-keep:])[-keep:] if keep else ""
    return counts, has_phrase


def _seam(tail: str, text: str, word: str) -> str:
    """Where a match of `word` across the end of `tail` and the start of `text` is, and
    no other match (each side is shorter than the word)."""
    n = len(word) - 1
    return tail[-n:] + text[:n] if n and tail else ""


@dataclass(frozen=True)
class Document:
    rel: str  # as the root spells it
    text: str
    encoding: str
    size: int
    mtime: float
    limit: int  # the root's max_read_bytes
    read: int  # bytes read: one more than `limit` tells a longer file
    cut: bool  # the file is longer than `limit`: `text` is its start


def read_document(root: Root, rel: str) -> Document:
    """The text of one file, at most the root's `max_read_bytes` of it (audited as fetch)."""
    with root.open_file(rel, op="fetch", perm="read") as f:
        size, limit = f.st.st_size, root.max_read_bytes
        try:
            data = textio.pread_all(f.fd, limit + 1)
        except OSError as exc:
            raise os_error(exc, f.rel) from None
        rel, mtime = f.rel, f.st.st_mtime
    cut_bytes = len(data) > limit
    decoded = as_text(data[:limit], not cut_bytes)
    if decoded is None:
        raise BinaryFile(f"binary file: '{rel}' is not text (a NUL byte in its first 4 KiB)")
    text, enc = decoded
    return Document(rel, text, enc, size, mtime, limit, len(data), cut_bytes)
