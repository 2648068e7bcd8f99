"""The running account of a root's trash: what it takes, so trimming costs the same
whether it holds 10 items or 100,000.

Every item made through the server (a delete, a kept version) is `settle`d once
it is in place: its stamp folder is measured (`walk_tree`, what it takes on
disk: folders, record, the item) and added to the trash's `Account`, which keeps
the versions oldest first and the totals; then, while the trash takes more than
`trash_max_bytes` (its items, and the trash folder with its own few files) or
holds more than `trash_max_items` items, the oldest
versions are removed (never a delete, never the item just settled: a change on
a full trash still succeeds and keeps its version). Nothing is listed: the
account is the list.

Another process may change the trash (`--restore`, `--empty-trash`, another
server on the same root). Each writer bumps the counter in `generation` under
an exclusive `flock` on that file; the server holds the same lock while it
settles, and when the counter is not the one it left, it lists the trash once
(`item_of` on each stamp folder) and goes on from there. A counter that does not
read (a torn write) is a change too: fail closed, re-list. A restore from the owner's
page served by this process takes its item out of the account (`forget`) and bumps
the counter with it, so only the other processes list again; so does an emptying from
the page (`emptied`: the stamps it removed).

Each trash has its own lock (and its own `flock`): one root's trimming never
waits for another's. Nothing here fails the change that called it: a trim that
cannot finish is logged and the next change tries again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from app.fs.change.inventory import dropped, item_of, stamps
from app.fs.change.layout import (
    DROPPED,
    GENERATION,
    IGNORE,
    TRASH,
    Generation,
    generation_lock,
    on_disk,
)
from app.fs.change.purge import Emptied, walk_tree
from app.security import ops
from app.security.policy import Recovery
from app.security.resolve import Root

log = logging.getLogger("loomfs.trash")
MAX_ACCOUNTS = 1024  # trashes this process keeps an account of (past it: re-list)


@dataclass(eq=False)
class Account:
    """One trash as this process last left it: `generation` None until listed."""

    generation: int | None = None
    versions: dict[str, int] = field(default_factory=dict)  # stamp -> on disk, oldest first
    deletes: dict[str, int] = field(default_factory=dict)  # stamp -> on disk
    taken: int = 0  # on disk, versions and deletes
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def items(self) -> int:
        return len(self.versions) + len(self.deletes)

    def add(self, stamp: str, kind: str, disk: int) -> None:
        into = self.versions if kind == "version" else self.deletes
        self.taken += disk - into.get(stamp, 0)
        into[stamp] = disk

    def drop(self, stamp: str) -> None:
        """Stamp folder `stamp`, removed from the trash, out of the account."""
        for into in (self.versions, self.deletes):
            if stamp in into:
                self.taken -= into.pop(stamp)

    def relist(self, trash_fd: int) -> None:
        self.versions.clear()
        self.deletes.clear()
        self.taken = 0
        for name in stamps(trash_fd):
            item = item_of(trash_fd, name)
            if item is not None:
                self.add(name, item.kind, item.disk)

    def trim(self, trash_fd: int, policy: Recovery, keep: str) -> tuple[int, int]:
        """Remove the oldest versions but `keep` while past a cap: (how many, bytes)."""
        count = freed = 0
        own = own_files(trash_fd)
        while (self.taken + own > policy.trash_max_bytes
               or self.items > policy.trash_max_items):
            # The first one, or the second when the first is the one just kept (another
            # thread's version that settled later): one or two steps, whatever the count.
            oldest = next((n for n in self.versions if n != keep), None)
            if oldest is None:  # none left but the one just kept
                break
            self.taken -= self.versions.pop(oldest)
            try:
                freed += walk_tree(trash_fd, oldest, remove=True).disk
            except FileNotFoundError:
                continue  # gone already (another process): nothing to free
            count += 1
        return count, freed


def own_files(trash_fd: int) -> int:
    """What the trash folder and its own files take on disk (a few stats, whatever it
    holds): counted against `trash_max_bytes` with the items."""
    taken = on_disk(os.fstat(trash_fd))
    for name in (IGNORE, GENERATION, DROPPED):
        with contextlib.suppress(OSError):
            taken += on_disk(ops.lstat(trash_fd, name))
    return taken


_accounts: dict[tuple[int, int], Account] = {}
_accounts_lock = threading.Lock()


def account_of(trash_fd: int) -> Account:
    """The account of the trash `trash_fd` (by device and inode), made on first use."""
    st = os.fstat(trash_fd)
    key = (st.st_dev, st.st_ino)
    with _accounts_lock:
        found = _accounts.get(key)
        if found is None:
            if len(_accounts) >= MAX_ACCOUNTS:
                _accounts.clear()  # each is listed again when next used
            found = _accounts[key] = Account()
        return found


def settle(root: Root, stamp: str, kind: str) -> None:
    """Account the item just made in stamp folder `stamp` and trim past the root's caps;
    never fails the change that called it."""
    with contextlib.suppress(OSError):
        trash_fd = root.open_subdir((TRASH,))
        try:
            _settle(trash_fd, stamp, kind, root.recovery)
        except OSError as exc:
            log.warning("root %s: the trash could not be trimmed (%s)", root.name,
                        exc.strerror)
        finally:
            os.close(trash_fd)


def _settle(trash_fd: int, stamp: str, kind: str, policy: Recovery) -> None:
    account = account_of(trash_fd)
    with account.lock, generation_lock(trash_fd) as gen:
        if account.generation is None or gen.read() != account.generation:
            account.generation = None  # until the list is whole
            account.relist(trash_fd)  # the new item is in it
        else:
            account.add(stamp, kind, walk_tree(trash_fd, stamp, remove=False).disk)
        count = freed = 0
        whole = False
        try:
            count, freed = account.trim(trash_fd, policy, keep=stamp)
            whole = True
        finally:  # a trim cut short leaves an account to list again
            bumped = gen.bump()
            account.generation = bumped if whole else None
        if count:
            _add_dropped(trash_fd, count, freed)


def forget(trash_fd: int, stamp: str) -> None:
    """Stamp folder `stamp`, just removed by this process (a restore), out of its account;
    the generation bumped, so other processes list the trash again and this one goes on
    from its account (a restore in a trash of 10,000 items reads no record)."""
    account = account_of(trash_fd)
    with account.lock, generation_lock(trash_fd) as gen:
        current = account.generation is not None and gen.read() == account.generation
        account.drop(stamp)
        bumped = gen.bump()
        account.generation = bumped if current else None


def emptied(trash_fd: int, empty: Callable[[], Emptied]) -> Emptied:
    """Run `empty` (`app.fs.change.purge.empty_trash` on this very trash, which bumps the
    counter once when it removes anything) holding this trash's account, then take what
    it removed out of the account. When the account was current and the counter moved by
    that one bump alone, it stays current (the next change lists nothing, as after a
    restore: `forget`); any other counter (another process, another folder emptied)
    leaves the account to list again, and so does an `empty` that raises. This
    process's changes on the trash wait meanwhile.
    """
    account = account_of(trash_fd)
    with account.lock:
        with generation_lock(trash_fd) as gen:
            before = gen.read()
        current = account.generation is not None and before == account.generation
        try:
            done = empty()
        except BaseException:
            account.generation = None  # cut short: some may be gone, list again
            raise
        with generation_lock(trash_fd) as gen:
            now = gen.read()
        for stamp in done.removed:
            account.drop(stamp)
        expected = None if before is None else before + (1 if done.removed else 0)
        account.generation = now if current and now == expected else None
    return done


def _add_dropped(trash_fd: int, count: int, freed: int) -> None:
    """Add to `dropped.json`, in place (the generation lock is held, so no other writer):
    a tally for `--trash`, not worth an fsync per change (one that reads torn or not at
    all is shown as nothing dropped)."""
    was = dropped(trash_fd)
    now = {
        "versions": int(str(was.get("versions", 0))) + count,
        "bytes": int(str(was.get("bytes", 0))) + freed,
        "last": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    data = json.dumps(now).encode() + b"\n"
    fd = ops.open_at(trash_fd, DROPPED, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Split:
    """Versions and deletes apart: how many of each, and what each takes on disk."""

    versions: int
    versions_disk: int
    deletes: int
    deletes_disk: int


def known_split(trash_fd: int) -> Split | None:
    """The split this process's account holds, when the account is current (its counter is
    the one in `generation`); None when it is not, or busy (a settle under way). Reads one
    small file and lists nothing, whatever the trash holds: for a page that shows the
    trash without reading every record. Another process's change not yet counted (it
    bumps after it is done) can make the split lag behind the disk by that change."""
    st = os.fstat(trash_fd)
    with _accounts_lock:
        account = _accounts.get((st.st_dev, st.st_ino))
    if account is None or not account.lock.acquire(blocking=False):
        return None
    try:
        if account.generation is None:
            return None
        try:
            fd = ops.open_file(trash_fd, GENERATION)
        except OSError:
            return None
        try:
            now = Generation(fd).read()
        finally:
            os.close(fd)
        if now != account.generation:
            return None
        return Split(len(account.versions), sum(account.versions.values()),
                     len(account.deletes), sum(account.deletes.values()))
    finally:
        account.lock.release()
