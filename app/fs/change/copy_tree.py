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
to a new name, never merged into one), and the plan is carried out depth first:
each subfolder made (private until the copy leaves it, when it takes its
source's permission bits), then its files, each copied atomically
(`app.fs.change.copying.copy_one`). On either side the folders are held as one
path of handles carried down (`app.security.handles.Descent`), each opened once
from its parent's handle with no link followed, so a tree d levels deep costs
O(d) opens, not one walk from the top per level; a cancel check comes before
each folder made and each file. Links and special files are not copied, and
counted.

A copy stopped by the byte budget keeps the files it copied, each whole, and
says where it stopped (`truncated`), as does one cut by its caps. Any other
failure (a full disk, a source changed meanwhile) and a cancel remove what the
copy made, files (each only while still the file copied) and folders (each
only while empty), deepest first, then the new top, and the failure is a tool
error that says where it stopped and why: a later copy to the same name is not
blocked by a half-made folder. A crash leaves the files already copied, each
whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from app.errors import (
    AlreadyExists,
    BadArgument,
    BudgetSpent,
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
from app.security import ops
from app.security.handles import Descent
from app.security.paths import MAX_DEPTH, join
from app.security.resolve import Parent, Root
from app.security.walk import DIR, FILE, SYMLINK, Walker, kind_of_entry

MAX_COPY_FILES = 10_000
MAX_COPY_ENTRIES = 100_000

Parts = tuple[str, ...]
Ident = tuple[int, int]


@dataclass
class Outcome:
    truncated: bool
    text: str | None
    hidden: int = 0


@dataclass
class _Plan:
    dirs: list[tuple[Parts, int]]  # (path below the copied folder, mode), parents first
    files: list[Parts] = field(default_factory=list)
    bytes: int = 0
    links: int = 0
    others: int = 0
    cut: str | None = None  # why the plan stops short
    hidden: int = 0  # entries the source root's rules hide, left out


def _plan(root: Root, src: Parent, dst: Parent, mode: int, control: Control) -> _Plan:
    """What to copy; TooDeep when an entry would lie past MAX_DEPTH at the destination (the
    walk goes no deeper than that)."""
    top = src.target_parts
    plan = _Plan(dirs=[((), mode)])
    allowance = MAX_DEPTH - len(dst.target_parts)  # levels the copy may hold below its top
    walker = Walker(root, top, max_depth=allowance + 1, count_hidden=True)
    for d in walker.dirs():
        control.check()
        if walker.unreadable_dirs:
            break
        plan.hidden = walker.hidden_entries
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


def _check_destination(root: Root, src: Parent, dst: Parent, plan: _Plan) -> None:
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


def _make_top(dst: Parent, control: Control) -> int:
    with changing(dst, wait=control.check):
        if dst.lstat() is not None:
            raise AlreadyExists(
                f"destination '{dst.rel}' already exists; a folder is copied only to a new name"
            )
        try:
            ops.mkdir(dst.fd, dst.name, 0o700)
        except FileExistsError:
            raise AlreadyExists(f"destination '{dst.rel}' already exists") from None
        fsync_dir(dst.fd)
        return ops.open_dir(dst.fd, dst.name)


class _Made:
    """What one folder copy made below its new top: each folder (depth first) and each file
    (with its device and inode), so that a failure removes exactly that; and where it is."""

    def __init__(self, top: int) -> None:
        self.top = _ident(os.fstat(top))
        self.dirs: list[Parts] = [()]
        self.files: dict[Parts, list[tuple[str, Ident]]] = {}
        self.at: Parts = ()  # the folder or file being made

    def remove(self, dst: Parent, top: int) -> bool:
        """Remove what was made, children before their folder, each file only while still
        the one copied and each folder only while empty; True when all of it went."""
        whole = True
        with Descent(top) as at:
            for below in reversed(self.dirs):  # reversed depth-first: children first
                try:
                    fd = at.at(below)
                    os.fchmod(fd, 0o700)  # it may have taken a source's read-only bits
                    for name, ident in self.files.get(below, ()):
                        if _ident(ops.lstat(fd, name)) == ident:
                            ops.unlink(fd, name)
                    if below:
                        ops.rmdir(at.at(below[:-1]), below[-1])
                except OSError:
                    whole = False
        try:
            if _ident(ops.lstat(dst.fd, dst.name)) != self.top:
                return False
            ops.rmdir(dst.fd, dst.name)
        except OSError:
            return False
        return whole


def _ident(st: os.stat_result) -> Ident:
    return (st.st_dev, st.st_ino)


def _leave_to(dsts: Descent, modes: list[int], parts: Parts) -> None:
    """Go up to `parts` (on the current path), giving each folder left its source's bits."""
    while dsts.parts != list(parts):
        os.fchmod(dsts.fd, modes.pop() & 0o777)
        dsts.leave()


def _fill(
    root: Root, src: Parent, dst: Parent, plan: _Plan, control: Control, done: Copied,
    tops: tuple[int, int], made: _Made,
) -> str:
    """Make the folders and copy the files depth first, each folder opened once on either
    side (`Descent`), a cancel check before each; '' when all went, else where the byte
    budget stopped it. Other failures raise, `made` saying what there is to remove."""
    files: dict[Parts, list[str]] = {}
    for f in plan.files:
        files.setdefault(f[:-1], []).append(f[-1])
    stopped = ""
    modes = [plan.dirs[0][1]]
    with Descent(tops[0]) as srcs, Descent(tops[1]) as dsts:
        for below, mode in sorted(plan.dirs):  # tuples sort depth first: parents before
            control.check()
            if below:
                _leave_to(dsts, modes, below[:-1])
                made.at = below
                ops.mkdir(dsts.fd, below[-1], 0o700)
                made.dirs.append(below)
                dsts.enter(below[-1])
                modes.append(mode)
            for name in files.get(below, ()):
                control.check()
                made.at = (*below, name)
                s = Parent(srcs.at(below), name, join((*src.rel.split("/"), *made.at)), (),
                           (*src.target_parts, *made.at))
                d = Parent(dsts.fd, name, join((*dst.rel.split("/"), *made.at)), (),
                           (*dst.target_parts, *made.at))
                try:
                    copy_one(root, s, d, overwrite=False, control=control, done=done)
                except BudgetSpent as exc:  # keeps what it copied, each file whole
                    stopped = f"stopped at '{join(made.at)}': {exc.message}"
                    break
                made.files.setdefault(below, []).append(
                    (name, _ident(ops.lstat(dsts.fd, name))))
            if stopped:
                break
        _leave_to(dsts, modes, ())
    os.fchmod(tops[1], modes[0] & 0o777)
    return stopped


def _copy_planned(
    root: Root, src: Parent, dst: Parent, plan: _Plan, control: Control, done: Copied
) -> str:
    """The copy of what was planned; '' when all went, else where the byte budget stopped
    it. A failure or a cancel removes what the copy made, then raises: a tool error that
    says where it stopped and why, or the cancel itself."""
    top_src = ops.open_dir(src.fd, src.name)
    try:
        top_dst = _make_top(dst, control)
    except BaseException:
        os.close(top_src)
        raise
    made = _Made(top_dst)
    try:
        return _fill(root, src, dst, plan, control, done, (top_src, top_dst), made)
    except (LoomError, OSError) as exc:
        err = exc if isinstance(exc, LoomError) else os_error(exc)
        files = sum(len(v) for v in made.files.values())
        gone = made.remove(dst, top_dst)
        err.message = (
            f"cannot copy '{src.rel}' to '{dst.rel}': stopped at '{join(made.at)}': "
            f"{err.message}; " + (
                f"what it had made ({files} file(s)) was removed, nothing is left at "
                f"'{dst.rel}'" if gone else
                f"what it had made could not all be removed: '{dst.rel}' holds what is left"
            )
        )
        err.args = (err.message,)
        raise err from None
    except BaseException:  # cancelled: nobody waits for an answer, but nothing is left
        made.remove(dst, top_dst)
        raise
    finally:
        os.close(top_src)
        os.close(top_dst)


def copy_folder(
    src_root: Root, src: Parent, dst_root: Root, dst: Parent, control: Control,
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
    if plan.hidden:
        one = plan.hidden == 1
        notes.insert(0, f"incomplete: {plan.hidden} entr{'y' if one else 'ies'} that the "
                        f"source root's deny rules hide {'was' if one else 'were'} not copied")
    return Outcome(truncated=bool(stopped or plan.cut), text="; ".join(notes) or None,
                   hidden=plan.hidden)
