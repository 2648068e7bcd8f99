"""Every change recoverable: the content a change replaces goes to the trash first.

`write_file(overwrite=true)`, `edit_file`, and `move_file`/`copy_file` over an
existing file each replace a file by a rename. Just before that rename (their
entry's keys held, after their lost-update check) `Keeper` puts the file about
to be replaced into the root's trash the way a delete does
(`<root>/.mcp-trash/<UTC stamp>[-N]/<name>`, its record saying `version`,
the path it lived at and the operation that replaced it): a hard link to the
very file (same bytes, mode and times, no copy), or, where a link cannot be
made (another file system, a file with other links that someone could still
change in place), a copy fsynced before the change
goes on. Link or copy come before the rename, so a crash leaves the old file
(and perhaps its version too), or the new file and the old version in the
trash: never neither. A version that cannot be kept refuses the change.

Per root (`Recovery`, docs/configuration.md): on by default for `workspace` and
`sourcecode` roots; a file above `version_max_bytes` is replaced without a
version, and the answer says so; the trash stays within `trash_max_bytes` (what
it takes on disk) and `trash_max_items`, the oldest versions removed first, deletes
never (`app.fs.change.ledger.settle`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
from collections.abc import Callable

from app.errors import OSRefusal, os_error
from app.fs.change.layout import TRASH
from app.fs.change.ledger import settle
from app.fs.change.trash import Slot
from app.security import ops
from app.security.paths import join
from app.security.resolve import Parent, Root

CHUNK = 1 << 20
# Where a hard link cannot be made, the version is copied instead.
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP, errno.EACCES}


class Keeper:
    """Keeps the file at `parent` (seen as `st`) in the trash when called; afterwards
    `kept` is its path under the root and `note` says why none was kept."""

    def __init__(self, root: Root, parent: Parent, st: os.stat_result | None,
                 op: str = "replace") -> None:
        self.root, self.parent, self.st, self.op = root, parent, st, op
        self.kept: str | None = None
        self.note: str | None = None

    def guarded(self, guard: Callable[[], None] | None) -> Callable[[], None]:
        """`guard`, then keep the version: what `replace_with` runs just before its rename."""

        def both() -> None:
            if guard is not None:
                guard()
            self()

        return both

    def __call__(self) -> None:
        st, policy = self.st, self.root.recovery
        if st is None or not stat_mod.S_ISREG(st.st_mode) or not policy.keep_versions:
            return
        limit = min(policy.version_max_bytes, policy.trash_max_bytes)
        if st.st_size > limit:
            self.note = (f"the previous version ({st.st_size} bytes) was not kept: above this "
                         f"root's limit for a kept version ({limit} bytes)")
            return
        try:
            self.kept = join((TRASH, keep(self.root, self.parent, st, self.op)))
        except OSError as exc:
            why = os_error(exc).message
            raise OSRefusal(
                f"the previous version of '{self.parent.rel}' could not be kept in the trash "
                f"({why}); nothing was changed"
            ) from None
        settle(self.root, self.kept.split("/")[1], "version")


def keep(root: Root, parent: Parent, st: os.stat_result, op: str = "replace") -> str:
    """The file at `parent` linked (else copied) into a new stamp folder, named there by
    its last component; its trash ID. `op` (write, edit, move, copy) goes in the record."""
    slot = Slot(root, parent.target_parts, "version", size=st.st_size, op=op)
    done = False
    try:
        linked = False
        if st.st_nlink == 1:
            try:
                ops.link(parent.fd, parent.name, slot.fd, parent.name)
                linked = True
            except OSError as exc:
                if exc.errno not in _NO_LINK:
                    raise
        if not linked:
            _copy(parent, slot.fd, st)
        slot.sync()
        done = True
        return slot.id
    finally:
        if not done:
            with contextlib.suppress(OSError):
                ops.unlink(slot.fd, parent.name)
            slot.undo()
        slot.close()


def _copy(parent: Parent, dir_fd: int, st: os.stat_result) -> None:
    src = ops.open_file(parent.fd, parent.name)
    try:
        if (os.fstat(src).st_dev, os.fstat(src).st_ino) != (st.st_dev, st.st_ino):
            raise OSError(errno.ESTALE, "the file changed before its version was kept")
        out = ops.create(dir_fd, parent.name)
        try:
            while chunk := os.read(src, CHUNK):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view) :]
            os.fchmod(out, st.st_mode & 0o777)
            ops.set_times(out, st.st_atime_ns, st.st_mtime_ns)
            os.fsync(out)
        finally:
            os.close(out)
    finally:
        os.close(src)
