"""One tool call's lifecycle: its cancel flag, its progress sink, and the calls in flight.

Three parties meet here and nowhere else:
- `app.tools.base.run` makes a `Call` per tool call, registers its cancel flag
  in the server's `InFlight` under `request_key(...)` when it came over HTTP,
  and hands the `Call` to the work in a worker thread;
- the work calls `Call.check()` between units (a file, a directory, a chunk)
  and `Call.progress(...)`, which the tools layer wires to MCP progress;
- `app.http.disconnect.CancelOnDisconnect` builds the same key with `call_key(...)` from
  the ASGI scope and calls `InFlight.cancel(key)` when the client disconnects
  before the answer (the SDK does not cancel a handler on a dropped connection).

Over stdio, cancellation arrives as `notifications/cancelled`: the SDK cancels
the handler's task and `run` sets the flag itself.

This module imports nothing above `app.registry` (and that only for types).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.audit import current_grant
from app.budget import Reservation, Roots
from app.errors import BudgetSpent

if TYPE_CHECKING:
    from app.registry import Snapshot
    from app.security.resolve import Root

CallKey = tuple[str, str, str]
ProgressSink = Callable[[float, float | None, str | None], None]


class Cancelled(Exception):
    """The client went away or cancelled: stop, nobody is waiting."""


@dataclass
class Call:
    """What an implementation gets: one snapshot, a cancel flag, a progress sink."""

    snapshot: Snapshot
    cancelled: threading.Event = field(default_factory=threading.Event)
    progress_sink: ProgressSink | None = None

    def root(self, name: str | None) -> Root:
        return self.snapshot.root(name)

    def check(self) -> None:
        if self.cancelled.is_set():
            raise Cancelled()

    def reserve(self, root: Roots, nbytes: int, *, op: str, rel: str = "") -> Reservation:
        """Take `nbytes` of the byte budget for a call on `root` (or on each root of a
        copy across roots) before it starts; settle the reservation with what was used.
        A refusal is audited (DENY, rule budget), once for each root named."""
        try:
            return self.snapshot.budget.reserve(root, nbytes, self.snapshot.client)
        except BudgetSpent as exc:
            audit = self.snapshot.audit
            for name in (root,) if isinstance(root, str) else root:
                if audit is not None:
                    audit("DENY", name, rel, op, f"{exc.rule}: {exc.message}")
            raise

    def charge(self, root: Roots, nbytes: int, *, op: str, rel: str = "") -> None:
        """Pay `nbytes` of the byte budget for good, or raise `BudgetSpent` (audited) and pay
        nothing: for bytes known before the work, such as a file about to be copied."""
        self.reserve(root, nbytes, op=op, rel=rel).settle(nbytes)

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_sink is not None:
            self.progress_sink(done, total, message)


# The ASGI scope key under which the HTTP guard puts the name of the `[[clients]]` client
# the request's token is (`app.http.guards.BearerAuth`).
CLIENT_KEY = "loomfs.client"


def request_client(request: Any, fixed: str | None) -> str | None:
    """The client a request comes from: over HTTP the one its token selected ("" when the
    guard named none: no grant); elsewhere (stdio) `fixed`, the `--client` it serves."""
    scope = getattr(request, "scope", None)
    if request is None or not isinstance(scope, dict):
        return fixed
    name = scope.get(CLIENT_KEY)
    return name if isinstance(name, str) else ""


def granted(snapshot: Snapshot) -> Snapshot:
    """What the calling client sees of `snapshot` (`Snapshot.view`, by `current_grant`, set
    for each request): the snapshot itself without `[[clients]]`. Fails closed: where the
    clients' tokens are served (HTTP), a call that no request named a client for sees no
    root; only stdio without `--client` sees every root."""
    if not snapshot.has_clients:
        return snapshot
    client = current_grant.get()
    if client is None and snapshot.tokens is not None:
        client = ""  # no client named: no grant
    return snapshot.view(client)


def call_key(peer: Any, session_id: str | None, request_id: Any) -> CallKey:
    """Who asked what: the connection, the MCP session and the JSON-RPC id."""
    where = f"{peer[0]}:{peer[1]}" if peer else "?"
    return (where, session_id or "", str(request_id))


def request_key(request: Any, request_id: Any) -> CallKey | None:
    """The key of a call that came in an HTTP request (a Starlette `Request`), else None."""
    if request is None or not hasattr(request, "headers"):
        return None  # stdio: cancellation arrives as notifications/cancelled
    client = request.client
    peer = (client.host, client.port) if client else None
    return call_key(peer, request.headers.get("mcp-session-id"), request_id)


class InFlight:
    """Cancel flags of the tool calls in flight over HTTP, by `CallKey`.

    Used from the event loop only (registration and cancel), so no lock.
    """

    def __init__(self) -> None:
        self._flags: dict[CallKey, threading.Event] = {}

    @contextlib.contextmanager
    def track(self, key: CallKey | None, flag: threading.Event) -> Iterator[None]:
        """Register `flag` under `key` for the duration of the block (nothing if no key)."""
        if key is None:
            yield
            return
        self._flags[key] = flag
        try:
            yield
        finally:
            if self._flags.get(key) is flag:
                del self._flags[key]

    def cancel(self, key: CallKey) -> bool:
        """Set the cancel flag of the call under `key`; False if none is in flight."""
        flag = self._flags.get(key)
        if flag is None:
            return False
        flag.set()
        return True

    def __len__(self) -> int:
        return len(self._flags)
