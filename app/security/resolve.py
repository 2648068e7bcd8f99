"""`Root`: one configured root and the only ways to reach inside it.

Every path goes: permission -> syntax and lexical confinement -> deny on the
requested path -> resolution through the root's directory handle -> deny on
the resolved in-root target. Nothing here ever opens a joined path string:
the fast path is `openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)` from the root
handle; when a symlink is in the way (or openat2 is missing) a component walk
opens one name at a time with `O_NOFOLLOW` and `dir_fd`, reads each link with
`readlinkat`, and continues from the handle it came from (absolute in-root
targets restart from the root handle). `..` never reaches the disk: requests
are normalised lexically, and `..` inside link targets pops the walk's own
stack of handles, so a directory renamed elsewhere cannot lead outside.

Callers get handles, never strings: `open_file` (a regular file, read-only),
`open_dir` (a directory), `open_parent` (the parent directory of an entry to
create, replace, rename or unlink, whose final name is *not* followed), and
`open_subdir` (no links at all, for the walk).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import stat as stat_mod
from typing import TYPE_CHECKING

from app.errors import (
    DeniedName,
    EscapesRoot,
    InvalidPath,
    LoomError,
    NotADirectory,
    NotARegularFile,
    RootGone,
    SymlinkLoop,
    os_error,
)
from app.security import openat2
from app.security.handles import (
    DIR_FLAGS,
    FILE_FLAGS,
    DirHandle,
    OpenedDir,
    OpenedFile,
    Parent,
    check_regular,
    open_below,
)
from app.security.paths import join, split_request
from app.security.policy import FromPolicy, Policy, PolicyArgs

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

MAX_SYMLINK_HOPS = 40


class Root:
    """One root: its policy (`Policy`: name, role, permissions, deny rules, the server's own
    files, audit), composed, and its directory handle. Every way into the root asks the
    policy first and audits through it; what the policy holds is read here (`FromPolicy`:
    typed as the policy's, read-only on the root)."""

    # What the policy holds, read-only here.
    name = FromPolicy(lambda p: p.name)
    role = FromPolicy(lambda p: p.role)
    permissions = FromPolicy(lambda p: p.permissions)
    rules = FromPolicy(lambda p: p.rules)
    max_read_bytes = FromPolicy(lambda p: p.max_read_bytes)
    recovery = FromPolicy(lambda p: p.recovery)

    def __init__(self, *, real: str, **policy: Unpack[PolicyArgs]) -> None:
        self.policy = Policy(**policy)
        self.real = real  # host path: for the operator's eyes only, never sent to a client
        self.handle = DirHandle(real)
        st = os.fstat(self.handle.fd)
        self._identity = (st.st_dev, st.st_ino)
        self._use_openat2 = openat2.available()

    def narrowed(self, permissions: tuple[str, ...]) -> Root:
        """This root as a client granted `permissions` on it sees it: the same handle and
        identity, the policy's permissions intersected with the grant (`Policy.narrowed`)."""
        view = copy.copy(self)
        view.policy = self.policy.narrowed(permissions)
        return view

    def unaudited(self) -> Root:
        """This root with the same handle and checks, recording no audit line
        (`Policy.unaudited`)."""
        view = copy.copy(self)
        view.policy = self.policy.unaudited()
        return view

    def record(self, decision: str, rel: str, op: str, exc: LoomError | None = None) -> None:
        """One audit line of a decision made outside the four ways in (a copy's refusal)."""
        self.policy.record(decision, rel, op, exc)

    def describe(self) -> dict[str, object]:
        return self.policy.describe()

    # -- checks done before the disk --------------------------------------

    def authorize(self, path: str, *, perm: str, op: str) -> tuple[str, ...]:
        """Permission, syntax, lexical confinement and deny on the request."""
        shown = path if isinstance(path, str) else "?"
        try:
            self.check_alive()
            self.policy.permit(perm)
            parts = split_request(path)
            shown = join(parts)
            self.policy.check_deny(parts)
        except LoomError as exc:
            self.policy.record("DENY", shown, op, exc)
            raise
        return parts

    def check_alive(self) -> None:
        """Refuse when the root's folder was deleted or replaced since its handle was opened.

        The handle still points at the old directory, where listings are empty and
        creates fail: a wrong answer, not an error, unless caught here. One stat of
        the root's path per call (docs/measured.md).
        """
        try:
            st = os.stat(self.real)
        except OSError:
            raise RootGone(self.name) from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise RootGone(self.name)

    def fresh_top(self) -> int:
        """A new open file description of the root's top directory.

        Never a `dup` of the root handle: dups share one directory offset, so two
        walks reading through them read each other's position (short or empty
        listings under concurrency).
        """
        return os.open(".", DIR_FLAGS, dir_fd=self.handle.fd)

    # -- the four ways in --------------------------------------------------

    def open_file(self, path: str, *, op: str, perm: str = "read") -> OpenedFile:
        """A regular file, opened read-only; in-root links followed."""
        parts = self.authorize(path, perm=perm, op=op)
        rel = join(parts)
        with self.policy.audited(rel, op):
            if not parts:
                raise NotARegularFile("not a regular file: the root is a directory")
            fd, phys = self._resolve(parts, FILE_FLAGS)
            try:
                st = os.fstat(fd)
                self.policy.check_identity(st)
                if stat_mod.S_ISDIR(st.st_mode):
                    raise NotARegularFile(f"not a regular file: '{rel}' is a directory")
                check_regular(st)
            except BaseException:
                os.close(fd)
                raise
        return OpenedFile(fd, rel, join(phys), st)

    def open_dir(self, path: str, *, op: str, perm: str = "read") -> OpenedDir:
        """A directory; in-root links followed."""
        parts = self.authorize(path, perm=perm, op=op)
        rel = join(parts)
        with self.policy.audited(rel, op):
            fd, phys = self._resolve(parts, None)
        return OpenedDir(fd, rel, tuple(phys))

    def open_parent(self, path: str, *, op: str, perm: str, create_parents: bool = False) -> Parent:
        """The directory that holds the entry `path` names, for a change there."""
        parts = self.authorize(path, perm=perm, op=op)
        rel = join(parts)
        with self.policy.audited(rel, op):
            if not parts:
                raise InvalidPath("the root itself cannot be changed")
            fd, phys = self._resolve(parts[:-1], None, create=create_parents)
            target = (*phys, parts[-1])
            try:
                self.policy.check_deny(target)
                if self.policy.identities is not None and self.policy.identities.ids:
                    try:
                        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        st = None
                    self.policy.check_identity(st)
            except BaseException:
                os.close(fd)
                raise
        return Parent(fd, parts[-1], rel, tuple(phys), target)

    def open_subdir(self, parts: tuple[str, ...]) -> int:
        """A directory found by the walk: no link is followed at any step."""
        if not parts:
            return self.fresh_top()
        if self._use_openat2:
            return openat2.open_beneath(self.handle.fd, join(parts), DIR_FLAGS)
        return open_below(self.handle.fd, parts)

    # -- resolution ---------------------------------------------------------

    def _resolve(
        self, parts: tuple[str, ...], file_flags: int | None, *, create: bool = False
    ) -> tuple[int, list[str]]:
        """Open `parts` (a directory when `file_flags` is None) beneath the root."""
        rel = join(parts)
        try:
            if self._use_openat2 and not create:
                try:
                    flags = DIR_FLAGS if file_flags is None else file_flags
                    fd = openat2.open_beneath(self.handle.fd, rel or ".", flags)
                    return fd, list(parts)
                except OSError as exc:
                    # ELOOP: a link on the way (or a loop), EXDEV: the kernel saw an
                    # escape attempt. The walk decides which, with a precise message.
                    if exc.errno not in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                        raise
            return self._walk(parts, file_flags, create)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a socket
                raise NotARegularFile() from None
            raise os_error(exc, rel) from None

    def _walk(
        self, parts: tuple[str, ...], file_flags: int | None, create: bool
    ) -> tuple[int, list[str]]:
        pending = list(parts)
        whole = self.rules.protects_whole_paths()
        stack = [self.fresh_top()]
        phys: list[str] = []
        hops = 0
        try:
            while pending:
                name = pending.pop(0)
                if name in ("", "."):
                    continue
                if name == "..":  # only from a link target: pop our own handle stack
                    if not phys:
                        raise EscapesRoot()
                    os.close(stack.pop())
                    phys.pop()
                    continue
                last = not pending
                flags = file_flags if last and file_flags is not None else DIR_FLAGS
                # Deny before any type check: a link to `.env` is denied, never
                # "not a directory" (which would tell what it is).
                hit = self.rules.name(name)
                if hit is None and whole:
                    hit = self.rules.prefixes((*phys, name))
                if hit is not None:
                    raise DeniedName(hit)
                try:
                    fd = os.open(name, flags, dir_fd=stack[-1])
                except OSError as exc:
                    if exc.errno == errno.ENOENT and create and (not last or file_flags is None):
                        self.policy.check_deny((*phys, name))
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, 0o777, dir_fd=stack[-1])
                        pending.insert(0, name)
                        continue
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    try:
                        target = os.readlink(name, dir_fd=stack[-1])
                    except OSError:
                        if exc.errno == errno.ENOTDIR:  # a file where a directory was asked
                            with contextlib.suppress(OSError):
                                self.policy.check_identity(
                                    os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                                )
                        raise exc from None
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise SymlinkLoop() from None
                    if os.path.isabs(target):
                        inside = self._inside(target)
                        for fd_ in stack[1:]:
                            os.close(fd_)
                        del stack[1:]
                        phys.clear()
                        pending[:0] = inside
                    else:
                        pending[:0] = target.split("/")
                    continue
                stack.append(fd)
                phys.append(name)
            hit = self.rules.prefixes(phys)
            if hit is not None:
                raise DeniedName(hit)
            return stack.pop(), phys
        finally:
            for fd_ in stack:
                os.close(fd_)

    def _inside(self, target: str) -> list[str]:
        """Components of an absolute link target below the root, or an escape."""
        # Compared component by component: a string prefix would let `root-evil` in.
        mine = [p for p in self.real.split(os.sep) if p]
        theirs = [p for p in os.path.normpath(target).split(os.sep) if p]
        if theirs[: len(mine)] != mine:
            raise EscapesRoot()
        return theirs[len(mine) :]


__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "DirHandle",
    "NotADirectory",
    "OpenedDir",
    "OpenedFile",
    "Parent",
    "Root",
    "check_regular",
]
