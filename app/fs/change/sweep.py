"""Remove temp files a crash left behind (`.mcp-tmp-*`), at start-up.

They are on the floor deny list, so the agent never sees them either way.
Only roots that grant write can have them; the sweep walks through handles and
never follows a link, and never enters a denied folder (no write goes there).
Only regular files are removed: a directory or link with such a name is not
one of ours. A second server instance on the same root would lose an
in-flight write to this sweep (its rename then fails cleanly: nothing is
lost); run one instance per root.
"""

from __future__ import annotations

import logging
import os
from collections import deque

from app.fs.change.atomic import TEMP_PREFIX
from app.security import ops
from app.security.resolve import Root

log = logging.getLogger("loomfs.sweep")


def sweep_temp_files(root: Root, *, max_dirs: int = 100_000) -> int:
    """Unlink leftover temp files under a writable root; return how many."""
    if "write" not in root.permissions:
        return 0
    removed = 0
    queue: deque[tuple[str, ...]] = deque([()])
    seen = 0
    while queue and seen < max_dirs:
        parts = queue.popleft()
        seen += 1
        try:
            fd = root.open_subdir(parts)
        except OSError:
            continue
        try:
            with ops.scandir(fd) as it:
                entries = list(it)
            for entry in entries:
                if entry.name.startswith(TEMP_PREFIX):
                    if entry.is_file(follow_symlinks=False):
                        try:
                            ops.unlink(fd, entry.name)
                            removed += 1
                        except OSError:
                            pass
                    continue
                # The trash and other denied trees are not ours to touch; links never followed.
                if root.rules.name(entry.name) is not None:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    queue.append((*parts, entry.name))
        except OSError:
            pass
        finally:
            os.close(fd)
    if removed:
        log.info("root %s: removed %d leftover temp file(s)", root.name, removed)
    return removed
