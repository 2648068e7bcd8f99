"""Who may open the owner's page: the person holding a login code, never a client.

The codes derive from an owner secret, `state_dir()/owner-secret`, made and read
like the token file the server makes (`app.security.tokenfile`: 0600, `O_EXCL`,
`O_NOFOLLOW`, a regular file owned by this user, never inside a root). A code is
`<expires>.<nonce>.<mac>`: the moment it stops working (Unix seconds), 12 random
bytes, and an HMAC-SHA256 of both under the secret, so `loom-fs-mcp --ui-link`, a
second process, prints codes the serving process accepts. A code works once: the
serving process remembers every nonce it took until its code would have expired
(the table holds only codes that carried a valid MAC, so only the secret's holder
can grow it; it is bounded all the same, `MAX_REMEMBERED`).

Failed logins are rate-limited (`FailedLogins`): past `FAILURES_ALLOWED` in
`FAILURE_WINDOW` seconds every login is refused until the window moves on,
a right code too, so guessing costs time whatever it guesses.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable

from app.security.tokenfile import TokenFile, ensure_token, owner_secret_path, read_token

CODE_TTL = 600  # seconds a printed code works
MAX_CODE_CHARS = 128  # a code is about 60 characters; anything longer is refused unread
MAX_REMEMBERED = 4096  # nonces of used codes, until their expiry
FAILURES_ALLOWED = 10
FAILURE_WINDOW = 60.0

Clock = Callable[[], float]


def secret_path() -> str:
    return owner_secret_path()


def load_secret(path: str | None = None) -> bytes:
    """The owner secret, made at the first use (raises ConfigError, OSError)."""
    path = path or secret_path()
    ensure_token(path)
    return read_token(TokenFile(path, made=True)).encode("ascii")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _mac(secret: bytes, expires: int, nonce: str) -> str:
    return _b64(hmac.new(secret, f"loomfs-ui-login:{expires}.{nonce}".encode(),
                         hashlib.sha256).digest()[:18])


def make_code(secret: bytes, now: float | None = None) -> str:
    expires = int(now if now is not None else time.time()) + CODE_TTL
    nonce = _b64(secrets.token_bytes(12))
    return f"{expires}.{nonce}.{_mac(secret, expires, nonce)}"


WILDCARDS = {"", "0.0.0.0", "::", "[::]"}  # every address: the person opens it on this one


def login_link(secret: bytes, host: str, port: int, now: float | None = None) -> str:
    """The link the person opens: on `host`, or on 127.0.0.1 when the server listens on
    every address (a container's 0.0.0.0 is no address to open, and no Host it allows)."""
    host = "127.0.0.1" if host.strip() in WILDCARDS else host.strip("[]")
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/ui/login?code={make_code(secret, now)}"


class FailedLogins:
    """At most `FAILURES_ALLOWED` failures in any `FAILURE_WINDOW` seconds."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._times: deque[float] = deque()

    def _drop_old(self, now: float) -> None:
        while self._times and self._times[0] <= now - FAILURE_WINDOW:
            self._times.popleft()

    def wait(self) -> int:
        """Seconds until a login may be tried again (0: now)."""
        now = self.clock()
        self._drop_old(now)
        if len(self._times) < FAILURES_ALLOWED:
            return 0
        return max(1, int(self._times[0] + FAILURE_WINDOW - now) + 1)

    def failed(self) -> None:
        now = self.clock()
        self._drop_old(now)
        self._times.append(now)
        while len(self._times) > FAILURES_ALLOWED:  # the window never holds more
            self._times.popleft()


class OwnerKeys:
    """Checks login codes for one serving process (single use, expiry, rate limit)."""

    def __init__(self, secret: bytes, clock: Clock = time.time,
                 monotonic: Clock = time.monotonic) -> None:
        self._secret = secret
        self.clock = clock
        self.failures = FailedLogins(monotonic)
        self._used: dict[str, int] = {}  # nonce -> its code's expiry
        self._lock = threading.Lock()

    def code(self) -> str:
        return make_code(self._secret, self.clock())

    def link(self, host: str, port: int) -> str:
        return login_link(self._secret, host, port, self.clock())

    def take(self, code: object) -> str | None:
        """None when `code` logs in (it is then used up), else why not, in words."""
        with self._lock:
            if self.failures.wait():
                return "too many failed logins: wait a minute, then use a fresh link"
            why = self._check(code)
            if why is not None:
                self.failures.failed()
            return why

    def _check(self, code: object) -> str | None:
        if not isinstance(code, str) or not code or len(code) > MAX_CODE_CHARS:
            return "this login link is not valid"
        parts = code.split(".")
        if len(parts) != 3 or not parts[0].isascii() or not parts[0].isdigit():
            return "this login link is not valid"
        expires, nonce, mac = int(parts[0]), parts[1], parts[2]
        if not hmac.compare_digest(mac.encode("ascii", "replace"),
                                   _mac(self._secret, expires, nonce).encode("ascii")):
            return "this login link is not valid"
        now = int(self.clock())
        if expires < now or expires > now + CODE_TTL + 60:
            return "this login link has expired"
        for old in [n for n, until in self._used.items() if until < now]:
            del self._used[old]
        if nonce in self._used:
            return "this login link was already used"
        if len(self._used) >= MAX_REMEMBERED:
            return "too many login links in use: wait until the older ones expire"
        self._used[nonce] = expires
        return None
