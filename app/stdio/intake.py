"""Back-pressure on stdio: no new request is taken while `MAX_IN_FLIGHT` answers are owed.

Threat: a client that writes requests and stops reading. The SDK starts a task
for every request it reads, and each finished task waits, holding its answer,
until stdout takes it: 20,000 reads of a 242 KB file sent while nothing read
stdout took the server from 82 MB to 1.93 GB in 74 s, still growing.

`Intake` sits between the SDK's stdio transport and the server's message loop.
It counts the requests handed to the server and the answers (results and
errors, by id) handed back to the writer; while `MAX_IN_FLIGHT` are owed, the
next request waits before it reaches the server. The transport's reader then
waits too, stdin is no longer read, and the pipe fills: the client's writes
block, which is what a pipe is for. Once the client reads, answers go out and
requests come in again. A request the client cancels (`notifications/cancelled`)
is never answered (MCP spec), so it stops counting when the cancel arrives.

What it holds at most: `MAX_IN_FLIGHT` answers, one being written, one message
waiting here and the line the reader is on.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import anyio
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

MAX_IN_FLIGHT = 32  # requests taken whose answers are not yet handed to stdout


class Intake:
    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        self.limit = limit
        self.owed: Counter[Any] = Counter()  # answers owed, by request id
        self.count = 0
        self._room = anyio.Event()

    async def admit(self, item: Any) -> None:
        """Called for every message read, before the server sees it: a request waits for
        room; a cancel settles what it cancels."""
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCRequest):
            while self.count >= self.limit:
                self._room = anyio.Event()
                await self._room.wait()
            self.owed[coerce_request_id(message.id)] += 1
            self.count += 1
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            params = message.params or {}
            request_id = params.get("requestId")
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                self.settle(request_id)

    def answered(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.settle(message.id)

    def settle(self, request_id: Any) -> None:
        key = coerce_request_id(request_id)
        if self.owed.get(key, 0) <= 0:  # answered already, or never taken
            return
        self.owed[key] -= 1
        if not self.owed[key]:
            del self.owed[key]
        self.count -= 1
        self._room.set()


class _Stream:
    """A stream wrapper that closes what it wraps; everything else is the wrapped one's."""

    def __init__(self, inner: Any, intake: Intake) -> None:
        self._inner = inner
        self._intake = intake

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


class Requests(_Stream):
    """The server's read stream: what a read becomes (`take`: none, it, or a batch's
    members; `every_line.Lines`), each message passing `Intake.admit` first."""

    def __init__(self, inner: Any, intake: Intake,
                 take: Callable[[Any], Awaitable[list[Any]]] | None = None) -> None:
        super().__init__(inner, intake)
        self._take = take
        self._ready: deque[Any] = deque()

    @property
    def last_context(self) -> Any:  # the sender's context (the SDK's context streams)
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while not self._ready:
            item = await self._inner.receive()
            self._ready.extend([item] if self._take is None else await self._take(item))
        item = self._ready.popleft()
        await self._intake.admit(item)
        return item

    def __aiter__(self) -> Requests:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class Answers(_Stream):
    """The server's write stream: an answer counts once the writer has taken it (or
    `keep`, a batch's, has: it settles it when the batch goes out)."""

    def __init__(self, inner: Any, intake: Intake,
                 keep: Callable[[Any], Awaitable[bool]] | None = None) -> None:
        super().__init__(inner, intake)
        self._keep = keep

    async def send(self, item: Any) -> None:
        if self._keep is not None and await self._keep(item):
            return
        await self._inner.send(item)
        self._intake.answered(item)
