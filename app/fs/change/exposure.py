"""Would moving a folder carry something a whole-path rule denies out of its rule?

A deny pattern with `/` (`config/prod.yaml`) names a place: moving an ancestor
(`config` -> `config2`) would carry the denied file to a path the pattern no
longer matches. `refuse_exposing` looks below the folder to be moved and
refuses when something there is denied by a whole-path rule (or is one of the
server's own files, by path) where it is and would not be where it goes; see
docs/security.md "Deny patterns that name a path".

It fails closed. It decides whether something becomes reachable, so a folder it
must look into and cannot open or list (permission, too many open files, no
memory, an entry that vanished, a folder replaced meanwhile) refuses the move,
saying which folder and why: not having looked is not having found nothing.
(Listings and searches do the opposite, skipping and counting what they cannot
read: hiding more is not exposing.)

Only folders a pattern could reach are looked into (`DenyRules.may_deny_below`:
the literal text before a pattern's first wildcard decides), so most moves cost
nothing extra; past MAX_CHECKED entries the move is refused rather than checked
without bound. The walk is breadth-first with no recursion, whatever the depth;
each folder is opened from its parent's handle (at most MAX_HELD parents kept
open) or else from the root's handle with no link followed, never by a path
string. Links and files are never entered.
"""

from __future__ import annotations

import os
from collections import deque

from app.errors import BadArgument, DeniedName, LoomError, OSRefusal, os_error
from app.security import ops
from app.security.paths import join
from app.security.resolve import Parent, Root

MAX_CHECKED = 200_000  # entries looked at under a moved directory before giving up
MAX_HELD = 32  # parent handles kept open for their subfolders


def open_folder(name: str, dir_fd: int) -> int:
    """A subfolder, never through a link (the seam tests use to make one unreadable)."""
    return ops.open_dir(dir_fd, name)


def list_folder(fd: int) -> list[tuple[str, bool]]:
    """(name, is a folder) of every entry; OSError if the listing or a type look fails."""
    with ops.scandir(fd) as it:
        return [(e.name, e.is_dir(follow_symlinks=False)) for e in it]


class _Held:
    """A listed folder's handle, kept until its queued subfolders are open."""

    __slots__ = ("fd", "waiting")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.waiting = 0


class _Check:
    """One check: the move's two places, the rules, the count of entries looked at."""

    def __init__(self, root: Root, src: Parent, dst: Parent) -> None:
        self.root, self.src, self.dst = root, src, dst
        self.seen = 0
        self.held: set[_Held] = set()

    def run(self) -> None:
        rules = self.root.rules
        old, new = self.src.target_parts, self.dst.target_parts
        queue: deque[tuple[tuple[str, ...], _Held | None]] = deque([((), None)])
        while queue:
            below, parent = queue.popleft()
            fd = self._open(below, parent)
            mine = _Held(fd) if len(self.held) < MAX_HELD else None
            try:
                try:
                    entries = list_folder(fd)
                except OSError as exc:
                    raise self._unreadable(below, "listed", exc) from None
                for name, is_dir in entries:
                    self._count()
                    if rules.name(name) is not None:
                        continue  # denied by its name, which moves with it
                    rel = (*below, name)
                    hit = rules.prefixes((*old, *rel))
                    if hit is not None:
                        if rules.prefixes((*new, *rel)) is None:
                            raise exposes(self.src.rel, self.dst.rel, hit)
                        continue  # denied there too, and so is everything below it
                    if is_dir and rules.may_deny_below((*old, *rel)):
                        queue.append((rel, mine))
                        if mine is not None:
                            mine.waiting += 1
            finally:
                if mine is not None and mine.waiting:
                    self.held.add(mine)  # closed once its last subfolder is open
                else:
                    os.close(fd)

    def _open(self, below: tuple[str, ...], parent: _Held | None) -> int:
        try:
            if not below:
                return open_folder(self.src.name, self.src.fd)
            if parent is None:
                return self.root.open_subdir((*self.src.target_parts, *below))
            try:
                return open_folder(below[-1], parent.fd)
            finally:
                parent.waiting -= 1
                if not parent.waiting:
                    self.held.discard(parent)
                    os.close(parent.fd)
        except OSError as exc:
            raise self._unreadable(below, "opened", exc) from None

    def _count(self) -> None:
        self.seen += 1
        if self.seen > MAX_CHECKED:
            raise BadArgument(
                f"'{self.src.rel}' holds more than {MAX_CHECKED} entries: too many to "
                "check that moving it exposes nothing denied; move its parts instead"
            )

    def _unreadable(self, below: tuple[str, ...], how: str, exc: OSError) -> LoomError:
        folder = join((*self.src.rel.split("/"), *below))
        why = os_error(exc).message
        return OSRefusal(
            f"cannot move '{self.src.rel}' to '{self.dst.rel}': folder '{folder}' cannot be "
            f"{how} ({why}), so it cannot be checked that the move exposes nothing denied; "
            "nothing was moved"
        )

    def close(self) -> None:
        for h in self.held:
            os.close(h.fd)
        self.held.clear()


def refuse_exposing(root: Root, src: Parent, dst: Parent) -> None:
    """Refuse moving a directory whose content a whole-path rule denies where it is now
    and would not deny where it goes, or that cannot be looked through. (The server's own
    files are also denied by identity, which a rename keeps: only their path rule needs
    this check.)"""
    if not root.rules.may_deny_below(src.target_parts):
        return
    check = _Check(root, src, dst)
    try:
        check.run()
    finally:
        check.close()


def exposes(src: str, dst: str, pattern: str) -> DeniedName:
    err = DeniedName(pattern)
    err.message = (
        f"cannot move '{src}' to '{dst}': something inside it matches deny pattern "
        f"'{pattern}' and would not at its new path; nothing was moved"
    )
    err.args = (err.message,)
    return err
