"""`search` and `fetch` for ChatGPT deep research and company knowledge.

OpenAI's connector contract: `search(query)` -> `{results: [{id, title, url}]}`,
`fetch(id)` -> `{id, title, text, url, metadata}`. Neither takes a root, so an
id is `root/relative/path` and a search covers every root that grants read.

The ways in are the same as every other tool's: search walks with
`app.security.walk.Walker` (denied names pruned before descending and
invisible, symlinks never followed, files opened by name from the walk's own
directory handle), and fetch opens through `SecureRoot.open_file`
(permission, confinement, deny on the request *and* on the in-root target).
A denied file is therefore neither found nor fetched. What this does not
protect against is the same as elsewhere: filtering is by name, so a secret
written into an allowed file is readable.

Ranking (SPEC §4.6): BM25 over code-aware words (`app.fs.tokens`) with the
path and the title as boosted fields, a bonus when the query's words occur as
a phrase or near each other, then files whose words merely start with a query
word (`app.fs.ranked`). It runs on a persistent full-text index per root (`app.fs.fts`),
refreshed before every search, so the whole root is covered and a change made
by anyone is seen by the next search; every hit is re-checked against today's
rules and the disk before it is returned. Without FTS5, or when the index
cannot be opened or written (read-only or full state directory, an index
directory inside a root), the search scans the root as before (`scan_search`)
and the answer's `note` says why.

The scan: case-insensitive words; a file matches when at least one word occurs
in its root-relative path or its text. Best first: the whole query as a
phrase, then the most distinct words, then words in the path, then
occurrences, then walk order (deterministic).

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

import heapq
import os
import sqlite3
import stat as stat_mod
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from app.errors import BadArgument, BinaryFile, os_error
from app.fs import fts, ranked, textio, tokens
from app.fs.paging import Control, cut_to, dumps
from app.fs.tokens import as_text
from app.security.resolve import FILE_FLAGS
from app.security.walk import FILE, Walker

if TYPE_CHECKING:
    from app.registry import Snapshot

RESULTS = 50  # a ranked list longer than this helps no model
MAX_TERMS = 32
CHECK_EVERY = 256  # entries between two cancellation checks
PROGRESS_EVERY = 0.5  # seconds between progress notifications (when the client asked)


def doc_url(base: str | None, root: str, rel: str) -> str:
    return f"{base.rstrip('/')}/{quote(root)}/{quote(rel)}" if base else ""


def terms_of(query: str) -> list[str]:
    words = list(dict.fromkeys(w.casefold() for w in query.split()))
    if not words:
        raise BadArgument("query is empty: give one or more words to look for")
    if len(words) > MAX_TERMS:
        raise BadArgument(f"query has {len(words)} distinct words; at most {MAX_TERMS}")
    # One-letter words match nearly everything; keep them only if nothing else is left.
    return [w for w in words if len(w) > 1] or words


# -- search ------------------------------------------------------------------


def search(snap: Snapshot, query: str, control: Control) -> dict[str, Any]:
    """Ranked search on the index; the scan, with a note, when the index cannot serve."""
    terms_of(query)  # the same argument errors either way
    if not tokens.query_terms(query):  # only punctuation: the scan matches it literally
        return scan_search(snap, query, control)
    problem = fts.fts5_problem() or ranked.dir_problem(snap)
    if problem is None:
        cap = min(RESULTS, snap.limits.max_search_results)
        try:
            found, matched, notes = ranked.search(snap, query, control, cap)
            return _answer(snap, found, matched, cap, notes)
        except fts.Unavailable as exc:
            problem = str(exc)
        except sqlite3.DatabaseError as exc:
            problem = f"the search index cannot be used ({_sqlite_reason(exc)})"
    return scan_search(
        snap, query, control, fallback=f"{problem}; searched by scanning the files instead"
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
    snap: Snapshot, query: str, control: Control, *, fallback: str | None = None
) -> dict[str, Any]:
    """The search without an index: a walk that reads every file, ranked by phrase, then
    distinct words, then words in the path, then occurrences."""
    terms = terms_of(query)
    phrase = " ".join(query.split()).casefold()
    limits = snap.limits
    cap = min(RESULTS, limits.max_search_results)
    budget = limits.max_search_bytes
    scanned = 0
    over_budget = False  # some file's text was not scanned for lack of budget
    best: list[tuple[tuple[int, ...], str, str]] = []  # a min-heap of the `cap` best
    order = matched = 0
    next_progress = time.monotonic() + PROGRESS_EVERY
    for root, per_file in ranked.readable_roots(snap):
        walker = Walker(root, ())
        for entry in walker:
            order += 1
            if order % CHECK_EVERY == 0:
                control.check()
                if time.monotonic() >= next_progress:
                    control.progress(order, None, f"{order} entries examined, {matched} matches")
                    next_progress = time.monotonic() + PROGRESS_EVERY
            if entry.kind != FILE:
                continue
            rel = entry.path
            path_text = rel.casefold()
            in_path = {t for t in terms if t in path_text}
            found, count, whole = set(in_path), len(in_path), phrase in path_text
            if len(in_path) < len(terms) or not whole:
                text, used, late = _content(entry.name, entry.dir_fd, per_file, budget - scanned)
                scanned += used
                over_budget = over_budget or late
                if text is not None:
                    for t in terms:
                        n = text.count(t)
                        if n:
                            found.add(t)
                            count += n
                    whole = whole or phrase in text
            if not found:
                continue
            matched += 1
            score = (int(whole), len(found), len(in_path), min(count, 10_000), -order)
            item = (score, root.name, rel)
            if len(best) < cap:
                heapq.heappush(best, item)
            elif item > best[0]:
                heapq.heapreplace(best, item)
    in_order = sorted(best, reverse=True)
    short = []
    if over_budget:
        short.append(
            f"the content budget (max_search_bytes = {budget}) ran out: later files were "
            "matched by their path only; use more specific words"
        )
    listed = [(r, rel) for _, r, rel in in_order]
    return _answer(snap, listed, matched, cap, short, info=fallback)


def _content(name: str, dir_fd: int, per_file: int, left: int) -> tuple[str | None, int, bool]:
    """A walked file's case-folded text (None when not scanned), bytes read, and
    whether it went unscanned for lack of budget. Too large, binary, unreadable or
    no longer a regular file: matched by path only, and not a budget matter."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:  # gone, swapped for a link, unreadable
        return None, 0, False
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size > per_file:
            return None, 0, False
        if st.st_size > left:
            return None, 0, True
        data = textio.pread_all(fd, min(per_file, left))
    except OSError:
        return None, 0, False
    finally:
        os.close(fd)
    decoded = as_text(data, True)
    if decoded is None:
        return None, len(data), False
    return decoded[0].casefold(), len(data), False


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
    notes = []
    if cut_bytes:
        notes.append(
            f"only the first {limit} bytes of {max(size, len(data))} were read "
            f"(the root's max_read_bytes)"
        )
    metadata: dict[str, Any] = {
        "root": root.name,
        "path": rel,
        "size": size,
        "modified": datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat(),
        "encoding": enc,
        "truncated": cut_bytes,
    }
    doc = {
        "id": f"{root.name}/{rel}",
        "title": rel,
        "text": text,
        "url": doc_url(snap.limits.public_base_url, root.name, rel),
        "metadata": metadata,
    }
    return _bound(doc, text, notes, snap.limits.max_output_chars)


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
