"""Ranked search across every readable root, on their persistent indexes (docs/tools.md).

`search()` gives each root that grants read its index (beside the audit log,
`index_dir`), lets `app.fs.index.fulltext.ranked.rank_root` refresh and query it within one
call's BUILD_SECONDS, merges the roots' candidates by score, and keeps only the
paths `fts.verify` still finds under today's rules; then files whose words
merely start with a short query word (`app.fs.index.fulltext.ranked.prefixed`). The index's
identity (what its content depends on: the root, its rules, the server's own
files) comes from the config, so a change to any of them rebuilds the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator

from app.config_checks import contains
from app.fs.control import Control
from app.fs.index.fulltext import fts
from app.fs.index.fulltext import ranked as per_root
from app.fs.index.fulltext.query import Query
from app.registry import Snapshot
from app.security import deny
from app.security.resolve import Root

BUILD_SECONDS = 20.0  # index work one search may do before answering from what is indexed

Found = tuple[list[tuple[str, str]], int, list[str]]  # (root, path) best first, matched, notes


def index_dir(snap: Snapshot) -> str:
    """Beside the audit log: the server's state directory ($XDG_STATE_HOME/loom-fs-mcp)."""
    return os.path.join(os.path.dirname(snap.config.audit_log), "index")


def dir_problem(snap: Snapshot) -> str | None:
    return snap.once("ranked.dir_problem", lambda: _dir_problem(snap))


def _dir_problem(snap: Snapshot) -> str | None:
    where = index_dir(snap)
    for root in snap.config.roots:  # every root, whichever a client's view shows
        if contains(root.real, where):
            seen = f"root '{root.name}'" if root.name in snap.roots else "a root"
            return f"the index directory would be inside {seen}"
    return None


def identity(snap: Snapshot, root: Root, per_file: int) -> str:
    """Everything an index's content depends on: when it changes, the index is rebuilt.
    Fixed for a snapshot (its rules, the root's open handle): computed once for each."""
    return snap.once(("ranked.identity", root.name, per_file),
                     lambda: _identity(snap, root, per_file))


def _identity(snap: Snapshot, root: Root, per_file: int) -> str:
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


def readable_roots(snap: Snapshot) -> Iterator[tuple[Root, int]]:
    """Each root `search` may read (audited as a search of its top), with the size above
    which one of its files is not read."""
    limits = snap.limits
    for root in snap.roots.values():
        if "read" not in root.permissions:
            continue
        root.authorize("", perm="read", op="search")
        root.record("ALLOW", "", "search")
        yield root, min(limits.max_search_file_bytes or root.max_read_bytes, root.max_read_bytes)


def search(snap: Snapshot, query: Query, control: Control, cap: int) -> Found:
    """The best `cap` (root, path) for `query`, how many files matched, and notes on
    anything left out (a build still under way)."""
    deadline = time.monotonic() + BUILD_SECONDS
    where = index_dir(snap)
    fts.ensure_dir(where)
    pool: list[tuple[float, str, str]] = []
    roots: dict[str, tuple[Root, fts.RootIndex]] = {}
    notes: list[str] = []
    matched = 0
    for root, per_file in readable_roots(snap):
        idx = fts.index_at(os.path.join(where, fts.file_name(root.name, root.real)))
        roots[root.name] = (root, idx)
        ranked, n, done = per_root.rank_root(
            idx, root, query, identity=identity(snap, root, per_file), per_file=per_file,
            deadline=deadline, control=control,
        )
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
    for _, name, rel in pool:
        if len(results) == cap:
            break
        if fts.verify(roots[name][0], rel):
            results.append((name, rel))
    more = _second_tier(roots, list(query.terms), cap, results, control)
    return results, max(matched + more, len(results)), notes


def _second_tier(
    roots: dict[str, tuple[Root, fts.RootIndex]],
    terms: list[str],
    cap: int,
    results: list[tuple[str, str]],
    control: Control,
) -> int:
    """Fill `results` up to `cap` with files whose words merely start with a query word
    (`env` -> environment.md); how many were added."""
    prefix_terms = [t for t in terms if len(t) >= 3]
    if len(results) >= cap or not prefix_terms:
        return 0
    listed = set(results)
    added = 0
    for name, (root, idx) in roots.items():
        for rel in per_root.prefixed(idx, prefix_terms, cap * 2, control):
            if len(results) == cap:
                break
            if (name, rel) not in listed and fts.verify(root, rel):
                results.append((name, rel))
                listed.add((name, rel))
                added += 1
    return added
