"""The owner's sessions on the page: a cookie naming one, a CSRF token per session.

The cookie (`COOKIE`) is 32 random bytes, HttpOnly, SameSite=Strict, Path=/ui, set by
a login and nothing else; the table lives in the serving process only (a restart logs
everyone out). A session ends `IDLE` seconds after its last request, or when the table
is full and a newer login needs its place (the longest idle goes). Every change the
page makes is a POST carrying the session's CSRF token (`csrf`), compared in constant
time.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "loomfs_owner"
IDLE = 12 * 3600.0
MAX_SESSIONS = 16
MAX_COOKIE_CHARS = 64


@dataclass
class OwnerSession:
    csrf: str
    last: float


class OwnerSessions:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._table: dict[str, OwnerSession] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def open(self) -> str:
        """A new session's cookie value."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            while len(self._table) >= MAX_SESSIONS:
                oldest = min(self._table, key=lambda k: self._table[k].last)
                del self._table[oldest]
            sid = secrets.token_urlsafe(32)
            self._table[sid] = OwnerSession(csrf=secrets.token_urlsafe(32), last=now)
            return sid

    def get(self, sid: str | None) -> OwnerSession | None:
        if not sid or len(sid) > MAX_COOKIE_CHARS:
            return None
        with self._lock:
            now = self.clock()
            self._expire(now)
            found = self._table.get(sid)
            if found is not None:
                found.last = now
            return found

    def close(self, sid: str | None) -> None:
        with self._lock:
            self._table.pop(sid or "", None)

    def _expire(self, now: float) -> None:
        for sid in [s for s, v in self._table.items() if v.last < now - IDLE]:
            del self._table[sid]


def csrf_ok(session: OwnerSession, given: object) -> bool:
    return isinstance(given, str) and hmac.compare_digest(
        given.encode("utf-8", "replace"), session.csrf.encode("ascii"))
