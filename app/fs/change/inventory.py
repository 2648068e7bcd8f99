"""What a root's trash holds, read from disk.

Each stamp folder (`<UTC stamp>[-N]`) holds one item, a delete or a replaced
file's version, and the record `app.fs.change.trash.Slot` wrote (`RECORD`: kind,
path, name, op, client, and a version's size), read here within `MAX_RECORD`
bytes and never through a link. The item is `<stamp>/<name>`; a record without
a name (the older nested layout) has its item at `<stamp>/<path>`, and a stamp
folder without a readable record (made before records existed) is a delete
whose item is found by going down while a folder holds exactly one entry (a
deleted folder with a single child is then shown as that child: restoring it
puts back the same content).

`--trash` lists every item this way; the server does only when another process
changed the trash (app.fs.change.ledger keeps its account otherwise). What
trimming removed is counted in `dropped.json`, which `--trash` reports.
"""

from __future__ import annotations

import json
import os
import stat as stat_mod
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from app.fs.change.layout import DROPPED, RECORD, stamp_key, stamp_time
from app.fs.change.purge import Cut, Tally, walk_tree
from app.security import ops
from app.security.handles import open_below

MAX_RECORD = 64 << 10

Record = dict[str, object]
# The work of reading the trash, counted for the tests: "listed" (entries of the trash
# listed), "records" (records read). A change through the server does neither
# (app.fs.change.ledger keeps its account), except once after another process changed it.
WORK: Counter[str] = Counter()


@dataclass(frozen=True)
class Item:
    id: str  # the item's path under .mcp-trash: `<stamp>/<name>` (`<stamp>/<path>`, older)
    stamp: str
    path: str  # where it lived in the root
    when: datetime
    kind: str  # delete | version
    bytes: int  # regular files' sizes, a folder's summed
    disk: int = 0  # what its stamp folder takes on disk: folders, record, the item
    op: str = "-"  # what put it there: delete, or the change that replaced it
    client: str = "-"  # who asked, as the audit log names it
    whole: bool = True  # False: a measure cut at its bound, `bytes` and `disk` at least that

    @property
    def inner(self) -> list[str]:
        """The item's path below its stamp folder."""
        return self.id.split("/")[1:]


def _plain(path: object) -> bool:
    # Only a plain relative path: a record edited to say `../x` must not lead out.
    return isinstance(path, str) and all(p not in ("", ".", "..") for p in path.split("/"))


def read_record(trash_fd: int, name: str) -> Record | None:
    """The record of stamp folder `name`, or None when it has none that reads."""
    WORK["records"] += 1
    try:
        stamp_fd = ops.open_dir(trash_fd, name)
    except OSError:
        return None
    try:
        fd = ops.open_file(stamp_fd, RECORD)
    except OSError:
        return None
    finally:
        os.close(stamp_fd)
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_RECORD)
    finally:
        os.close(fd)
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("kind") not in ("delete", "version"):
        return None
    name_ok = "name" not in record or (_plain(record["name"]) and "/" not in record["name"])
    return record if _plain(record.get("path")) and name_ok else None


def stamps(trash_fd: int) -> list[str]:
    """The stamp folders, oldest first."""
    with ops.scandir(trash_fd) as it:
        entries = list(it)
    WORK["listed"] += len(entries)
    names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    keyed = [(k, n) for n in names if (k := stamp_key(n)) is not None]
    return [n for _, n in sorted(keyed)]


def _guess_path(stamp_fd: int) -> list[str]:
    """A record-less stamp's item: down while a folder holds exactly one entry."""
    parts: list[str] = []
    fd = os.dup(stamp_fd)
    try:
        while True:
            with ops.scandir(fd) as it:
                names = [e.name for e in it if not (not parts and e.name == RECORD)]
            if len(names) != 1:
                return parts
            parts.append(names[0])
            try:
                nxt = ops.open_dir(fd, names[0])
            except OSError:
                return parts
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


def item_of(trash_fd: int, name: str, max_entries: int | None = None) -> Item | None:
    """Stamp folder `name` as an item (None when it holds nothing to restore). Flat (the
    record names the item) or, for stamps of older versions, the item at its path below
    the stamp folder (with a record saying so, or a delete found by `_guess_path`). Its
    size is measured whole, or (`max_entries`, for a page) by one walk of at most that
    many entries, a deleted tree of a million files then said to be at least its part."""
    record = read_record(trash_fd, name)
    try:
        stamp_fd = ops.open_dir(trash_fd, name)
    except OSError:
        return None
    try:
        if record is None:
            inner, kind = _guess_path(stamp_fd), "delete"
            path = "/".join(inner)
        else:
            path, kind = str(record["path"]), str(record["kind"])
            inner = [str(record["name"])] if "name" in record else path.split("/")
        if not inner or not inner[-1]:
            return None
        if max_entries is None:
            parent = open_below(stamp_fd, inner[:-1])
            try:
                size = walk_tree(parent, inner[-1], remove=False).bytes
            finally:
                os.close(parent)
            disk, whole = walk_tree(trash_fd, name, remove=False).disk, True
        else:
            size, disk, whole = _measured(trash_fd, name, stamp_fd, max_entries)
    except OSError:
        return None  # made but never filled (a crash), or changed by hand
    finally:
        os.close(stamp_fd)
    extra = record or {}
    return Item("/".join((name, *inner)), name, path, stamp_time(name), kind, size, disk,
                str(extra.get("op", "-")), str(extra.get("client", "-")), whole)


def _measured(trash_fd: int, name: str, stamp_fd: int, max_entries: int) -> tuple[int, int, bool]:
    """(bytes, disk, whole) of stamp folder `name` in one walk of at most `max_entries`
    entries: the item's bytes are the folder's regular files' but its record's."""
    tally = Tally(max_entries=max_entries)
    try:
        walk_tree(trash_fd, name, remove=False, into=tally)
        whole = True
    except Cut:
        whole = False
    record = ops.lstat_or_none(stamp_fd, RECORD)
    own = record.st_size if record is not None and stat_mod.S_ISREG(record.st_mode) else 0
    return max(tally.bytes - own, 0), tally.disk, whole


def dropped(trash_fd: int) -> Record:
    """What trimming (app.fs.change.ledger) has removed so far: {"versions", "bytes" (on
    disk), "last"}."""
    try:
        fd = ops.open_file(trash_fd, DROPPED)
    except OSError:
        return {}
    try:
        data = json.loads(os.read(fd, MAX_RECORD))
    except ValueError:
        return {}
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else {}
