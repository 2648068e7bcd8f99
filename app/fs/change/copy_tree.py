"""A folder copy: walk, check, then copy file by file.

The source folder is walked first (`app.security.walk.Walker`: breadth-first,
no recursion, denied names and whole-path rules of the source root pruned, so a
denied source is never opened, let alone read), within `MAX_COPY_ENTRIES`
entries looked at, `MAX_COPY_FILES` files and `MAX_COPY_BYTES` bytes; past
them the plan is cut, and the answer says so. Every planned path is then
checked against the destination root's rules: one denied there refuses the
whole copy before anything is written. A folder the walk cannot open or list
refuses the copy too (fail closed, as `app.fs.change.exposure` does for a move):
a copy that silently left out what it could not read would look complete.

Then the destination folder is made (it must not exist: a folder is copied only
to a new name, never merged into one), its subfolders (private until the end,
when each takes its source's permission bits, deepest first), and each file is
copied atomically (`app.fs.change.copying.copy_one`). Every folder is opened
from the copy's own top handles one name at a time with no link followed, on
either side. Links and special files are not copied, and counted. A crash or
a failure part way leaves the files already copied, each whole; the answer of
a failure says where the copy stopped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from app.errors import (
    AlreadyExists,
    BadArgument,
    DeniedName,
    LoomError,
    OSRefusal,
    TooDeep,
    os_error,
)
from app.fs.change.atomic import fsync_dir
from app.fs.change.copying import MAX_COPY_BYTES, Copied, copy_one
from app.fs.change.locks import changing
from app.fs.control import Control
from app.security.handles import open_below
from app.security.paths import MAX_DEPTH, join
from app.security.resolve import DIR_FLAGS, Parent, SecureRoot
from app.security.walk import DIR, FILE, SYMLINK, Walker, kind_of_entry

MAX_COPY_FILES = 10_000
MAX_COPY_ENTRIES = 100_000

Parts = tuple[str, ...]


@dataclass
class Outcome:
    truncated: bool
    text: str | None


@dataclass
class _Plan:
    dirs: list[tuple[Parts, int]]  # (path below the copied folder, mode), parents first
    files: list[Parts] = field(default_factory=list)
    bytes: int = 0
    links: int = 0
    others: int = 0
    cut: str | None = None  # why the plan stops short


def _plan(root: SecureRoot, src: Parent, dst: Parent, mode: int, control: Control) -> _Plan:
    """What to copy; TooDeep when an entry would lie past MAX_DEPTH at the destination (the
    walk goes no deeper than that)."""
    top = src.target_parts
    plan = _Plan(dirs=[((), mode)])
    allowance = MAX_DEPTH - len(dst.target_parts)  # levels the copy may hold below its top
    walker = Walker(root, top, max_depth=allowance + 1)
    for d in walker.dirs():
        control.check()
        if walker.unreadable_dirs:
            break
        below = d.parts[len(top) :]
        for entry in d.entries:
            kind = kind_of_entry(entry)
            if d.depth > allowance and kind in (DIR, FILE):
                raise TooDeep(
                    f"cannot copy '{src.rel}' to '{dst.rel}': what it holds would lie more "
                    f"than {MAX_DEPTH} levels below the root (the server makes paths at most "
                    f"{MAX_DEPTH} levels deep); nothing was copied"
                )
            if kind == DIR:
                plan.dirs.append(((*below, entry.name), entry.stat(follow_symlinks=False).st_mode))
            elif kind == FILE:
                size = entry.stat(follow_symlinks=False).st_size
                if len(plan.files) >= MAX_COPY_FILES or plan.bytes + size > MAX_COPY_BYTES:
                    plan.cut = (f"stopped at {len(plan.files)} files, {plan.bytes} bytes "
                                f"(a call copies at most {MAX_COPY_FILES} files, "
                                f"{MAX_COPY_BYTES} bytes)")
                    return plan
                plan.files.append((*below, entry.name))
                plan.bytes += size
            elif kind == SYMLINK:
                plan.links += 1
            else:
                plan.others += 1
        if walker.examined_entries > MAX_COPY_ENTRIES:
            plan.cut = f"stopped after looking at {MAX_COPY_ENTRIES} entries"
            return plan
    if walker.unreadable_dirs:
        raise OSRefusal(
            f"cannot copy '{src.rel}': a folder inside it cannot be opened or listed, so the "
            "copy would be incomplete; nothing was copied"
        )
    return plan


def _check_destination(root: SecureRoot, src: Parent, dst: Parent, plan: _Plan) -> None:
    for below in [p for p, _ in plan.dirs[1:]] + plan.files:
        hit = root.rules.path((*dst.target_parts, *below))
        if hit is not None:
            err = DeniedName(hit)
            err.message = (
                f"cannot copy '{src.rel}' to '{dst.rel}': "
                f"'{join((*dst.rel.split('/'), *below))}' would match deny pattern '{hit}' "
                "in the destination; nothing was copied"
            )
            err.args = (err.message,)
            root.record("DENY", dst.rel, "copy_file", err)
            raise err


class _Dirs:
    """Folders below a top handle, opened one name at a time with no link followed; the
    last one opened is kept (a plan lists the files of one folder together)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.parts: Parts = ()
        self.fd = -1

    def at(self, parts: Parts) -> int:
        if not parts:
            return self.top
        if self.fd >= 0 and parts == self.parts:
            return self.fd
        self.close()
        fd = open_below(self.top, parts)
        self.fd, self.parts = fd, parts
        return fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _make_top(dst: Parent, control: Control) -> int:
    with changing(dst, wait=control.check):
        if dst.lstat() is not None:
            raise AlreadyExists(
                f"destination '{dst.rel}' already exists; a folder is copied only to a new name"
            )
        try:
            os.mkdir(dst.name, 0o700, dir_fd=dst.fd)
        except FileExistsError:
            raise AlreadyExists(f"destination '{dst.rel}' already exists") from None
        fsync_dir(dst.fd)
        return os.open(dst.name, DIR_FLAGS, dir_fd=dst.fd)


def _copy_planned(
    root: SecureRoot, src: Parent, dst: Parent, plan: _Plan, control: Control, done: Copied
) -> str:
    """Make the folders and copy the files; '' when all went, else where it stopped."""
    top_src = os.open(src.name, DIR_FLAGS, dir_fd=src.fd)
    try:
        top_dst = _make_top(dst, control)
    except BaseException:
        os.close(top_src)
        raise
    srcs, dsts = _Dirs(top_src), _Dirs(top_dst)
    below: Parts = ()
    try:
        try:
            for below, _ in plan.dirs[1:]:
                os.mkdir(below[-1], 0o700, dir_fd=dsts.at(below[:-1]))
            for below in plan.files:
                control.check()
                rel = join((*src.rel.split("/"), *below))
                s = Parent(srcs.at(below[:-1]), below[-1], rel, (), (*src.target_parts, *below))
                to = join((*dst.rel.split("/"), *below))
                d = Parent(dsts.at(below[:-1]), below[-1], to, (), (*dst.target_parts, *below))
                copy_one(root, s, d, overwrite=False, control=control, done=done)
            for below, mode in reversed(plan.dirs):
                fd = os.open(below[-1], DIR_FLAGS, dir_fd=dsts.at(below[:-1])) if below else -1
                try:
                    os.fchmod(top_dst if fd < 0 else fd, mode & 0o777)
                finally:
                    if fd >= 0:
                        os.close(fd)
        except LoomError as exc:
            return f"stopped at '{join(below)}': {exc.message}"
        except OSError as exc:
            return f"stopped at '{join(below)}': {os_error(exc).message}"
    finally:
        srcs.close()
        dsts.close()
        os.close(srcs.top)
        os.close(top_dst)
    return ""


def copy_folder(
    src_root: SecureRoot, src: Parent, dst_root: SecureRoot, dst: Parent, control: Control,
    done: Copied,
) -> Outcome:
    st = src.lstat()
    if st is None:
        raise OSRefusal(f"'{src.rel}' vanished before it was copied")
    if src_root.real == dst_root.real and dst.target_parts[: len(src.target_parts)] == (
        src.target_parts
    ):
        raise BadArgument(f"cannot copy '{src.rel}' into itself ('{dst.rel}')")
    try:
        plan = _plan(src_root, src, dst, st.st_mode, control)
    except TooDeep as exc:
        dst_root.record("DENY", dst.rel, "copy_file", exc)
        raise
    _check_destination(dst_root, src, dst, plan)
    stopped = _copy_planned(dst_root, src, dst, plan, control, done)
    notes = [x for x in (stopped, plan.cut) if x]
    if plan.cut:
        notes[-1] += "; copy the rest in parts"
    if plan.links:
        notes.append(f"{plan.links} symbolic link(s) not copied (links are never followed)")
    if plan.others:
        notes.append(f"{plan.others} special file(s) not copied")
    return Outcome(truncated=bool(stopped or plan.cut), text="; ".join(notes) or None)
