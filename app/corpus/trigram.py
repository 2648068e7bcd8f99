"""The trigram index of a root for `search_text`, when the config turns it on
(`search_index = true`, docs/configuration.md).

Its file goes beside the ranked-search index (`ranked.index_dir`: the state directory,
never inside a root; none is used when a root would hold it). Its identity is the ranked
index's (the root, its deny and allow rules, the server's own files, the floor) with the
trigram layout's name: when any of them changes, the next build starts the index again.
`narrow_for` answers what `search_text` takes (`app.fs.search.needs.Narrow`), or None: the
call scans as it would without an index.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator

from app.corpus import ranked
from app.fs.filters.glob import Glob
from app.fs.index import trigram
from app.fs.index.narrow import Keeper, Scope, narrowing
from app.fs.index.storage import file_name
from app.fs.search.needs import Folder, Narrow, Narrowed, Needs
from app.fs.search.walk import Walk
from app.registry import Snapshot
from app.security.resolve import SecureRoot

_keepers: dict[str, Keeper] = {}
_lock = threading.Lock()


def index_path(snap: Snapshot, root: SecureRoot) -> str:
    name = file_name(root.name, root.real).replace(".sqlite3", ".trigram.sqlite3")
    return os.path.join(ranked.index_dir(snap), name)


def keeper_of(path: str) -> Keeper:
    """The process's one `Keeper` (and so one index) for an index file."""
    with _lock:
        k = _keepers.get(path)
        if k is None:
            k = _keepers[path] = Keeper(trigram.index_at(path))
        return k


def identity(snap: Snapshot, root: SecureRoot) -> str:
    base = ranked.identity(snap, root, 0)
    return hashlib.sha256(f"{trigram.SCHEMA}\0{base}".encode()).hexdigest()


def narrow_for(snap: Snapshot, root: SecureRoot) -> Narrow | None:
    """What narrows a `search_text` call on `root`, or None (no index: a scan)."""
    if not snap.limits.search_index or ranked.dir_problem(snap) or trigram.problem():
        return None
    keeper = keeper_of(index_path(snap, root))
    inner = narrowing(keeper.idx, keeper, root, identity(snap, root))

    def narrow(needs: Needs, walk: Walk, glob: Glob, dirs: Iterator[Folder], resumed: bool
               ) -> Narrowed | None:
        filt = walk.filt
        plain = filt.use_ignore and not filt.exclude and not resumed  # else: no walk-less answer
        scope = Scope(walk.walker.start, glob.matches, plain)
        got = inner(needs.strings, needs.fold, dirs, scope)
        return None if got is None else Narrowed(*got)

    return narrow
