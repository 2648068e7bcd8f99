"""The full-text index's two ways into a root: opening a listed file to index it, and
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
from app.security import admission, ops
from app.security.paths import split_request
from app.security.resolve import Root

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


def open_listed(name: str, dir_fd: int, now: Callable[[], int], window: int | None = None
                ) -> tuple[int, Signature] | None:
    """A listed file opened by name from the walk's own directory handle (the caller closes
    the descriptor), with the signature to store; None when it is no longer a regular
    file. A signature too young to trust (`now` minus its times under `window`, RACY_NS
    unless given) is stored as STALE, so the next refresh reads the file again: a second
    change within the same clock tick leaves it as it was (the trigram index gives the
    dirty window of pages written through a map, `watch.RACY_WINDOW_NS`)."""
    try:
        fd = ops.open_file(dir_fd, name)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if now() - max(st.st_mtime_ns, st.st_ctime_ns) < (RACY_NS if window is None else window):
        sig = stale(sig)
    return fd, sig


def stale(sig: Signature) -> Signature:
    """A signature that never matches the file's: it is read again at the next refresh."""
    return (sig[0], STALE, sig[2], sig[3])


def verify(root: Root, rel: str) -> bool:
    """Is `rel` (from the index) still a regular file the walk would reach under today's
    rules? Deny on every component, no link at any step, confined. Nothing is audited:
    this is a filter on search results, not an access."""
    try:
        parts = split_request(rel)
    except LoomError:  # a path no index of ours holds: planted
        return False
    if not parts or root.rules.path(parts) is not None:  # before the disk (`named` again after)
        return False
    try:
        dir_fd = root.open_subdir(parts[:-1])
    except OSError:
        return False
    try:
        fd = ops.open_file(dir_fd, parts[-1])
    except OSError:
        return False
    finally:
        os.close(dir_fd)
    try:
        return admission.named(root.rules, parts, os.fstat(fd))
    finally:
        os.close(fd)
