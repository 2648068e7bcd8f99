"""The audit log: one line per resolution, ALLOW or DENY.

Rotation happens in the writing process (`RotatingFileHandler`), so two
server instances must not share a file. To purge a live log, truncate it
(`truncate -s 0`), never delete it: the handler keeps its descriptor and
would go on writing into the unlinked inode.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import logging.handlers
import os
import time

# Who is calling: "stdio", or the HTTP peer. Set by the transport for each request.
current_client: contextvars.ContextVar[str] = contextvars.ContextVar(
    "loomfs_client", default="stdio"
)

_ids = itertools.count()


class _UTCFormatter(logging.Formatter):
    converter = time.gmtime

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = time.strftime("%Y-%m-%dT%H:%M:%S", self.converter(record.created))
        return f"{t}.{int(record.msecs):03d}Z"


def _field(value: str) -> str:
    # One record per line, whatever a client puts in a path.
    return value.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")


class AuditLog:
    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        self.path = path
        self.key = (path, max_bytes, backups)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        self._handler.setFormatter(_UTCFormatter("%(asctime)s %(message)s"))
        self._logger = logging.getLogger(f"loomfs.audit.{next(_ids)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._logger.addHandler(self._handler)

    def __call__(self, decision: str, root: str, rel: str, op: str, rule: str | None) -> None:
        line = f"{decision} root={root} path={_field(rel or '.')} op={op}"
        if rule:
            line += f" rule={_field(rule)}"
        line += f" client={_field(current_client.get())}"
        self._logger.info(line)

    def close(self) -> None:
        self._logger.removeHandler(self._handler)
        self._handler.close()
