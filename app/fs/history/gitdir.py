"""A root's `.git`, opened through the root's handle, and its refs.

Threat model: the repository is untrusted (cloned from anywhere, or crafted);
other local processes may swap entries inside the root while a call runs.

- `.git` is opened once per call with `Root.open_subdir` (no link at any
  step, beneath the root handle). A `.git` link, or a `.git` *file* (`gitdir:`,
  a worktree or submodule pointing elsewhere), is refused; so is a `commondir`
  file and an `objects/info/alternates` list: both would read objects and refs
  from outside the root.
- Every later open is `openat(dir_fd, name, O_NOFOLLOW)` relative to a handle
  that came from that `.git` handle: pack and index files, loose objects, refs,
  the index. Objects are parsed by the server's own bounded decoders
  (`store.py`), from those descriptors only, so a `.git` renamed or replaced
  during a call cannot make it read another repository, and a link planted
  inside `.git` is not followed.
- Nothing is ever executed: no `git` process, no hooks, filters, textconv,
  pagers or fsmonitor. Of dulwich only `apply_delta` is used (on bytes the
  server read and checked), and the config file is not read except to refuse
  SHA-256 repositories. Refs are read as bytes: `packed-refs` (up to 16 MiB) is
  searched, never parsed into a table.

Not protected: a hard link inside `.git` to another repository's pack (it is
indistinguishable from the file); replace refs and grafts are ignored (history
is shown as recorded).
"""

from __future__ import annotations

import errno
import os
import re
import stat as stat_mod
from collections.abc import Iterator
from contextlib import contextmanager

from app.errors import NotFound, os_error
from app.fs.history.store import HEX, RepoRefused, RootObjectStore, open_dir_at, read_small
from app.security import ops
from app.security.handles import open_below
from app.security.resolve import Root

MAX_REF_BYTES = 4096
MAX_PACKED_REFS = 16 * 1024 * 1024  # kept as bytes and searched, never parsed into a table
MAX_SHALLOW = 1024 * 1024  # 25,000 boundary commits


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

    def __init__(self, root: Root, *, op: str) -> None:
        self.root = root
        self.fd = self._open(root, op)
        self.objects_fd: int | None = None
        self.store: RootObjectStore | None = None
        try:
            self._check()
            self.objects_fd = open_dir_at(self.fd, "objects")
            if self.objects_fd is None:
                raise RepoRefused(f"root '{root.name}': .git has no objects directory")
            self.store = RootObjectStore(self.objects_fd)
            self._packed: bytes | None = None
            self.shallow = self._read_shallow()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _open(root: Root, op: str) -> int:
        name = root.name
        try:
            fd = root.open_subdir((".git",))
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                msg = f"root '{name}' holds no git repository (no .git directory at its top)"
                root.record("DENY", ".git", op, NotFound(msg))
                raise NotFound(msg) from None
            try:
                st = ops.lstat(root.handle.fd, ".git")
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
        objects = open_dir_at(self.fd, "objects")
        if objects is not None:
            try:
                info = open_dir_at(objects, "info")
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
        data = read_small(self.fd, "shallow", MAX_SHALLOW) or b""
        return frozenset(line.strip() for line in data.splitlines() if len(line.strip()) == 40)

    # -- refs ------------------------------------------------------------------

    def read_ref_file(self, name: str) -> bytes | None:
        """The content of a loose ref (`HEAD`, `refs/heads/x`), opened with no link."""
        parts = name.split("/")
        try:
            fd = open_below(self.fd, parts[:-1])
        except OSError:
            return None
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
        top = open_dir_at(self.fd, "refs")
        if top is None:
            return names
        todo: list[tuple[int, str]] = [(top, "refs")]
        try:
            while todo:
                fd, prefix = todo.pop()
                try:
                    with ops.scandir(fd) as it:
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
                            todo.append((open_below(self.fd, sub.split("/")), sub))
                        except OSError:
                            continue
                    elif is_file:
                        names.append(f"{prefix}/{name}")
        finally:
            for fd, _ in todo:
                os.close(fd)
        return names

    def _packed_bytes(self) -> bytes:
        if self._packed is None:
            data = read_small(self.fd, "packed-refs", MAX_PACKED_REFS) or b""
            self._packed = data if data.endswith(b"\n") or not data else data + b"\n"
        return self._packed

    def packed_ref(self, name: str) -> bytes | None:
        """The id `packed-refs` gives for `name`, found in its bytes."""
        data = self._packed_bytes()
        needle = b" " + name.encode("utf-8") + b"\n"
        at = data.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            sha = data[start:at]
            if len(sha) == 40 and set(sha) <= HEX:
                return sha
            at = data.find(needle, at + 1)
        return None

    def packed_targets(self) -> Iterator[bytes]:
        """Every id in `packed-refs` (peeled tag lines left out), one line at a time."""
        data = self._packed_bytes()
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            line = data[start:end]
            start = end + 1
            if line[:1] not in (b"#", b"^") and len(line) > 41 and line[40:41] == b" ":
                sha = line[:40]
                if set(sha) <= HEX:
                    yield sha

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
        return self.packed_ref(name)

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


def has_repository(root: Root) -> bool:
    """Whether the root's top folder has a `.git` entry (of any kind: a link or a
    `gitdir:` file registers the tools too, so the refusal can be explained)."""
    try:
        ops.lstat(root.handle.fd, ".git")
    except OSError:
        return False
    return True


@contextmanager
def opened(root: Root, op: str) -> Iterator[GitDir]:
    """The root's repository for one call of `op` (the root itself must be readable)."""
    root.authorize("", perm="read", op=op)
    git = GitDir(root, op=op)
    try:
        yield git
    finally:
        git.close()
