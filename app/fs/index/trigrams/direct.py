"""A search the trigram index answers without a walk: its candidates opened one by one.

Taken when the index may be trusted as it is (`TrigramIndex.trusted_watch`: a complete
build walked the tree under a watch that has lost nothing since) and the call filters as
the build did (ignore files honoured, no `exclude`). The files read are the index's
candidates (`ids`), every file it holds without its text (larger than it reads), every
file the watch saw changed, and every file with other links whose signature moved since
the last walk (`changed`: the kernel reports a write to the folder of the name used only):
in walk order (breadth-first, names sorted), under the call's
start folder, kept by its `file_glob`. Each is reached through the choke point as the walk
reaches it: its folder opened beneath the root with no link followed, the deny rules asked
of its path, the server's own files left out by identity. The searcher then reads and
matches it as in a scan.

When the candidates pass `SHARE` of the files the index holds, this gives up: a walk costs
little next to reading that many files, and a scan answers the same.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Iterable, Iterator

from app.fs.filters.ignore import KINDS, Filter
from app.fs.index.trigrams.entry import KEY_AT, KEY_MASK, Entry, key
from app.security import admission, ops
from app.security.admission import Folder
from app.security.deny import DenyRules
from app.security.resolve import Root

SHARE = 0.5
MOST_NEW = 256  # files the index never saw, judged one by one; past it the call walks


def _order(path: str) -> tuple[int, tuple[str, ...], str]:
    """Where the walk lists a file: by its folder's depth, the folder's parts, its name."""
    parts = path.split("/")
    return len(parts), tuple(parts[:-1]), parts[-1]


def candidates(found: list[str], total: int, dirty: set[str], start: tuple[str, ...],
               keep: Callable[[str, str], bool]) -> list[str] | None:
    """The paths to read (`found`: the index's, of `total` it holds; `dirty`: changed), in
    walk order, under `start`, kept by the glob; None when the files to read, each counted
    once, pass SHARE of the files indexed."""
    every = {*found, *dirty}  # a changed file the index holds is one file, counted once
    if len(every) > SHARE * max(total, 1):
        return None
    under = "/".join(start) + "/" if start else ""
    strip = len(under)
    chosen = {p for p in every if p.startswith(under)}
    return sorted((p for p in chosen if keep(p[strip:], p.rsplit("/", 1)[-1])), key=_order)


def _by_folder(paths: Iterable[str]) -> dict[str, list[str]]:
    by_folder: dict[str, list[str]] = {}
    for p in paths:
        parent, _, name = p.rpartition("/")
        by_folder.setdefault(parent, []).append(name)
    return by_folder


def unlisted(root: Root, paths: list[str]) -> set[str] | None:
    """Of new files the watch saw in folders the build walked, those the ignore files hide
    from a walk: the ignore files of each one's folders read as the walk reads them (their
    changes break the watch, so they are the build's). None when a folder cannot be opened
    or listed: this cannot judge, and the call walks (which says what it could not read).
    So too when a new file has another link, listed or not (an ignored name is written
    through as well): a hard link made to a file the index holds, which then changes through
    either name with no event for the other (the walk compares every file's signature). The
    deny rules, links and the server's own files are `folders`' to refuse, as for every
    candidate."""
    hidden: set[str] = set()
    for parent, names in _by_folder(paths).items():
        prefix = parent + "/" if parent else ""
        got = _listed(root, tuple(parent.split("/")) if parent else (), set(names))
        if got is None or got[1]:
            return None
        hidden.update(prefix + n for n in names if n not in got[0])
    return hidden


def _linked(entry: os.DirEntry[str]) -> bool:
    """A file with more than one name (or one that cannot be looked at: judged so). Its
    folder must still be open: the entry is looked at from it."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return True
    return stat_mod.S_ISREG(st.st_mode) and st.st_nlink > 1


def changed(root: Root, paths: Iterable[str], view: dict[str, Entry]) -> set[str] | None:
    """Of `paths` (files the last walk found with more than one link: written through
    another name, maybe outside the root, they change with no event in their folder),
    those whose signature is no longer the one they were indexed at (or that are gone),
    each looked at with one `stat` from its folder opened through the choke point. None
    when a folder cannot be opened or a file cannot be looked at, or an ignore file
    changed (what a walk lists may have changed with it): the call walks."""
    out: set[str] = set()
    for parent, names in _by_folder(paths).items():
        prefix = parent + "/" if parent else ""
        parts = tuple(parent.split("/")) if parent else ()
        if root.rules.path(parts) is not None:
            continue  # denied since: never read (`folders`)
        try:
            fd = root.open_subdir(parts)
        except OSError:
            return None
        try:
            for n in names:
                try:
                    st = ops.lstat(fd, n)
                except FileNotFoundError:
                    out.add(prefix + n)
                    continue
                e = view.get(prefix + n)
                if e is None or key(st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                    st.st_ino) != e >> KEY_AT & KEY_MASK:
                    if n in KINDS:  # an ignore file: what the build walked may have changed
                        return None
                    out.add(prefix + n)
        except OSError:
            return None
        finally:
            os.close(fd)
    return out


def pruned(root: Root, prefix: str, name: str, made: bool) -> bool:
    """A folder made (`made`) or gone in a watched folder that the walk never enters: the
    deny rules refuse its path (the trash, a `.aws`), or, when made, ignore files hide it
    (a `build/`). Such a change does not break the watch; any other folder change does."""
    parts = tuple(prefix.rstrip("/").split("/")) if prefix else ()
    if root.rules.path((*parts, name)) is not None:
        return True
    if not made:
        return False
    listed = _listed(root, parts, {name})
    return listed is not None and name not in listed[0]  # could not look: the watch breaks


def _listed(root: Root, parts: tuple[str, ...], names: set[str]
            ) -> tuple[set[str], bool] | None:
    """Which of `names` in the folder `parts` a walk would list, ignore files applied, and
    whether any of `names`, listed or not, is a file with other links (`_linked`, looked at
    while the folder is open); None when the folder cannot be opened or listed."""
    filt = Filter(root, parts, (), False)  # the ignore files of the folders above
    try:
        fd = root.open_subdir(parts)
    except OSError:
        return None
    try:
        with ops.scandir(fd) as it:
            entries = sorted((e for e in it if e.name in names or e.name in KINDS),
                             key=lambda e: e.name)
        linked = any(_linked(e) for e in entries if e.name in names)
        return {e.name for e in filt(parts, fd, entries) if e.name in names}, linked
    except OSError:
        return None
    finally:
        os.close(fd)


def folders(root: Root, paths: list[str], unopened: list[str]) -> Iterator[Folder]:
    """Each candidate's folder, opened through the choke point, with the candidates in it
    that the rules allow; each descriptor closed once the searcher has moved on. A folder
    that cannot be opened is added to `unopened` (its files are not read: the answer says
    so, as a walk says what it could not read)."""
    rules = root.rules
    i = 0
    while i < len(paths):
        parent = paths[i].rsplit("/", 1)[0] if "/" in paths[i] else ""
        prefix = parent + "/" if parent else ""
        names: list[str] = []
        while i < len(paths) and paths[i].startswith(prefix) and "/" not in paths[i][len(prefix):]:
            names.append(paths[i][len(prefix):])
            i += 1
        parts = tuple(parent.split("/")) if parent else ()
        if rules.path(parts) is not None:
            continue
        try:
            fd = root.open_subdir(parts)
        except OSError:
            unopened.append(prefix)
            continue
        try:
            yield Folder(fd, prefix, [n for n in names if _allowed(rules, parts, n, fd)])
        finally:
            os.close(fd)


def _allowed(rules: DenyRules, parts: tuple[str, ...], name: str, fd: int) -> bool:
    try:
        st = ops.lstat(fd, name)
    except OSError:
        return False
    return admission.named(rules, (*parts, name), st)
