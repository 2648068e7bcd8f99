"""A root's `.git`, opened through the root's handle, and its objects and refs.

Threat model: the repository is untrusted (cloned from anywhere, or crafted);
other local processes may swap entries inside the root while a call runs.

- `.git` is opened once per call with `SecureRoot.open_subdir` (no link at any
  step, beneath the root handle). A `.git` link, or a `.git` *file* (`gitdir:`,
  a worktree or submodule pointing elsewhere), is refused; so is a `commondir`
  file and an `objects/info/alternates` list: both would read objects and refs
  from outside the root.
- Every later open is `openat(dir_fd, name, O_NOFOLLOW)` relative to a handle
  that came from that `.git` handle: pack and index files, loose objects, refs.
  The git library (dulwich) is given open file objects, never a path, so a
  `.git` renamed or replaced during a call cannot make it read another
  repository, and a link planted inside `.git` is not followed.
- Nothing is ever executed: no `git` process, no hooks, filters, textconv,
  pagers or fsmonitor. Only dulwich's object and pack parsers are used (not its
  `Repo`, porcelain, config or filter code), and the config file is not read
  except to refuse SHA-256 repositories.

Not protected: a hard link inside `.git` to another repository's pack (it is
indistinguishable from the file); replace refs and grafts are ignored (history
is shown as recorded).
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat as stat_mod
import zlib
from collections.abc import Iterator
from typing import Any

from dulwich.object_format import SHA1
from dulwich.object_store import PackBasedObjectStore
from dulwich.objects import ShaFile
from dulwich.pack import Pack, PackData, load_pack_index_file

from app.errors import LoomError, NotFound, os_error
from app.security.resolve import DIR_FLAGS, FILE_FLAGS, SecureRoot

HEX = frozenset(b"0123456789abcdef")
MAX_REF_BYTES = 4096
MAX_PACKED_REFS = 64 * 1024 * 1024
MAX_LOOSE_OBJECT = 256 * 1024 * 1024
MAX_OBJECT = 64 * 1024 * 1024  # no object larger than this is inflated
MAX_PACKS = 200  # two descriptors each, held for the call
DELTA_CACHE = 16 * 1024 * 1024  # resolved delta bases kept per pack (dulwich's default: 96 MiB)


class RepoRefused(LoomError):
    rule = "git"


class BadObject(LoomError):
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
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise RepoRefused(f"'.git/{name}' is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_dir_at(dir_fd: int, name: str) -> int | None:
    try:
        return _open_at(dir_fd, name, DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
            raise RepoRefused(f"'.git/{name}' is not a real directory; not read") from None
        raise


def _open_beneath(gitfd: int, rel: str) -> int:
    """A directory under `.git`, opened one component at a time with no link followed."""
    fd = os.dup(gitfd)
    try:
        for part in rel.split("/"):
            nxt = _open_at(fd, part, DIR_FLAGS)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


class RootObjectStore(PackBasedObjectStore):
    """dulwich's pack-based store, fed only with files opened beneath `objects/`."""

    def __init__(self, objects_fd: int) -> None:
        super().__init__(object_format=SHA1)
        self._objects_fd = objects_fd
        self._pack_fd = _open_dir_at(objects_fd, "pack")
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
            return None if fd is None else _packed_size(fd, offset)
        head = self._loose_head(hexsha)
        if head is None:
            return None
        try:
            return int(head.split(b"\0", 1)[0].split(b" ", 1)[1])
        except (IndexError, ValueError):
            return None

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


def _varint_size(buf: bytes, pos: int) -> tuple[int, int]:
    """A delta header's size (little-endian base-128), and the position after it."""
    size = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return size, pos


def _packed_size(fd: int, offset: int) -> int | None:
    """The size of the object at `offset` in a pack: its header, or for a delta the
    result size at the start of the (inflated) delta data."""
    buf = os.pread(fd, 64, offset)
    if not buf:
        return None
    byte = buf[0]
    kind = (byte >> 4) & 7
    size = byte & 0x0F
    shift, pos = 4, 1
    while byte & 0x80:
        byte = buf[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
    if kind not in (6, 7):  # not a delta: the header holds the size
        return size
    if kind == 6:  # OFS_DELTA: skip the base offset
        while buf[pos] & 0x80:
            pos += 1
        pos += 1
    else:  # REF_DELTA: skip the base id
        pos += 20
    data = os.pread(fd, 512, offset + pos)
    try:
        head = zlib.decompressobj().decompress(data, 32)
        _base, p = _varint_size(head, 0)
        result, _ = _varint_size(head, p)
    except (zlib.error, IndexError):
        return None
    return result


_REF_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$")


def valid_ref_name(name: str) -> bool:
    if not _REF_NAME.match(name) or len(name) > 255:
        return False
    parts = name.split("/")
    return all(p and not p.startswith(".") and not p.endswith(".lock") for p in parts) and (
        ".." not in name
    )


class GitDir:
    """The `.git` of one root, opened for one call. Use as a context manager."""

    def __init__(self, root: SecureRoot, *, op: str) -> None:
        self.root = root
        self.fd = self._open(root, op)
        self.objects_fd: int | None = None
        self.store: RootObjectStore | None = None
        try:
            self._check()
            self.objects_fd = _open_dir_at(self.fd, "objects")
            if self.objects_fd is None:
                raise RepoRefused(f"root '{root.name}': .git has no objects directory")
            self.store = RootObjectStore(self.objects_fd)
            self._packed: dict[str, bytes] | None = None
            self.shallow = self._read_shallow()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _open(root: SecureRoot, op: str) -> int:
        name = root.name
        try:
            fd = root.open_subdir((".git",))
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                msg = f"root '{name}' holds no git repository (no .git directory at its top)"
                root.record("DENY", ".git", op, NotFound(msg))
                raise NotFound(msg) from None
            try:
                st = os.stat(".git", dir_fd=root.handle.fd, follow_symlinks=False)
            except OSError:
                raise os_error(exc, ".git") from None
            if stat_mod.S_ISLNK(st.st_mode):
                why = ".git is a symbolic link"
            elif stat_mod.S_ISREG(st.st_mode):
                why = ".git is a file (a 'gitdir:' pointer to a repository elsewhere)"
            else:
                why = ".git is not a directory"
            err = RepoRefused(
                f"root '{name}': {why}; only a real .git directory inside the root is read"
            )
            root.record("DENY", ".git", op, err)
            raise err from None
        root.record("ALLOW", ".git", op)
        return fd

    def _check(self) -> None:
        name = self.root.name
        if read_small(self.fd, "commondir", MAX_REF_BYTES) is not None:
            raise RepoRefused(
                f"root '{name}': .git/commondir points to another repository's directory; not read"
            )
        objects = _open_dir_at(self.fd, "objects")
        if objects is not None:
            try:
                info = _open_dir_at(objects, "info")
                if info is not None:
                    try:
                        alt = read_small(info, "alternates", MAX_REF_BYTES)
                    finally:
                        os.close(info)
                    if alt and alt.strip():
                        raise RepoRefused(
                            f"root '{name}': the repository borrows objects from elsewhere "
                            "(objects/info/alternates); not read"
                        )
            finally:
                os.close(objects)
        config = read_small(self.fd, "config", 1 << 20) or b""
        if re.search(rb"(?im)^\s*objectformat\s*=\s*sha256\b", config):
            raise RepoRefused(f"root '{name}': SHA-256 repositories are not supported")

    def _read_shallow(self) -> frozenset[bytes]:
        data = read_small(self.fd, "shallow", MAX_PACKED_REFS) or b""
        return frozenset(line.strip() for line in data.splitlines() if len(line.strip()) == 40)

    # -- refs ------------------------------------------------------------------

    def read_ref_file(self, name: str) -> bytes | None:
        """The content of a loose ref (`HEAD`, `refs/heads/x`), opened with no link."""
        parts = name.split("/")
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                try:
                    nxt = _open_at(fd, part, DIR_FLAGS)
                except OSError:
                    return None
                os.close(fd)
                fd = nxt
            try:
                return read_small(fd, parts[-1], MAX_REF_BYTES)
            except RepoRefused:
                return None
            except OSError as exc:
                if exc.errno == errno.EISDIR:
                    return None
                raise
        finally:
            os.close(fd)

    def loose_ref_names(self, limit: int) -> list[str]:
        """Names of the loose refs under `refs/` (no link followed), at most `limit`."""
        names: list[str] = []
        top = _open_dir_at(self.fd, "refs")
        if top is None:
            return names
        todo: list[tuple[int, str]] = [(top, "refs")]
        try:
            while todo:
                fd, prefix = todo.pop()
                try:
                    with os.scandir(fd) as it:
                        entries = [(e.name, e.is_dir(follow_symlinks=False),
                                    e.is_file(follow_symlinks=False)) for e in it]
                finally:
                    os.close(fd)
                for name, is_dir, is_file in sorted(entries):
                    if len(names) >= limit:
                        return names
                    if is_dir:
                        try:
                            sub = f"{prefix}/{name}"
                            todo.append((_open_beneath(self.fd, sub), sub))
                        except OSError:
                            continue
                    elif is_file:
                        names.append(f"{prefix}/{name}")
        finally:
            for fd, _ in todo:
                os.close(fd)
        return names

    def packed_refs(self) -> dict[str, bytes]:
        if self._packed is None:
            data = read_small(self.fd, "packed-refs", MAX_PACKED_REFS) or b""
            refs: dict[str, bytes] = {}
            for line in data.splitlines():
                if not line or line[:1] in (b"#", b"^"):
                    continue
                sha, _, ref = line.partition(b" ")
                if len(sha) == 40:
                    refs[ref.decode("utf-8", "replace").strip()] = sha
            self._packed = refs
        return self._packed

    def ref(self, name: str, depth: int = 0) -> bytes | None:
        """The object id a ref name points to (symbolic refs followed), or None."""
        if depth > 5 or not valid_ref_name(name):
            return None
        raw = self.read_ref_file(name)
        if raw is not None:
            raw = raw.strip()
            if raw.startswith(b"ref:"):
                return self.ref(raw[4:].strip().decode("utf-8", "replace"), depth + 1)
            if len(raw) == 40 and set(raw) <= HEX:
                return raw
            return None
        return self.packed_refs().get(name)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        if self.objects_fd is not None:
            os.close(self.objects_fd)
            self.objects_fd = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> GitDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def has_repository(root: SecureRoot) -> bool:
    """Whether the root's top folder has a `.git` entry (of any kind: a link or a
    `gitdir:` file registers the tools too, so the refusal can be explained)."""
    try:
        os.stat(".git", dir_fd=root.handle.fd, follow_symlinks=False)
    except OSError:
        return False
    return True
