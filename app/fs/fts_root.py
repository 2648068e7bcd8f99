"""The full-text index's two ways into a root: reading a listed file to index it, and
checking a candidate path before it is returned.

Both go through handles, never a path string: a file is opened by name from
the walk's own directory handle (`O_NOFOLLOW`); a candidate is opened again
under today's rules (deny on every component, no link at any step, a regular
file, not one of the server's own files). What the index holds is never an
answer: a stale, tampered or planted index can cost a miss, never a denied
path.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable

from app.errors import LoomError
from app.fs import textio, tokens
from app.security.paths import split_request
from app.security.resolve import FILE_FLAGS, SecureRoot

RACY_NS = 2_000_000_000
STALE = -1  # a stored mtime that never matches: re-read at the next refresh

Signature = tuple[int, int, int, int]  # size, mtime, ctime, inode


def storable(rel: str) -> bool:
    """Whether a listed path can be stored (UTF-8: no surrogate-escaped bytes)."""
    if rel.isascii():
        return True
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read(
    name: str, dir_fd: int, per_file: int, now: Callable[[], int]
) -> tuple[str, Signature | None]:
    """A listed file's text ('' when binary, too large or unreadable) and the signature to
    store; None when it is no longer a regular file. A signature too young to trust
    (`now` minus its times under RACY_NS) is stored as STALE, so the next refresh reads
    the file again: a second change within the same clock tick leaves it as it was."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return "", None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            return "", None
        sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if now() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
            sig = (st.st_size, STALE, st.st_ctime_ns, st.st_ino)
        if st.st_size > per_file:
            return "", sig
        try:
            data = textio.pread_all(fd, per_file)
        except OSError:
            return "", (st.st_size, STALE, st.st_ctime_ns, st.st_ino)
    finally:
        os.close(fd)
    decoded = tokens.as_text(data, True)  # the decision fetch makes too
    return "" if decoded is None else decoded[0], sig


def verify(root: SecureRoot, rel: str) -> bool:
    """Is `rel` (from the index) still a regular file the walk would reach under today's
    rules? Deny on every component, no link at any step, confined. Nothing is audited:
    this is a filter on search results, not an access."""
    try:
        parts = split_request(rel)
    except LoomError:  # a path no index of ours holds: planted
        return False
    if not parts or root.rules.path(parts) is not None:
        return False
    try:
        dir_fd = root.open_subdir(parts[:-1])
    except OSError:
        return False
    try:
        fd = os.open(parts[-1], FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        ids = root.rules.identities  # the server's own files under another name
        return stat_mod.S_ISREG(st.st_mode) and not (ids is not None and ids.hit(st))
    finally:
        os.close(fd)
