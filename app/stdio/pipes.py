"""stdio without a worker thread per line: asyncio pipes under the SDK's transport.

The SDK's stdio transport reads every line, and writes and flushes every
message, through a worker thread (`anyio.wrap_file`): three thread hand-offs
per call. Without them a small read cost the server 20-45% less CPU in
side-by-side runs (py-spy showed where). When stdin and stdout are pipes or
sockets (what MCP clients spawn us with) we give the SDK's `stdio_server` line
iterators built on asyncio's pipe transports instead; framing, parsing and the
protocol stay the SDK's. Anything else (a regular file redirected to stdin, a
terminal, a platform without `fcntl`) keeps the SDK's own path.

A line (one JSON-RPC message) may hold at most what HTTP's body limit allows
(`line_limit`); a longer one is dropped as it streams in, never held whole,
and answered with a JSON-RPC error whose id is null (the id is not read: that
would mean holding the line). The SDK's own path (stdin not a pipe) keeps
the SDK's unbounded lines.

Like the SDK, fds 0 and 1 are diverted while serving (0 reads /dev/null, 1
writes to stderr), so a stray print or a child process cannot corrupt the
protocol stream; both are restored on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from app import hostfiles

try:
    import fcntl
except ImportError:  # not POSIX: the SDK's own transport serves
    fcntl = None  # type: ignore[assignment]

CHUNK = 1 << 16


def _pollable(fd: int) -> bool:
    """A pipe or a socket: what every event loop can watch (terminals not everywhere)."""
    if fcntl is None:
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def line_limit(server: Any) -> int:
    """The longest request line: what HTTP's body limit allows (a write_file of a file at
    the largest `max_read_bytes`, JSON-escaped), read at each line (reload may change it)."""
    largest = max(r.max_read_bytes for r in server.registry.current.roots.values())
    return largest * 2 + (1 << 20)


def too_long(limit: int) -> str:
    """The JSON-RPC error answered to a line over the limit (its id is never read)."""
    error = {"code": -32600, "message": f"request too large: a line may hold at most {limit} "
             "bytes; it was dropped unread"}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}) + "\n"


class PipeLines:
    """`async for line in stdin`: decoded lines, each at most `limit()` bytes.

    A longer line is dropped as it arrives (never held whole: a 100 MB line once
    lifted the process to 371 MB) and answered with `too_long` through `refuse`.
    Each line returned is also put on `seen`, if given, for whoever matches it with
    the message the SDK makes of it (`every_line.Lines`, which takes it off).
    """

    def __init__(
        self, reader: asyncio.StreamReader, limit: Callable[[], int] = lambda: 1 << 62,
        refuse: Callable[[int], Awaitable[None]] | None = None,
        seen: deque[str] | None = None,
    ) -> None:
        self._reader = reader
        self._buf = bytearray()
        self._scanned = 0
        self._limit = limit
        self._refuse = refuse
        self._dropping = 0  # the limit in force when a line being dropped went over it
        self.seen = seen

    def _line(self, raw: bytes) -> str:
        line = raw.decode("utf-8", errors="replace")
        if self.seen is not None:
            self.seen.append(line)
        return line

    def __aiter__(self) -> PipeLines:
        return self

    async def _dropped(self) -> None:
        limit, self._dropping = self._dropping, 0
        if self._refuse is not None:
            await self._refuse(limit)

    async def __anext__(self) -> str:
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                if self._dropping or end >= self._limit():
                    self._dropping = self._dropping or self._limit()
                    del self._buf[: end + 1]
                    self._scanned = 0
                    await self._dropped()
                    continue
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                self._scanned = 0
                return self._line(line)
            if self._dropping or len(self._buf) > self._limit():
                self._dropping = self._dropping or self._limit()
                self._buf.clear()
            self._scanned = len(self._buf)
            chunk = await self._reader.read(CHUNK)
            if not chunk:
                if self._dropping:
                    self._buf.clear()
                    await self._dropped()
                if not self._buf:
                    raise StopAsyncIteration
                line = bytes(self._buf)
                self._buf.clear()
                return self._line(line)
            self._buf += chunk


class PipeWriter:
    """`await stdout.write(text)` / `await stdout.flush()` on a non-blocking fd.

    Plain `os.write`, waiting on the loop only when the pipe is full; no
    asyncio write transport: its peer-closed trick watches the fd for
    readability, which on a socketpair (what libuv-based clients give their
    children as stdio) is every incoming request.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = asyncio.Lock()  # whole messages: the SDK's and our own refusals

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        async with self._lock:
            while data:
                try:
                    data = data[os.write(self._fd, data):]
                except BlockingIOError:
                    await self._writable()

    async def flush(self) -> None:
        """Nothing to do: `write` returns once every byte is in the pipe."""

    async def _writable(self) -> None:
        loop = asyncio.get_running_loop()
        room: asyncio.Future[None] = loop.create_future()
        def wake() -> None:
            if not room.done():
                room.set_result(None)

        loop.add_writer(self._fd, wake)
        try:
            await room
        finally:
            loop.remove_writer(self._fd)


@contextlib.contextmanager
def _claimed(fd: int, diversion: int) -> Any:
    """A private duplicate of `fd` for the wire; `fd` itself points at `diversion`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
        try:
            yield private
        finally:
            os.set_blocking(private, True)
            os.dup2(private, fd)
    finally:
        os.close(private)


@contextlib.asynccontextmanager
async def pipes(
    limit: Callable[[], int] = lambda: 1 << 62,
) -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    """Line reader and writer on fds 0 and 1, or None when they cannot be polled."""
    if not (_pollable(0) and _pollable(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    devnull = hostfiles.devnull()
    try:
        with _claimed(0, devnull) as rfd, _claimed(1, 2) as wfd:
            reader = asyncio.StreamReader(limit=CHUNK)
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(rfd, "rb", 0, closefd=False)
            )
            os.set_blocking(wfd, False)
            writer = PipeWriter(wfd)

            async def refuse(over: int) -> None:
                await writer.write(too_long(over))

            try:  # the transport closes its file object; the fds are closed by _claimed
                yield PipeLines(reader, limit, refuse, deque()), writer
            finally:
                transport.close()
    finally:
        os.close(devnull)
