"""Connections without the token, held open against an HTTP server, and a client with it.

`Flood` keeps `count` raw TCP connections open from one thread: silent ones
(send nothing), slowloris ones (an unfinished head, then one more byte every
`DRIP_EVERY` seconds), or ones that ask with a wrong token and keep the
connection; with `reopen`, each one the server closes is opened again at once
(the churn). `prober` is the authenticated client the flood must not keep out:
a `ping` in its own session, each on a new connection (the case where it too
arrives without credentials first). `benchmarks/worst_cases_http.py` times both;
`tests/service/test_http_connection_floods.py` asserts every probe succeeds.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

DRIP_EVERY = 0.2  # seconds between two bytes of a slowloris connection
SLOW_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
WRONG_TOKEN = (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n"
               b"Accept: text/event-stream\r\n\r\n")


@dataclass(frozen=True)
class Shape:
    opening: bytes = b""  # sent once a connection is open
    drip: bool = False  # then one byte every DRIP_EVERY s, never ending the head
    reopen: bool = True  # each connection the server closes is opened again at once


SHAPES: dict[str, Shape] = {
    "silent": Shape(reopen=False),
    "silent_reopened": Shape(),
    "slowloris_reopened": Shape(SLOW_HEAD, drip=True),
    "wrong_token_kept_open": Shape(WRONG_TOKEN),
}


@dataclass
class Flood:
    port: int
    count: int
    shape: Shape
    opened: int = 0  # connections opened, reopened ones included
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Flood:
        self._selector = selectors.DefaultSelector()
        for _ in range(self.count):
            self._open()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        for key in list(self._selector.get_map().values()):
            self._close(key.fileobj)  # type: ignore[arg-type]
        self._selector.close()

    def _open(self) -> None:
        with contextlib.suppress(OSError):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            s.sendall(self.shape.opening)
            s.setblocking(False)
            self._selector.register(s, selectors.EVENT_READ)
            self.opened += 1

    def _close(self, s: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(s)
        s.close()

    def _run(self) -> None:
        next_drip = time.monotonic() + DRIP_EVERY
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.05):
                s: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    closed = not s.recv(1 << 16)  # an answer is read and dropped
                except BlockingIOError:
                    continue
                except OSError:
                    closed = True
                if closed:
                    self._close(s)
                    if self.shape.reopen:
                        self._open()
            if self.shape.drip and time.monotonic() >= next_drip:
                next_drip += DRIP_EVERY
                for key in list(self._selector.get_map().values()):
                    with contextlib.suppress(OSError):
                        key.fileobj.send(b"a")  # type: ignore[union-attr]


def open_session(port: int, token: str) -> str:
    """A session opened with `token` (before the flood: the prober's calls are pings in it)."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "prober", "version": "0"}}}
    status, headers = _post(port, token, init, {})
    if status != 200:
        raise RuntimeError(f"initialize: HTTP {status}")
    return headers["mcp-session-id"]


def probe(port: int, token: str, sid: str, request_id: int = 2) -> int:
    """One `ping` in session `sid` on a new connection; its HTTP status (0: no answer)."""
    ping = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    try:
        return _post(port, token, ping, {"mcp-session-id": sid,
                                         "mcp-protocol-version": "2025-11-25"})[0]
    except (OSError, http.client.HTTPException):
        return 0


def _post(port: int, token: str, body: dict[str, object], extra: dict[str, str]
          ) -> tuple[int, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/mcp", json.dumps(body), {
            "Authorization": f"Bearer {token}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "Connection": "close", **extra})
        answer = conn.getresponse()
        answer.read()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}
    finally:
        conn.close()
