"""Search on the persistent index (SPEC §4.6): BM25, bonuses, re-checked hits.

`search()` refreshes each readable root's index (`app.fs.fts`), asks it for
BM25's best candidates over code-aware words (`app.fs.tokens`) plus other forms
of the words (a crude stem matched as a prefix), raises the scores of files
holding every word, the words near each other, the words as a phrase, merges
the roots, and keeps only the paths `fts.verify` still finds under today's
rules; then files whose words merely start with a short query word. It works
across roots (one call, every root that grants read), so it takes a Snapshot.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from app import config as config_mod
from app.fs import fts, tokens
from app.fs.paging import Control
from app.security import deny
from app.security.resolve import SecureRoot

if TYPE_CHECKING:
    from app.registry import Snapshot

BUILD_SECONDS = 20.0  # index work one search may do before answering from what is indexed
CANDIDATES = 200  # BM25's best, per root, that the bonuses may reorder
ALL_BONUS = 0.5  # every word of the query in the file: score x 1.5
NEAR_BONUS = 0.5  # and all within NEAR_WORDS of each other: x 1.5 more
PHRASE_BONUS = 1.0  # and as a phrase: x 2 more
NEAR_WORDS = 10
SQLITE_CORRUPT, SQLITE_NOTADB = 11, 26


def index_dir(snap: Snapshot) -> str:
    """Beside the audit log: the server's state directory ($XDG_STATE_HOME/loom-fs-mcp)."""
    return os.path.join(os.path.dirname(snap.config.audit_log), "index")


def dir_problem(snap: Snapshot) -> str | None:
    where = index_dir(snap)
    for root in snap.roots.values():
        if config_mod.contains(root.real, where):
            return f"the index directory would be inside root '{root.name}'"
    return None


def _corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    return code in (SQLITE_CORRUPT, SQLITE_NOTADB)


def identity(snap: Snapshot, root: SecureRoot, per_file: int) -> str:
    """Everything an index's content depends on: when it changes, the index is rebuilt."""
    rc = next((r for r in snap.config.roots if r.name == root.name), None)
    st = os.fstat(root.handle.fd)
    data = [
        fts.SCHEMA,
        fts.TOKENIZE,
        root.real,
        [st.st_dev, st.st_ino],
        per_file,
        list(rc.deny) if rc else None,
        list(rc.allow) if rc else None,
        list(snap.config.protected_files),
        [deny.FLOOR, deny.BASE, deny.TEMPLATES],
    ]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def readable_roots(snap: Snapshot) -> Iterator[tuple[SecureRoot, int]]:
    """Each root `search` may read (audited as a search of its top), with the size above
    which one of its files is not read."""
    limits = snap.limits
    for root in snap.roots.values():
        if "read" not in root.permissions:
            continue
        root.authorize("", perm="read", op="search")
        root.record("ALLOW", "", "search")
        yield root, min(limits.max_search_file_bytes or root.max_read_bytes, root.max_read_bytes)


def search(
    snap: Snapshot, query: str, control: Control, cap: int
) -> tuple[list[tuple[str, str]], int, list[str]]:
    """The best `cap` (root, path) for `query`, how many files matched, and notes on
    anything left out (a build still under way)."""
    words, terms = tokens.query_words(query), tokens.query_terms(query)
    deadline = time.monotonic() + BUILD_SECONDS
    where = index_dir(snap)
    fts.ensure_dir(where)
    pool: list[tuple[float, str, str]] = []
    roots: dict[str, tuple[SecureRoot, fts.RootIndex]] = {}
    notes: list[str] = []
    matched = 0
    for root, per_file in readable_roots(snap):
        idx = fts.index_at(os.path.join(where, fts.file_name(root.name, root.real)))
        roots[root.name] = (root, idx)

        def progress(read: int, examined: int, name: str = root.name) -> None:
            control.progress(
                examined, None, f"indexing root '{name}': {read} files read, {examined} examined"
            )

        with _locked(idx, control):
            for attempt in (1, 2):
                try:
                    done = idx.refresh(
                        root,
                        identity(snap, root, per_file),
                        per_file,
                        deadline=deadline,
                        check=control.check,
                        progress=progress,
                    )
                    rows, n = idx.query(terms, CANDIDATES, tokens.stems(words))
                    ranked = _bonus(idx, words, rows)
                    break
                except sqlite3.DatabaseError as exc:
                    if attempt == 2 or not _corrupt(exc):
                        raise
                    idx.discard()  # someone else's bytes: never trusted, rebuilt
        matched += n
        pool.extend((score, root.name, rel) for score, rel in ranked)
        if not done.complete:
            indexed, _ = idx.stats()
            notes.append(
                f"the index of root '{root.name}' is still being built ({indexed} files so far, "
                f"{BUILD_SECONDS:.0f} s per search): results cover those; search again for more"
            )
    pool.sort(key=lambda x: -x[0])
    results: list[tuple[str, str]] = []
    listed: set[tuple[str, str]] = set()
    for _, name, rel in pool:
        if len(results) == cap:
            break
        if fts.verify(roots[name][0], rel):
            results.append((name, rel))
            listed.add((name, rel))
    prefix_terms = [t for t in terms if len(t) >= 3]
    if len(results) < cap and prefix_terms:
        # Second tier: words that merely start with a query word (`env` -> environment.md).
        for name, (root, idx) in roots.items():
            with _locked(idx, control):
                more = idx.prefixed(prefix_terms, cap * 2)
            for rel in more:
                if len(results) == cap:
                    break
                if (name, rel) not in listed and fts.verify(root, rel):
                    results.append((name, rel))
                    listed.add((name, rel))
                    matched += 1
    return results, max(matched, len(results)), notes


@contextlib.contextmanager
def _locked(idx: fts.RootIndex, control: Control) -> Iterator[None]:
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
    the words as a phrase."""
    if len(words) < 2 or not rows:
        return [(score, rel) for score, _, rel in rows]
    quoted = [fts.quote(w) for w in words]
    every = idx.matching(" AND ".join(quoted))
    near = idx.matching(f"NEAR({' '.join(quoted)}, {NEAR_WORDS})") if every else set()
    phrase = idx.matching(fts.quote(" ".join(words))) if near else set()
    return [
        (
            score
            * (1 + ALL_BONUS * (rowid in every))
            * (1 + NEAR_BONUS * (rowid in near))
            * (1 + PHRASE_BONUS * (rowid in phrase)),
            rel,
        )
        for score, rowid, rel in rows
    ]
