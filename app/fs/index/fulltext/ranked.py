"""Search on one root's persistent index (docs/tools.md): BM25 and its bonuses.

`rank_root()` refreshes one root's index (`app.fs.index.fulltext.fts`), asks it for BM25's
best candidates over code-aware words (`app.fs.index.fulltext.tokens`) plus other forms of
the words (a crude stem matched as a prefix), and raises the scores of files
holding every word, the words near each other, the words as a phrase.
`prefixed()` is the second tier: files whose words merely start with a query
word. Merging the roots, the budgets of one call, and passing every hit through
`fts.verify` (today's rules, the disk) before it is listed live above fs, in
`app.corpus.ranked`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator

from app.fs.control import Control
from app.fs.index.fulltext import fts
from app.fs.index.fulltext.query import Query
from app.security.resolve import Root

CANDIDATES = 200  # BM25's best, per root, that the bonuses may reorder
ALL_BONUS = 0.5  # every word of the query in the file: score x 1.5
NEAR_BONUS = 0.5  # and all within NEAR_WORDS of each other: x 1.5 more
PHRASE_BONUS = 1.0  # and as a phrase: x 2 more
NEAR_WORDS = 10
SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26


def _corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    return code in (SQLITE_CORRUPT, SQLITE_NOTADB)


def rank_root(
    idx: fts.RootIndex,
    root: Root,
    query: Query,
    *,
    identity: str,
    per_file: int,
    deadline: float,
    control: Control,
) -> tuple[list[tuple[float, str]], int, fts.Refreshed]:
    """One root's (score, path) candidates for `query`, how many files matched, and how
    far the refresh got. An index someone else corrupted is discarded and rebuilt once."""
    words, terms = list(query.words), list(query.terms)
    progress = _progress(control, root.name)

    def attempt() -> tuple[list[tuple[float, str]], int, fts.Refreshed]:
        done = idx.refresh(
            root, identity, per_file, deadline=deadline, check=control.check, progress=progress
        )
        rows, n = idx.query(terms, CANDIDATES, list(query.stems))
        return _bonus(idx, words, rows), n, done

    with locked(idx, control):
        try:
            return attempt()
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc):
                raise
            idx.discard()  # someone else's bytes: never trusted, rebuilt
        return attempt()


def _progress(control: Control, name: str) -> Callable[[int, int], None]:
    def progress(read: int, examined: int) -> None:
        control.progress(
            examined, None, f"indexing root '{name}': {read} files read, {examined} examined"
        )

    return progress


def prefixed(idx: fts.RootIndex, terms: list[str], limit: int, control: Control) -> list[str]:
    """Paths whose words start with one of `terms` (`env` -> environment.md), best first;
    the caller still passes each through `fts.verify` before listing it."""
    with locked(idx, control):
        return idx.prefixed(terms, limit)


@contextlib.contextmanager
def locked(idx: fts.RootIndex, control: Control) -> Iterator[None]:
    """The index's lock; a call waiting behind another's first build can still be
    cancelled."""
    while not idx.lock.acquire(timeout=0.2):
        control.check()
    try:
        yield
    finally:
        idx.lock.release()


def _bonus(
    idx: fts.RootIndex, words: list[str], rows: list[tuple[float, int, str]]
) -> list[tuple[float, str]]:
    """BM25 scores raised for files holding every word, the words near each other, or
    the words as a phrase (within one part of the file: `prepare.PART_CHARS`)."""
    if len(words) < 2 or not rows:
        return [(score, rel) for score, _, rel in rows]
    quoted = [fts.quote(w) for w in words]
    every = idx.matching(" AND ".join(quoted))
    near = idx.matching(f"NEAR({' '.join(quoted)}, {NEAR_WORDS})") if every else set()
    phrase = idx.matching(fts.quote(" ".join(words))) if near else set()
    return [
        (
            score
            * (1 + ALL_BONUS * (fid in every))
            * (1 + NEAR_BONUS * (fid in near))
            * (1 + PHRASE_BONUS * (fid in phrase)),
            rel,
        )
        for score, fid, rel in rows
    ]
