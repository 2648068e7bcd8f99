"""A repository's objects, read only from files opened beneath the call's `.git/objects`.

The repository is untrusted (see `gitdir.py` for the threat model). Every
open is `openat(dir_fd, name, O_NOFOLLOW)` relative to a handle that came from
the call's `.git` handle: pack and index files, loose objects. The objects are
read by the server's own bounded decoders (`loose.py`, `packidx.py`,
`packs.py`, `chains.py`), never by a library given a path or a whole file:

- a size in a header is a claim: content is inflated in pieces up to what the
  read asks for (`raw.Want`), and a stream longer or shorter than its claim is
  refused as corrupt without being inflated further;
- a delta chain is checked link by link before anything is built (`chains.py`);
- every object read whole is checked against its id, so the object graph has
  no cycles;
- every byte inflated or built in one call is counted (`Meter`, `CALL_WORK`):
  no sequence of objects, each within its bounds, keeps a call busy for long.

Not protected: a pack whose index lists an object twice (the first is read).
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections import OrderedDict
from dataclasses import replace

from app.errors import TooLarge
from app.fs.history import chains, loose
from app.fs.history.errors import (
    CorruptObject,
    Meter,
    ObjectMissing,
    ObjectTooLarge,
    RepoRefused,
    short,
)
from app.fs.history.packs import Pack
from app.fs.history.raw import BLOB, MIB, NAMES, Raw, Want
from app.fs.text.textio import pread_all
from app.security import ops
from app.security.resolve import DIR_FLAGS, FILE_FLAGS

__all__ = ["HEX", "MAX_OBJECT", "MAX_TREE", "ObjectTooLarge", "RepoRefused",
           "RootObjectStore", "open_dir_at", "read_small"]

HEX = frozenset(b"0123456789abcdef")
MAX_OBJECT = 64 * MIB  # no commit or tag claiming more is read
MAX_TREE = 16 * MIB  # trees are read whole: no larger one is read
MAX_PACKS = 200  # two descriptors each, held for the call
CALL_WORK = 512 * MIB  # bytes one call may inflate and build from the repository
BASE_CACHE = 8 * MIB  # delta results kept per call, so the next version reuses them
CACHE_ITEM = 2 * MIB


def _open_at(dir_fd: int, name: str, flags: int) -> int:
    return ops.open_at(dir_fd, name, flags)


def read_small(dir_fd: int, name: str, limit: int) -> bytes | None:
    """A regular file's bytes (at most `limit`), or None when it does not exist."""
    try:
        fd = _open_at(dir_fd, name, FILE_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise RepoRefused(f"'.git/{name}' is a symbolic link; not read") from None
        if exc.errno == errno.ENOTDIR:
            return None
        raise
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            raise RepoRefused(f"'.git/{name}' is not a regular file")
        data = pread_all(fd, limit + 1)
        if len(data) > limit:
            raise RepoRefused(f"'.git/{name}' is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def open_dir_at(dir_fd: int, name: str) -> int | None:
    """A real directory (no link) in an open one, or None when there is none."""
    try:
        return _open_at(dir_fd, name, DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise RepoRefused(f"'.git/{name}' is not a real directory; not read") from None
        raise


def _valid(sha: bytes) -> bool:
    return len(sha) == 40 and set(sha) <= HEX


class RootObjectStore:
    """The objects of one repository, for one call."""

    def __init__(self, objects_fd: int, work: int | None = None) -> None:
        self._objects_fd = objects_fd
        self.meter = Meter(CALL_WORK if work is None else work)
        self._pack_fd = open_dir_at(objects_fd, "pack")
        self._fds: list[int] = []
        self._packs: list[Pack] | None = None
        self._cache: OrderedDict[tuple[int, int], tuple[int, bytes]] = OrderedDict()
        self._cached = 0
        self._verified: set[bytes] = set()

    # -- reading -------------------------------------------------------------

    def read(self, sha: bytes, want: Want) -> Raw:
        """The object `sha` within `want`; ObjectMissing, CorruptObject, ObjectTooLarge."""
        if not _valid(sha):
            raise ObjectMissing(sha)
        if want.verify and sha in self._verified:  # its id was checked in this call already
            want = replace(want, verify=False)
        found = self.locate(sha)
        got = (chains.read(self, found[0], found[1], sha, want) if found is not None
               else loose.read(self._objects_fd, sha, want, self.meter))
        if got is None:
            raise ObjectMissing(sha)
        if want.verify and len(self._verified) < 100_000:
            self._verified.add(sha)
        return got

    def kind_and_size(self, sha: bytes) -> tuple[int, int] | None:
        """An object's kind and size from its headers (nothing large is inflated), or None."""
        if not _valid(sha):
            return None
        found = self.locate(sha)
        if found is not None:
            return chains.kind_and_size(self, found[0], found[1], sha)
        return loose.kind_and_size(self._objects_fd, sha, self.meter)

    def size(self, sha: bytes) -> int | None:
        got = self.kind_and_size(sha)
        return None if got is None else got[1]

    def has(self, sha: bytes) -> bool:
        if not _valid(sha):
            return False
        if self.locate(sha) is not None:
            return True
        with loose.opened(self._objects_fd, sha) as fd:
            return fd is not None

    def blob(self, sha: bytes, limit: int) -> bytes:
        """A file's whole bytes; TooLarge when its size (its header's, or its delta's) is
        above `limit`; ObjectTooLarge, naming it, when what it is built from is too large."""
        got = self.kind_and_size(sha)
        if got is None:
            raise ObjectMissing(sha)
        if got[1] > limit:
            raise TooLarge(f"the file is {got[1]} bytes, above {limit}")
        raw = self.read(sha, Want(cap=limit, limit=limit))
        if raw.kind != BLOB:
            raise CorruptObject(sha, f"a file names a {NAMES[raw.kind]}")
        return raw.data

    def blob_start(self, sha: bytes, budget: int) -> bytes:
        """A file's first `budget + 1` bytes at most (a read within `budget` needs no more);
        the rest of a file of any size stays compressed (one stored as a delta is rebuilt,
        within `chains.py`'s limits)."""
        raw = self.read(sha, Want(cap=budget + 1, limit=1 << 62, verify=False))
        if raw.kind != BLOB:
            raise CorruptObject(sha, f"a file names a {NAMES[raw.kind]}")
        return raw.data

    # -- abbreviated ids: names only, nothing inflated -------------------------

    def loose_prefix(self, prefix: str) -> set[bytes]:
        return set(loose.with_prefix(self._objects_fd, prefix, 2))

    def packed_prefix(self, prefix: str) -> set[bytes]:
        found: set[bytes] = set()
        for pack in self.packs():
            found.update(pack.index.with_prefix(prefix, 2))
            if len(found) > 1:
                break
        return found

    # -- packs ----------------------------------------------------------------

    def locate(self, sha: bytes) -> tuple[Pack, int] | None:
        raw = bytes.fromhex(sha.decode("ascii"))
        for pack in self.packs():
            offset = pack.index.offset(raw)
            if offset is not None:
                return pack, offset
        return None

    def packs(self) -> list[Pack]:
        if self._packs is None:
            self._packs = self._open_packs()
        return self._packs

    def _open_packs(self) -> list[Pack]:
        if self._pack_fd is None:
            return []
        with ops.scandir(self._pack_fd) as it:
            names = {entry.name for entry in it}
        bases = sorted(n[:-5] for n in names if n.endswith(".pack") and n[:-5] + ".idx" in names)
        if len(bases) > MAX_PACKS:
            raise RepoRefused(f"more than {MAX_PACKS} pack files; repack the repository")
        out = []
        for base in bases:
            idx_fd = self._open_file(base + ".idx")
            data_fd = self._open_file(base + ".pack")
            if idx_fd is not None and data_fd is not None:
                out.append(Pack(idx_fd, data_fd, base))
        return out

    def _open_file(self, name: str) -> int | None:
        assert self._pack_fd is not None
        try:
            fd = _open_at(self._pack_fd, name, FILE_FLAGS)
        except FileNotFoundError:
            return None  # removed by a concurrent repack
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise RepoRefused(f"'.git/objects/pack/{name}' is a symbolic link; not read") \
                    from None
            raise
        self._fds.append(fd)
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            raise RepoRefused(f"'.git/objects/pack/{name}' is not a regular file")
        return fd

    # -- what chains.py asks of the store ---------------------------------------

    def cached_base(self, key: tuple[int, int]) -> tuple[int, bytes] | None:
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
        return got

    def keep_base(self, key: tuple[int, int], kind: int, data: bytes) -> None:
        if len(data) > CACHE_ITEM or key in self._cache:
            return
        self._cache[key] = (kind, data)
        self._cached += len(data)
        while self._cached > BASE_CACHE:
            _, (_, old) = self._cache.popitem(last=False)
            self._cached -= len(old)

    def loose_base(self, sha: bytes, of: bytes) -> tuple[int, bytes] | None:
        """A reference delta's base stored loose (read whole, within the base limit)."""
        if not _valid(sha):
            return None
        try:
            raw = loose.read(self._objects_fd, sha, Want(cap=chains.MAX_BASE,
                                                           limit=chains.MAX_BASE), self.meter)
        except ObjectTooLarge:
            raise ObjectTooLarge(f"object {short(of)} is stored as a change to an object above "
                                 f"{chains.MAX_BASE} bytes") from None
        return None if raw is None else (raw.kind, raw.data)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._packs = None
        if self._pack_fd is not None:
            os.close(self._pack_fd)
            self._pack_fd = None


