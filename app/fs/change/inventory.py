"""What a root's trash holds, and the bound on what replaced versions take.

Each stamp folder (`<UTC stamp>[-N]`) holds one item, a delete or a replaced
file's version, and the record `app.fs.change.trash.Slot` wrote (`RECORD`: kind,
path, and a version's size), read here within `MAX_RECORD` bytes and never
through a link. A stamp folder without a readable record (one made before
records existed) is a delete whose item is found by going down while a folder
holds exactly one entry (a deleted folder with a single child is then shown as
that child: restoring it puts back the same content).

`trim_versions` keeps the versions of a root within its `trash_max_bytes`:
oldest first (by stamp, then `-N`), versions only, deletes never. What it
removes is counted in `dropped.json` in the trash, which `--trash` reports.
Records are cached by (trash device, inode, stamp): a stamp's record never
changes once written, so a change reads only the records it has not seen.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat as stat_mod
import threading
from dataclasses import dataclass
from datetime import datetime, timezone

from app.fs.change.atomic import replace_file
from app.fs.change.layout import DROPPED, RECORD, TRASH, stamp_key, stamp_time
from app.fs.change.purge import DIR_FLAGS, walk_tree
from app.security.handles import open_below
from app.security.resolve import FILE_FLAGS, SecureRoot

MAX_RECORD = 64 << 10
MAX_CACHED = 200_000
log = logging.getLogger("loomfs.trash")

Record = dict[str, object]
_cache: dict[tuple[int, int, str], Record | None] = {}
_trim_lock = threading.Lock()


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

    @property
    def inner(self) -> list[str]:
        """The item's path below its stamp folder."""
        return self.id.split("/")[1:]


def _plain(path: object) -> bool:
    # Only a plain relative path: a record edited to say `../x` must not lead out.
    return isinstance(path, str) and all(p not in ("", ".", "..") for p in path.split("/"))


def read_record(trash_fd: int, name: str) -> Record | None:
    """The record of stamp folder `name`, or None when it has none that reads."""
    try:
        stamp_fd = os.open(name, DIR_FLAGS, dir_fd=trash_fd)
    except OSError:
        return None
    try:
        fd = os.open(RECORD, FILE_FLAGS, dir_fd=stamp_fd)
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


def cached_record(trash_fd: int, name: str) -> Record | None:
    st = os.fstat(trash_fd)
    key = (st.st_dev, st.st_ino, name)
    if key not in _cache:
        if len(_cache) > MAX_CACHED:
            _cache.clear()
        _cache[key] = read_record(trash_fd, name)
    return _cache[key]


def stamps(trash_fd: int) -> list[str]:
    """The stamp folders, oldest first."""
    with os.scandir(trash_fd) as it:
        names = [e.name for e in it if e.is_dir(follow_symlinks=False)]
    keyed = [(k, n) for n in names if (k := stamp_key(n)) is not None]
    return [n for _, n in sorted(keyed)]


def _guess_path(stamp_fd: int) -> list[str]:
    """A record-less stamp's item: down while a folder holds exactly one entry."""
    parts: list[str] = []
    fd = os.dup(stamp_fd)
    try:
        while True:
            names = [n for n in os.listdir(fd) if not (not parts and n == RECORD)]
            if len(names) != 1:
                return parts
            parts.append(names[0])
            try:
                nxt = os.open(names[0], DIR_FLAGS, dir_fd=fd)
            except OSError:
                return parts
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


def item_of(trash_fd: int, name: str) -> Item | None:
    """Stamp folder `name` as an item (None when it holds nothing to restore). Flat (the
    record names the item) or, for stamps of older versions, the item at its path below
    the stamp folder (with a record saying so, or a delete found by `_guess_path`)."""
    record = read_record(trash_fd, name)
    try:
        stamp_fd = os.open(name, DIR_FLAGS, dir_fd=trash_fd)
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
        parent = open_below(stamp_fd, inner[:-1])
        try:
            size = walk_tree(parent, inner[-1], remove=False).bytes
        finally:
            os.close(parent)
        disk = walk_tree(trash_fd, name, remove=False).disk
    except OSError:
        return None  # made but never filled (a crash), or changed by hand
    finally:
        os.close(stamp_fd)
    extra = record or {}
    return Item("/".join((name, *inner)), name, path, stamp_time(name), kind, size, disk,
                str(extra.get("op", "-")), str(extra.get("client", "-")))


def trim_versions(root: SecureRoot, limit: int) -> None:
    """Remove the oldest versions while the versions take more than `limit` bytes; never
    fails the change that called it (a trim that cannot finish is logged)."""
    with _trim_lock, contextlib.suppress(OSError):
        trash_fd = root.open_subdir((TRASH,))
        try:
            _trim(trash_fd, limit)
        except OSError as exc:
            log.warning("root %s: versions could not be trimmed (%s)", root.name, exc.strerror)
        finally:
            os.close(trash_fd)


def _trim(trash_fd: int, limit: int) -> None:
    versions = []
    for name in stamps(trash_fd):
        record = cached_record(trash_fd, name)
        if record is not None and record["kind"] == "version":
            size = record.get("bytes")
            versions.append((name, size if isinstance(size, int) else 0))
    total = sum(size for _, size in versions)
    count = freed = 0
    for name, size in versions:
        if total <= limit:
            break
        walk_tree(trash_fd, name, remove=True)
        st = os.fstat(trash_fd)
        _cache.pop((st.st_dev, st.st_ino, name), None)
        total -= size
        count, freed = count + 1, freed + size
    if count:
        _add_dropped(trash_fd, count, freed)


def dropped(trash_fd: int) -> Record:
    """What `trim_versions` has removed so far: {"versions", "bytes", "last"}."""
    try:
        fd = os.open(DROPPED, FILE_FLAGS, dir_fd=trash_fd)
    except OSError:
        return {}
    try:
        data = json.loads(os.read(fd, MAX_RECORD))
    except ValueError:
        return {}
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else {}


def _add_dropped(trash_fd: int, count: int, freed: int) -> None:
    was = dropped(trash_fd)
    now = {
        "versions": int(str(was.get("versions", 0))) + count,
        "bytes": int(str(was.get("bytes", 0))) + freed,
        "last": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    replace_file(trash_fd, DROPPED, json.dumps(now).encode() + b"\n", replace=True)
