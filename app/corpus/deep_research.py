"""`search` and `fetch` for ChatGPT deep research and company knowledge.

OpenAI's connector contract: `search(query)` -> `{results: [{id, title, url}]}`,
`fetch(id)` -> `{id, title, text, url, metadata}`. Neither takes a root, so an
id is `root/relative/path` and a search covers every root that grants read.

The ways in are the same as every other tool's (`app.fs.index.fulltext.documents`: the walk,
`Root.open_file`), so a denied file is neither found nor fetched. What
this does not protect against is the same as elsewhere: filtering is by name,
so a secret written into an allowed file is readable.

Ranking (docs/tools.md): BM25 over code-aware words (`app.fs.index.fulltext.tokens`) with the
path and the title as boosted fields, a bonus when the query's words occur as
a phrase or near each other, then files whose words merely start with a query
word (`app.corpus.ranked`, one root at a time in `app.fs.index.fulltext.ranked`). It runs on a
persistent full-text index per root (`app.fs.index.fulltext.fts`), refreshed before every
search, so the whole root is covered and a change made by anyone is seen by the
next search; every hit is re-checked against today's rules and the disk before
it is returned. Without FTS5, or when the index cannot be opened or written
(read-only or full state directory, an index directory inside a root), the
search scans the roots as before (`scan_search`, `app.fs.index.fulltext.documents.Scan`) and
the answer's `note` says why.

Budgets: the scan's content is capped by `max_search_bytes` per call (after
that only paths are matched, and the result says so with `truncated` and a
`note`); with the index, that budget does not apply (only changed files are
read) and a refresh stops after BUILD_SECONDS instead (a first build goes on
at the next search; the answer says how far it got). A file above
`max_search_file_bytes` (default: the root's `max_read_bytes`) or binary is
matched by its path only; results are capped by `max_search_results` (at most
RESULTS) and by `max_output_chars`. Fetch reads at most the root's
`max_read_bytes` and answers at most `max_output_chars`; a cut text ends with
a visible marker and the metadata says `truncated: true` with a note.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from app.corpus import ranked
from app.errors import BadArgument
from app.fs.control import Control
from app.fs.index.fulltext import fts
from app.fs.index.fulltext import query as query_mod
from app.fs.index.fulltext.documents import Scan, read_document
from app.fs.index.fulltext.query import Query
from app.fs.text.paging import cut_to, dumps
from app.registry import Snapshot

RESULTS = 50  # a ranked list longer than this helps no model


def doc_url(base: str | None, root: str, rel: str) -> str:
    return f"{base.rstrip('/')}/{quote(root)}/{quote(rel)}" if base else ""


# -- search ------------------------------------------------------------------


def search(snap: Snapshot, query: str, control: Control) -> dict[str, Any]:
    """Ranked search on the index; the scan, with a note, when the index cannot serve."""
    parsed = query_mod.parse(query)  # the same argument errors either way
    if parsed.literal_only:
        return scan_search(snap, parsed, control)
    problem = fts.fts5_problem() or ranked.dir_problem(snap)
    if problem is None:
        cap = min(RESULTS, snap.limits.max_search_results)
        try:
            found, matched, notes = ranked.search(snap, parsed, control, cap)
            return _answer(snap, found, matched, cap, notes)
        except fts.Unavailable as exc:
            problem = str(exc)
        except sqlite3.DatabaseError as exc:
            problem = f"the search index cannot be used ({_sqlite_reason(exc)})"
    return scan_search(
        snap, parsed, control, fallback=f"{problem}; searched by scanning the files instead"
    )


def _sqlite_reason(exc: sqlite3.Error) -> str:
    # SQLite's messages name no paths ("database or disk is full", "attempt to write a
    # readonly database"); keep only the first line to be sure.
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _answer(
    snap: Snapshot,
    found: list[tuple[str, str]],
    matched: int,
    cap: int,
    short: list[str],
    *,
    info: str | None = None,
) -> dict[str, Any]:
    """The published shape; `truncated` and `note` only when something was left out
    (`short`), or a `note` alone when the search ran another way (`info`)."""
    limits = snap.limits
    results = [
        {"id": f"{r}/{rel}", "title": rel, "url": doc_url(limits.public_base_url, r, rel)}
        for r, rel in found
    ]
    notes = []
    if matched > len(results):
        notes.append(
            f"{matched} files matched; only the best {cap} are listed "
            f"(the cap is max_search_results, at most {RESULTS}); use more specific words"
        )
    notes.extend(short)
    kept = _fit(results, limits.max_output_chars)
    if kept < len(results):
        notes.append(
            f"{len(results) - kept} more of them were left out to fit max_output_chars "
            f"({limits.max_output_chars}); use more specific words"
        )
        results = results[:kept]
    out: dict[str, Any] = {"results": results}
    if notes:
        out["truncated"] = True
    if info:
        notes.insert(0, info)
    if notes:
        out["note"] = "; ".join(notes)
    return out


def scan_search(
    snap: Snapshot, query: str | Query, control: Control, *, fallback: str | None = None
) -> dict[str, Any]:
    """The search without an index: a walk of every readable root that reads every file,
    ranked by phrase, then distinct words, then words in the path, then occurrences."""
    limits = snap.limits
    cap = min(RESULTS, limits.max_search_results)
    parsed = query if isinstance(query, Query) else query_mod.parse(query)
    scan = Scan(list(parsed.scan_words), parsed.phrase, cap, limits.max_search_bytes, control)
    for root, per_file in ranked.readable_roots(snap):
        scan.root(root, per_file)
    short = []
    if scan.over_budget:
        short.append(
            f"the content budget (max_search_bytes = {scan.budget}) ran out: later files "
            "were matched by their path only; use more specific words"
        )
    return _answer(snap, scan.best_first(), scan.matched, cap, short, info=fallback)


def _fit(results: list[dict[str, str]], cap: int) -> int:
    """How many results fit in `cap` characters, keeping room for the note."""
    total = len('{"results":[]}') + 512
    for n, item in enumerate(results):
        total += len(dumps(item)) + 1
        if total > cap:
            return n
    return len(results)


# -- fetch -------------------------------------------------------------------


def fetch(snap: Snapshot, doc_id: str) -> dict[str, Any]:
    root_name, sep, rel = doc_id.partition("/")
    if not sep or not root_name or not rel.strip("/"):
        raise BadArgument(
            f"invalid id '{doc_id[:200]}': expected 'root/relative/path' as returned by search"
        )
    root = snap.root(root_name)
    doc = read_document(root, rel)
    notes = []
    if doc.cut:
        notes.append(
            f"only the first {doc.limit} bytes of {max(doc.size, doc.read)} were read "
            f"(the root's max_read_bytes)"
        )
    metadata: dict[str, Any] = {
        "root": root.name,
        "path": doc.rel,
        "size": doc.size,
        "modified": datetime.fromtimestamp(doc.mtime, tz=timezone.utc).isoformat(),
        "encoding": doc.encoding,
        "truncated": doc.cut,
    }
    answer = {
        "id": f"{root.name}/{doc.rel}",
        "title": doc.rel,
        "text": doc.text,
        "url": doc_url(snap.limits.public_base_url, root.name, doc.rel),
        "metadata": metadata,
    }
    return _bound(answer, doc.text, notes, snap.limits.max_output_chars)


def _bound(doc: dict[str, Any], text: str, notes: list[str], cap: int) -> dict[str, Any]:
    """Cut the text so the whole answer fits `cap` characters; say so in text and metadata."""
    if notes:
        doc["metadata"]["note"] = "; ".join(notes)
        doc["text"] = text + _marker(notes)
    # A text longer than the cap cannot fit: never dump it whole (8 MiB of control
    # characters would be a 48 MB JSON string just to learn that).
    if len(doc["text"]) <= cap and len(dumps(doc)) <= cap:
        return doc
    notes = [*notes, f"the text was cut to fit max_output_chars ({cap})"]
    marker = _marker(notes)
    doc["metadata"].update(truncated=True, note="; ".join(notes))
    doc["text"] = ""
    room = cap - len(dumps(doc)) - len(dumps(marker)) + 2
    doc["text"] = cut_to(text, room) + marker
    return doc


def _marker(notes: list[str]) -> str:
    return f"\n[... truncated: {'; '.join(notes)}]"
