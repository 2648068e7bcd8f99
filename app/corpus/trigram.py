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

import apsw

from app.config import LoadedConfig
from app.config_checks import contains
from app.corpus import ranked
from app.fs.filters.glob import Glob
from app.fs.index.storage import file_name
from app.fs.index.trigrams import trigram, trigram_build
from app.fs.index.trigrams.narrow import Keeper, Scope, narrowing
from app.fs.search.needs import Folder, Narrow, Narrowed, Needs
from app.fs.search.walk import Walk
from app.registry import Snapshot
from app.security.resolve import Root

_keepers: dict[str, Keeper] = {}
_lock = threading.Lock()


def index_path(snap: Snapshot, root: Root) -> str:
    return _file(ranked.index_dir(snap), root.name, root.real)


def _file(where: str, name: str, real: str) -> str:
    return os.path.join(where, file_name(name, real).replace(".sqlite3", ".trigram.sqlite3"))


def check_lines(loaded: LoadedConfig) -> list[str]:
    """`--check`: each root's index as its file tells it (read only; no build runs here)."""
    if not loaded.model.search_index:
        return []
    where = os.path.join(os.path.dirname(loaded.audit_log), "index")
    lines = []
    for r in loaded.roots:
        head = f"search index of root '{r.name}': "
        inside = next((o.name for o in loaded.roots if contains(o.real, where)), None)
        if inside is not None:
            lines.append(head + f"none (the index directory would be inside root '{inside}')")
            continue
        try:
            got = trigram.summary(_file(where, r.name, r.real))
        except (OSError, apsw.Error) as exc:
            lines.append(head + f"unreadable ({exc}); the next build replaces it")
            continue
        if got is None:
            lines.append(head + "not built yet (the first search_text call starts it)")
            continue
        done = "complete" if got.complete else "not complete (the next search resumes it)"
        if got.files >= trigram_build.MOST_FILES:
            done = "full (the most a root's index holds: searches read the other files)"
        lines.append(head + f"{got.files} files, {got.bytes} bytes on disk, {done}")
    return lines


def keeper_of(path: str) -> Keeper:
    """The process's one `Keeper` (and so one index) for an index file."""
    with _lock:
        k = _keepers.get(path)
        if k is None:
            k = _keepers[path] = Keeper(trigram.index_at(path))
        return k


def close_all() -> None:
    """The server stops: every build stopped between two files (what it committed stays:
    the next server resumes it), every index's connection and watch closed."""
    with _lock:
        keepers = list(_keepers.values())
        _keepers.clear()
    for k in keepers:
        k.close()


def identity(snap: Snapshot, root: Root) -> str:
    def make() -> str:
        base = ranked.identity(snap, root, 0)
        return hashlib.sha256(f"{trigram.SCHEMA}\0{base}".encode()).hexdigest()

    return snap.once(("trigram.identity", root.name), make)


def narrow_for(snap: Snapshot, root: Root) -> Narrow | None:
    """What narrows a `search_text` call on `root`, or None (no index: a scan)."""
    if not snap.limits.search_index or ranked.dir_problem(snap) or trigram.problem():
        return None
    return narrow_of(keeper_of(index_path(snap, root)), root, identity(snap, root))


def narrow_of(keeper: Keeper, root: Root, rules: str) -> Narrow:
    """`search_text`'s `Narrow` over the index `keeper` keeps for `root`, built under the
    rules `rules` names (`identity`); benchmarks and tests use it with an index of their own."""
    inner = narrowing(keeper.idx, keeper, root, rules)

    def narrow(needs: Needs, walk: Walk, glob: Glob, dirs: Iterator[Folder], resumed: bool
               ) -> Narrowed | None:
        filt = walk.filt
        plain = filt.use_ignore and not filt.exclude and not resumed  # else: no walk-less answer
        scope = Scope(walk.walker.start, glob.matches, plain)
        got = inner(needs.strings, needs.fold, dirs, scope)
        return None if got is None else Narrowed(*got)

    return narrow
