"""The audit log: one line per resolution, ALLOW or DENY.

Rotation happens in the writing process (`RotatingFileHandler`), so two
server instances must not share a file. To purge a live log, truncate it
(`truncate -s 0`), never delete it: the handler keeps its descriptor and
would go on writing into the unlinked inode.

The log and its rotations are created 0600 in a folder created 0700: they
name every root and every file accessed. (A file an older start created keeps
its mode; a rotation renames, so the next new file is private.)

One `AuditLog` lives as long as the server: a reload that changes the file or
its bounds re-points it (`reconfigure`), so a call that started on the old
snapshot still gets its line, in the new file. It writes through its own
handler, not through the global `logging` tree, so nothing else's handlers
see audit lines and no logger is left behind by a reload.
"""

from __future__ import annotations

import contextvars
import logging
import logging.handlers
import os
import threading
import time
import weakref
from collections.abc import Callable

from app import hostfiles

OnOpen = Callable[[int], object]  # given the descriptor of each file the log opens

# Who is calling: "stdio", or the HTTP peer. Set by the transport for each request.
current_client: contextvars.ContextVar[str] = contextvars.ContextVar(
    "loomfs_client", default="stdio"
)
# Which `[[clients]]` client the request's token selected (over stdio, `--client`); None
# without `[[clients]]`, or on stdio serving every root. Set by the server for each request.
current_grant: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "loomfs_grant", default=None
)


class _UTCFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{t}.{int(record.msecs):03d}Z"


def _field(value: str) -> str:
    # One record per line, whatever a client puts in a path.
    return value.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")


class _Handler(logging.handlers.RotatingFileHandler):
    """Opens each file (the first, each after rotation) private to this user, and gives
    `on_open` its descriptor, so the roots can deny the audit log under any name it gets
    (`app.security.protected` holds it)."""

    def __init__(self, path: str, max_bytes: int, backups: int, on_open: OnOpen | None) -> None:
        self._on_open = on_open
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")

    def _open(self):
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        fd = hostfiles.open_fd(self.baseFilename, flags)
        stream = self._builtin_open(fd, "a", encoding=self.encoding, errors=self.errors)
        if self._on_open is not None:
            try:
                self._on_open(stream.fileno())
            except BaseException:
                stream.close()
                raise
        return stream


def _open(path: str, max_bytes: int, backups: int, on_open: OnOpen | None) -> logging.Handler:
    hostfiles.make_dirs(os.path.dirname(path), 0o700)
    handler = _Handler(path, max_bytes, backups, on_open)
    handler.setFormatter(_UTCFormatter("%(asctime)s %(message)s"))
    return handler


def _close(slot: list[logging.Handler | None]) -> None:
    handler, slot[0] = slot[0], None
    if handler is not None:
        handler.close()


class AuditLog:
    def __init__(
        self, path: str, max_bytes: int, backups: int, *, on_open: OnOpen | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._on_open = on_open
        # The current handler, in a slot the finalizer can reach without keeping `self` alive.
        self._slot: list[logging.Handler | None] = [_open(path, max_bytes, backups, on_open)]
        self._finalizer = weakref.finalize(self, _close, self._slot)
        self.path = path
        self.key = (path, max_bytes, backups)

    def reconfigure(self, path: str, max_bytes: int, backups: int) -> None:
        """Write to `path` with these bounds from now on; raise OSError and change nothing."""
        if (path, max_bytes, backups) == self.key:
            return
        handler = _open(path, max_bytes, backups, self._on_open)
        with self._lock:
            old, self._slot[0] = self._slot[0], handler
            self.path, self.key = path, (path, max_bytes, backups)
        if old is not None:
            old.close()

    def __call__(self, decision: str, root: str, rel: str, op: str, rule: str | None) -> None:
        line = f"{decision} root={root} path={_field(rel or '.')} op={op}"
        if rule:
            line += f" rule={_field(rule)}"
        grant = current_grant.get()
        if grant is None:
            line += f" client={_field(current_client.get())}"
        else:  # with [[clients]]: the peer, then the client by its name
            line += f" peer={_field(current_client.get())} client={_field(grant or '?')}"
        record = logging.LogRecord("loomfs.audit", logging.INFO, __file__, 0, line, None, None)
        with self._lock:
            handler = self._slot[0]
            if handler is not None:
                handler.handle(record)

    def close(self) -> None:
        with self._lock:
            _close(self._slot)
