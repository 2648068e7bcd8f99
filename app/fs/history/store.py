"""A repository's objects, read only from files opened beneath the call's `.git/objects`.

The repository is untrusted (see `gitdir.py` for the threat model). Every
open is `openat(dir_fd, name, O_NOFOLLOW)` relative to a handle that came from
the call's `.git` handle: pack and index files, loose objects. dulwich's pack
and object parsers are given open file objects, never a path, and nothing is
inflated above `MAX_OBJECT` (its size is read from the header first,
`objsize.py`), so a crafted repository cannot make a call read elsewhere or
load a huge object.
"""

from __future__ import annotations

import errno
import io
import os
import stat as stat_mod
import zlib
from collections.abc import Iterator
from typing import Any

from dulwich.object_format import SHA1
from dulwich.object_store import PackBasedObjectStore
from dulwich.objects import Blob, ShaFile
from dulwich.pack import Pack, PackData, load_pack_index_file

from app.errors import LoomError, TooLarge
from app.fs.history.objsize import loose_size, packed_size
from app.fs.textio import pread_all
from app.security.resolve import DIR_FLAGS, FILE_FLAGS

HEX = frozenset(b"0123456789abcdef")
MAX_LOOSE_OBJECT = 256 * 1024 * 1024
MAX_OBJECT = 64 * 1024 * 1024  # no object larger than this is inflated
MAX_BLOB = 64 * 1024 * 1024  # a file larger than this is never loaded
MAX_PACKS = 200  # two descriptors each, held for the call
DELTA_CACHE = 16 * 1024 * 1024  # resolved delta bases kept per pack (dulwich's default: 96 MiB)


class RepoRefused(LoomError):
    rule = "git"


class ObjectTooLarge(LoomError):
    rule = "size"


def _open_at(dir_fd: int, name: str, flags: int) -> int:
    return os.open(name, flags, dir_fd=dir_fd)


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


class RootObjectStore(PackBasedObjectStore):
    """dulwich's pack-based store, fed only with files opened beneath `objects/`."""

    def __init__(self, objects_fd: int) -> None:
        super().__init__(object_format=SHA1)
        self._objects_fd = objects_fd
        self._pack_fd = open_dir_at(objects_fd, "pack")
        self._files: list[io.BufferedReader] = []
        self._pack_fds: dict[int, int] = {}

    def get_raw(self, name: Any) -> tuple[int, bytes]:
        """dulwich's read, refused above MAX_OBJECT before anything is inflated (a
        crafted repository may hold a tree or commit of any size)."""
        if len(name) == 40:
            size = self.size(name)
            if size is not None and size > MAX_OBJECT:
                raise ObjectTooLarge(
                    f"object {name.decode()[:12]} is {size} bytes, above {MAX_OBJECT}"
                )
        return super().get_raw(name)

    def object(self, sha: bytes) -> ShaFile:
        """The object with this hex id (KeyError when missing)."""
        return self[sha]  # type: ignore[index]

    def has(self, sha: bytes) -> bool:
        return sha in self  # type: ignore[operator]

    def blob(self, sha: bytes, limit: int | None = None) -> bytes:
        """A file's bytes; TooLarge above `limit` (MAX_BLOB), told by its header first."""
        limit = MAX_BLOB if limit is None else limit
        size = self.size(sha)
        if size is not None and size > limit:
            raise TooLarge(f"the file is {size} bytes, above {limit}")
        obj = self.object(sha)
        if not isinstance(obj, Blob):
            raise LoomError(f"object {sha.decode()[:12]} is not a file")
        data = obj.as_raw_string()
        if len(data) > limit:
            raise TooLarge(f"the file is {len(data)} bytes, above {limit}")
        return data

    # -- packs ------------------------------------------------------------

    def _update_pack_cache(self) -> list[Pack]:
        if self._pack_fd is None:
            return []
        names = set()
        with os.scandir(self._pack_fd) as it:
            for entry in it:
                names.add(entry.name)
        bases = sorted(
            n[: -len(".pack")] for n in names if n.endswith(".pack") and n[:-5] + ".idx" in names
        )
        if len(bases) > MAX_PACKS:
            raise RepoRefused(f"more than {MAX_PACKS} pack files; repack the repository")
        new: list[Pack] = []
        for base in bases:
            if base in self._pack_cache:
                continue
            pack = self._open_pack(base)
            if pack is None:
                continue
            self._pack_cache[base] = pack
            self._mark_pack_used(base)
            new.append(pack)
        return new

    def _open_file(self, dir_fd: int, name: str) -> io.BufferedReader | None:
        try:
            fd = _open_at(dir_fd, name, FILE_FLAGS)
        except FileNotFoundError:
            return None  # removed by a concurrent repack
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise RepoRefused(
                    f"'.git/objects/pack/{name}' is a symbolic link; not read"
                ) from None
            raise
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            os.close(fd)
            raise RepoRefused(f"'.git/objects/pack/{name}' is not a regular file")
        f = os.fdopen(fd, "rb")
        self._files.append(f)
        return f

    def _open_pack(self, base: str) -> Pack | None:
        assert self._pack_fd is not None
        idx_f = self._open_file(self._pack_fd, base + ".idx")
        data_f = self._open_file(self._pack_fd, base + ".pack")
        if idx_f is None or data_f is None:
            return None
        size = os.fstat(data_f.fileno()).st_size
        idx = load_pack_index_file(base + ".idx", idx_f, SHA1)
        data = PackData(base + ".pack", SHA1, file=data_f, size=size,
                        delta_base_cache_limit=DELTA_CACHE)
        pack = Pack.from_objects(data, idx)
        self._pack_fds[id(pack)] = data_f.fileno()
        return pack

    # -- loose objects -------------------------------------------------------

    def _loose_bytes(self, hexsha: str) -> bytes | None:
        try:
            sub = _open_at(self._objects_fd, hexsha[:2], DIR_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                return None  # a link is not an object directory
            raise
        try:
            return read_small(sub, hexsha[2:], MAX_LOOSE_OBJECT)
        except RepoRefused:
            return None
        finally:
            os.close(sub)

    def _get_loose_object(self, sha: Any) -> ShaFile | None:
        hexsha = sha.decode("ascii") if isinstance(sha, bytes) else str(sha)
        if len(hexsha) != 40 or not set(hexsha.encode()) <= HEX:
            return None
        raw = self._loose_bytes(hexsha)
        if raw is None:
            return None
        obj = ShaFile.from_file(io.BytesIO(raw), object_format=SHA1)
        if obj.id.decode() != hexsha:  # a file under the wrong name is not that object
            return None
        return obj

    def _iter_loose_objects(self) -> Iterator[Any]:
        with os.scandir(self._objects_fd) as it:
            subs = sorted(
                e.name for e in it if len(e.name) == 2 and e.is_dir(follow_symlinks=False)
            )
        for sub in subs:
            try:
                fd = _open_at(self._objects_fd, sub, DIR_FLAGS)
            except OSError:
                continue
            try:
                with os.scandir(fd) as it:
                    for e in it:
                        if len(e.name) == 38:
                            yield (sub + e.name).encode("ascii")
            finally:
                os.close(fd)

    def loose_prefix(self, prefix: str) -> set[bytes]:
        """Loose object ids starting with `prefix` (at least 2 hex digits)."""
        try:
            fd = _open_at(self._objects_fd, prefix[:2], DIR_FLAGS)
        except OSError:
            return set()
        try:
            with os.scandir(fd) as it:
                return {
                    (prefix[:2] + e.name).encode("ascii")
                    for e in it
                    if len(e.name) == 38 and e.name.startswith(prefix[2:])
                }
        finally:
            os.close(fd)

    def packed_prefix(self, prefix: str) -> set[bytes]:
        self._update_pack_cache()
        found: set[bytes] = set()
        even = prefix[: len(prefix) // 2 * 2]
        raw = bytes.fromhex(even)
        for pack in list(self._pack_cache.values()):
            for sha in pack.index.iter_prefix(raw):
                hexsha = sha.hex().encode("ascii")
                if hexsha.startswith(prefix.encode("ascii")):
                    found.add(hexsha)
                    if len(found) > 1:
                        return found
        return found

    def size(self, sha: bytes) -> int | None:
        """An object's size from its header, without inflating it (None: not found or
        not readable that way), so a huge blob is refused before it is loaded."""
        hexsha = sha.decode("ascii")
        for pack in list(self._pack_cache.values()) or self._update_pack_cache():
            try:
                offset = pack.index.object_offset(sha)  # type: ignore[arg-type]
            except KeyError:
                continue
            fd = self._pack_fds.get(id(pack))
            return None if fd is None else packed_size(fd, offset)
        head = self._loose_head(hexsha)
        return None if head is None else loose_size(head)

    def _loose_head(self, hexsha: str) -> bytes | None:
        if len(hexsha) != 40 or not set(hexsha.encode()) <= HEX:
            return None
        try:
            sub = _open_at(self._objects_fd, hexsha[:2], DIR_FLAGS)
        except OSError:
            return None
        try:
            fd = _open_at(sub, hexsha[2:], FILE_FLAGS)
        except OSError:
            return None
        finally:
            os.close(sub)
        try:
            if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                return None
            return zlib.decompressobj().decompress(os.pread(fd, 512, 0), 64)
        except zlib.error:
            return None
        finally:
            os.close(fd)

    def close(self) -> None:
        super().close()
        for f in self._files:
            f.close()
        self._files.clear()
        if self._pack_fd is not None:
            os.close(self._pack_fd)
            self._pack_fd = None
