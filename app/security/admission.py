"""Which entries a walk may show: one decision, whether the entry was listed or named.

An entry is visible when no deny rule matches its name or its path (`DenyRules`), and
it is not one of the server's own files (the config, the token, the audit logs) under
any name, told by identity (`Protected`). The walk asks `listed` of each folder it
lists; the index's walk-less answer (`fs/index/trigrams/direct.py`) and the check of an indexed
path (`fs/index/access.py`) ask `named` of a file they reach by its path. Both ask
`Known.holds`, the one identity test (the choke point's `check_identity` too), so that
no copy of it can drift. The type test
(a walk hands on regular files, never links) is `named`'s too: a listed entry's type
is its `DirEntry`'s.

`Folder` is what a walk hands on to the code that reads files: one folder's descriptor
(valid only while it is current), its walk path prefix and the names of its files.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterable
from typing import NamedTuple

from app.security.deny import DenyRules

_inode = os.DirEntry.inode


class Folder(NamedTuple):
    """One folder's files, as a walk hands them on."""

    fd: int  # the open folder; valid only while this one is current
    prefix: str  # "" or "a/b/": a file's walk path is `prefix + name`
    names: list[str]  # its files to read, in walk order


def listed(rules: DenyRules, parts: tuple[str, ...], fd: int,
           entries: Iterable[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    """The entries of the folder `parts` (open at `fd`) that may be seen, in their order.

    A denied name costs one cached match; the whole-path rules are asked only when some
    exist; the identities only when an inode number matches (one set test per folder),
    then one `fstat` of the folder for its device."""
    denied = rules.name
    kept = [e for e in entries if denied(e.name) is None]
    if rules.protects_whole_paths():
        kept = [e for e in kept if rules.prefixes((*parts, e.name)) is None]
    known = rules.identities.known if rules.identities is not None else None
    if known is not None and not known.inodes.isdisjoint(map(_inode, kept)):
        dev = os.fstat(fd).st_dev
        holds = known.holds
        kept = [e for e in kept if not holds(dev, e.inode())]
    return kept


def named(rules: DenyRules, parts: tuple[str, ...], st: os.stat_result) -> bool:
    """Whether the file at `parts` (reached by its path, `st` its own `lstat` or the
    `fstat` of what was opened with no link followed) is one a walk would hand on: not
    denied on any component, a regular file, not the server's own."""
    if rules.path(parts) is not None or not stat_mod.S_ISREG(st.st_mode):
        return False
    return rules.identities is None or not rules.identities.known.holds(st.st_dev, st.st_ino)


__all__ = ["Folder", "listed", "named"]
