"""Who gets a session when the table is full, and what may open one (`SessionGate`).

Threat: with the token, a client can open sessions until the table is full;
the SDK then answers 503 to every new client, and our first answer to that,
closing the longest-idle session, let 300 initialize-only sessions evict a
client in the middle of its work. An invalid POST (`{}`) was answered 400 but
went through admission first, so it evicted a session too and carried a
session id of its own.

- Only a well-formed opening request reaches the SDK's admission: a POST
  without `Mcp-Session-Id` in the handshake era must accept the answer's media
  types, send JSON and be a JSON-RPC `initialize` request; anything else is
  refused here (400/406/415) and never creates or evicts a session.
- When the table is full, a new session evicts first the oldest session that
  never made a call after `initialize`, then the longest idle among those
  whose last call ended over `PROTECTED_FOR` ago. A session with a call in
  flight, or whose last call ended within `PROTECTED_FOR`, is never evicted;
  when every session is such, the newcomer gets 503 with `Retry-After`. A call
  is a POST in the session answered 200 (a JSON-RPC request; notifications are
  answered 202); an open GET stream is not a call.
- `Retry-After` is a moment a retry can succeed, kept: the first refusal picks
  the session whose protection ends soonest (the least recently used) and
  promises its slot at that moment; calls it makes after that no longer
  extend its protection past it, and every newcomer refused meanwhile is told
  the same moment. (It was the protection's remaining time, recomputed at each
  refusal: with every session used every 20 s it counted 60, 57, ... 39, then
  57 again, and 25 of 25 tries over 75 s were refused.) Only a call in flight
  at that moment keeps the promised session; the next refusal promises anew.

With `[[clients]]` a session belongs to the client whose token opened it: a request of
another client in it is answered 404 (as a session that does not exist), and a reload that
removes a client ends its sessions (`end_sessions_of_removed`). Each client's share of the
table is bounded (`client_share`: the table's size over the number of clients, at least
one): a client at its share that opens another session replaces one of its own by the rule
above, or is refused 503 with a `Retry-After` about its own sessions, so that no client
keeps another out.

The SDK's session table and admission hook are reached through `app.sdk`.
"""

from __future__ import annotations

import contextvars
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http import check_accept_headers
from mcp_types import JSONRPCRequest, jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import sdk
from app.calls import CLIENT_KEY
from app.http.body import body_of
from app.http.guards import header

PROTECTED_FOR = 60.0  # seconds after its last call during which a session is never evicted
# A session the SDK admitted whose opening answer we never saw as a 200 (its client left first,
# or the SDK answered otherwise) has no record: past this long since we first saw it in the
# table, it counts as never used, else it would hold its slot until the SDK's idle timeout.
OPENING_GRACE = 30.0


@dataclass
class _Use:
    opened: float
    last_call: float | None = None  # when its last call ended; None: no call yet
    busy: int = 0  # POSTs in flight
    client: str | None = None  # the [[clients]] client whose token opened it


# The [[clients]] client of the `initialize` being admitted (set by `SessionGate` around it).
_opening_client: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "loomfs_opening_client", default=None
)


class SessionPolicy:
    """Our record of each session's calls, and the admission rule built on it."""

    def __init__(self, manager: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.manager = manager
        self.clock = clock
        self.uses: dict[str, _Use] = {}
        self.unrecorded: dict[str, float] = {}  # session id -> when first seen without a record
        self.promise: tuple[float, str] | None = None  # (when, session): a slot told to a retry
        # How many sessions one [[clients]] client may hold (None: no bound per client).
        self.client_share: Callable[[], int | None] = lambda: None
        admit = sdk.admission(manager)

        def admit_or_evict(requestor: Any) -> Any:
            client = _opening_client.get()
            if client is not None and self.at_share(client):
                victim = self.victim(of=client)
                if victim is None:
                    return None  # 503, with a Retry-After about its own sessions
                self._evict(victim)
            elif self._full():
                victim = self.victim()
                if victim is None:
                    return None  # the SDK answers 503; SessionGate adds Retry-After
                self._evict(victim)
            return admit(requestor)

        sdk.set_admission(manager, admit_or_evict)

    def _full(self) -> bool:
        cap = self.manager.max_sessions
        return cap is not None and len(sdk.session_table(self.manager)) >= cap

    def opened(self, session_id: str) -> _Use:
        live = sdk.session_table(self.manager)
        for gone in [sid for sid in self.uses if sid not in live]:
            del self.uses[gone]
        self.unrecorded.pop(session_id, None)
        use = self.uses[session_id] = _Use(opened=self.clock())
        return use

    def at_share(self, client: str) -> bool:
        """Whether `client` holds as many sessions as its share of the table (or more)."""
        share = self.client_share()
        if share is None:
            return False
        table = sdk.session_table(self.manager)
        held = sum(1 for sid, use in self.uses.items() if use.client == client and sid in table)
        return held >= share

    def _table(self, of: str | None) -> Any:
        """The open sessions, or those of client `of` only."""
        table = sdk.session_table(self.manager)
        if of is None:
            return table
        return [sid for sid in table if (use := self.uses.get(sid)) is not None
                and use.client == of]

    def victim(self, of: str | None = None) -> str | None:
        """The session a newcomer may replace (of client `of`, when given), or None when
        every one is protected."""
        now = self.clock()
        never: list[tuple[float, str]] = []
        idle: list[tuple[float, str]] = []
        whole = sdk.session_table(self.manager)
        for gone in [sid for sid in self.unrecorded if sid not in whole]:
            del self.unrecorded[gone]
        table = self._table(of)
        for sid in table:
            use = self.uses.get(sid)
            if use is None:  # still opening, unless its answer never came
                seen = self.unrecorded.setdefault(sid, now)
                if now - seen > OPENING_GRACE:
                    never.append((seen, sid))
                continue
            if use.busy:  # a call in flight
                continue
            if use.last_call is None:
                never.append((use.opened, sid))
            elif now - use.last_call > PROTECTED_FOR:
                idle.append((use.last_call, sid))
        for pool in (never, idle):
            if pool:
                return min(pool)[1]
        return self._promised(now, table, whole)

    def _promised(self, now: float, table: Any, whole: Any) -> str | None:
        """The session whose slot a `Retry-After` promised, once that moment has come and
        unless a call is in flight in it (and it is in `table`: one client's sessions)."""
        if self.promise is None:
            return None
        when, sid = self.promise
        if sid not in whole:
            self.promise = None  # gone on its own: its slot is free
            return None
        if sid not in table:
            return None
        use = self.uses.get(sid)
        if now < when or (use is not None and use.busy):
            return None
        self.promise = None
        return sid

    def retry_after(self, of: str | None = None) -> int:
        """Whole seconds until the promised slot can be had: the promise made by an earlier
        refusal, else a new one on the session whose protection ends soonest (every session
        with a call in flight: a full minute, promising nothing). With `of`, among the
        sessions of that client (one at its share waits for one of its own)."""
        now = self.clock()
        table = self._table(of)
        if self.promise is not None and self.promise[1] in table and self.promise[0] > now:
            return max(1, math.ceil(self.promise[0] - now))
        ends: list[tuple[float, str]] = []
        for sid in table:
            use = self.uses.get(sid)
            if use is None:  # still opening: counts as never used after the grace
                ends.append((self.unrecorded.get(sid, now) + OPENING_GRACE, sid))
            elif not use.busy and use.last_call is not None:
                ends.append((use.last_call + PROTECTED_FOR, sid))
        if of is not None:  # one client's own wait: the table's promise is not touched
            return max(1, math.ceil(min(ends)[0] - now)) if ends else math.ceil(PROTECTED_FOR)
        if not ends:
            self.promise = None
            return math.ceil(PROTECTED_FOR)
        self.promise = min(ends)
        return max(1, math.ceil(self.promise[0] - now))

    def end_sessions_of_removed(self, clients: set[str]) -> int:
        """End every session opened by a client that is not among `clients` (a reload
        removed it); how many. Sessions opened without a client are left as they are."""
        gone = [sid for sid, use in self.uses.items()
                if use.client is not None and use.client not in clients]
        for sid in gone:
            self._evict(sid)
        return len(gone)

    def _evict(self, session_id: str) -> None:
        manager = self.manager
        transport = sdk.forget_session(manager, session_id)
        self.uses.pop(session_id, None)
        if self.promise is not None and self.promise[1] == session_id:
            self.promise = None
        # Its id answers 404 at once; ending its idle scope ends its server task, which
        # terminates the transport (the scope is set whenever there is an idle timeout).
        if transport is not None and transport.idle_scope is not None:
            transport.idle_scope.cancel()


def opening_refusal(scope: Scope, json_only: bool) -> tuple[int, str] | None:
    """Why a POST without a session id cannot open one (status, message), or None."""
    has_json, has_sse = check_accept_headers(Request(scope))
    if not has_json or not (has_sse or json_only):
        wanted = "application/json" if json_only else "both application/json and text/event-stream"
        return 406, f"Not Acceptable: Client must accept {wanted}"
    content_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return 415, "Unsupported Media Type: Content-Type must be application/json"
    body = body_of(scope)
    try:
        message = jsonrpc_message_adapter.validate_json(body or b"", by_name=False)
    except (ValueError, RecursionError):
        message = None
    if not (isinstance(message, JSONRPCRequest) and message.method == "initialize"):
        return 400, ("Bad Request: a request without an Mcp-Session-Id header must be an "
                     "initialize request (JSON-RPC 2.0)")
    return None


class SessionGate:
    """Refuse what may not open a session, and keep `SessionPolicy`'s record of calls."""

    def __init__(self, app: ASGIApp, policy: SessionPolicy, json_only: bool, path: str = "/mcp"):
        self.app = app
        self.policy = policy
        self.json_only = json_only
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        session_id = header(scope, b"mcp-session-id")
        if session_id is None:
            await self._opening(scope, receive, send)
            return
        use = self.policy.uses.get(session_id)
        if use is not None and use.client is not None and scope.get(CLIENT_KEY) != use.client:
            await _jsonrpc_error(send, 404, "Not Found: no such session")
            return
        if use is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if status == 200:
                    use.last_call = self.policy.clock()
            await send(message)

        use.busy += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            use.busy -= 1
            if status == 200:
                use.last_call = self.policy.clock()

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = header(scope, b"mcp-protocol-version")
        if scope.get("method") != "POST" or (
            version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
        ):  # per-request (2026-07-28) requests open no session
            await self.app(scope, receive, send)
            return
        refusal = opening_refusal(scope, self.json_only)
        if refusal is not None:
            await _jsonrpc_error(send, *refusal)
            return
        client = scope.get(CLIENT_KEY)
        client = client if isinstance(client, str) else None

        opened: _Use | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                if message["status"] == 503:
                    at_share = client is not None and self.policy.at_share(client)
                    retry = str(self.policy.retry_after(client if at_share else None)).encode()
                    message = {**message, "headers": [*headers, (b"retry-after", retry)]}
                elif message["status"] == 200:
                    for key, value in headers:
                        if key.lower() == b"mcp-session-id":
                            opened = self.policy.opened(value.decode("latin-1"))
                            opened.client = client
                            opened.busy += 1  # not evicted while its initialize streams
            await send(message)

        admitting = _opening_client.set(client)
        try:
            await self.app(scope, receive, watch)
        finally:
            _opening_client.reset(admitting)
            if opened is not None:
                opened.busy -= 1


async def _jsonrpc_error(send: Send, status: int, text: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": text}}
    body = json.dumps(error).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

