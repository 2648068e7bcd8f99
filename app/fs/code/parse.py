"""Parsing in a worker process, bounded in memory and time, whatever the file holds.

Measured in the server's own process, 1 MiB of `[` in JavaScript cost 249 MB and 4 MiB of
nested brackets in Python 994 MB; a parse of nested brackets can also run for seconds. So
no file is parsed here: long-lived workers (`python -m app.fs.code.worker`, started on the
first outline, not at start-up; `WORKERS` of them at most) parse under `RLIMIT_AS` =
`MEMORY_LIMIT`, one file at a time each, and each parse has `DEADLINE_S`. Past the deadline
the worker is killed (the next parse starts another); past the memory limit it ends or
answers that it stopped. Either way the answer says so (`Parsed.stopped`), with no symbols,
and the server's memory never held the tree. Calls from several threads take the idle
workers in turn; waiting for one counts against the deadline too (`stopped: busy` when none
came free in time).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import selectors
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MEMORY_LIMIT = 512 * 1024 * 1024  # the worker's address space, bytes
DEADLINE_S = 5.0
STOPPED_TIME, STOPPED_MEMORY, STOPPED_DEPTH = "time", "memory", "depth"
STOPPED_BUSY = "busy"  # every worker stayed busy until the deadline
STOPPED_GRAMMAR = "grammar"  # the language's grammar package could not be loaded


@dataclass
class Parsed:
    symbols: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False  # the worker's MAX_SYMBOLS cut the symbols
    errors: bool = False  # the tree holds syntax errors (symbols near them may be missing)
    stopped: str | None = None  # STOPPED_*: the parse did not finish


# What the worker's environment keeps of the server's: how to find Python and `app`, no
# secret (a bearer token in LOOMFS_*, a cloud key) a parser bug could leak.
ENV_KEPT = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANG", "LC_ALL", "LC_CTYPE")
APP_HOME = str(Path(__file__).resolve().parents[3])  # the folder `app` is in: `-m` finds it


class _Worker:
    def __init__(self, memory_limit: int) -> None:
        self.limit = memory_limit
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.fs.code.worker", str(memory_limit)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, cwd=APP_HOME,
            env={k: v for k, v in os.environ.items() if k in ENV_KEPT},
        )

    def ask(self, language: str, depth: int, data: bytes, deadline: float) -> Parsed:
        header = json.dumps({"language": language, "depth": depth}).encode()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(struct.pack(">I", len(header)) + header
                                  + struct.pack(">Q", len(data)))
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Gone from None
        size = self._read(4, deadline)
        body = self._read(struct.unpack(">I", size)[0], deadline)
        got = json.loads(body)
        return Parsed(symbols=got["symbols"], truncated=got["truncated"], errors=got["errors"],
                      stopped=got["stopped"])

    def _read(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks: list[bytes] = []
        got = 0
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while got < n:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise _Late
                chunk = os.read(fd, n - got)
                if not chunk:
                    raise _Gone
                chunks.append(chunk)
                got += len(chunk)
        return b"".join(chunks)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


class _Late(Exception):
    pass


class _Gone(Exception):
    pass


WORKERS = 2  # parses at once; a third call waits its turn (the wait counts in its deadline)


class _Slot:
    """One worker's place in the pool: its process, started on first use, None when gone."""

    def __init__(self) -> None:
        self.worker: _Worker | None = None

    def ask(self, language: str, depth: int, data: bytes, deadline: float,
            memory_limit: int) -> Parsed:
        w = self.worker
        if w is None or w.proc.poll() is not None or w.limit != memory_limit:
            if w is not None:
                w.kill()
            w = self.worker = _Worker(memory_limit)
        try:
            return w.ask(language, depth, data, deadline)
        except _Late:
            stopped = STOPPED_TIME
        except _Gone:  # ended: an allocation past the limit aborted it
            stopped = STOPPED_MEMORY
        w.kill()
        self.worker = None
        return Parsed(stopped=stopped)


_idle: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
_slots = [_Slot() for _ in range(WORKERS)]
for _s in _slots:
    _idle.put(_s)


def parse(language: str, data: bytes, depth: int, *, deadline_s: float = DEADLINE_S,
          memory_limit: int = MEMORY_LIMIT) -> Parsed:
    """The symbols of `data` in `language`, or how the parse stopped."""
    deadline = time.monotonic() + deadline_s
    try:
        slot = _idle.get(timeout=deadline_s)
    except queue.Empty:
        return Parsed(stopped=STOPPED_BUSY)
    try:
        return slot.ask(language, depth, data, deadline, memory_limit)
    finally:
        _idle.put(slot)


def worker_pids() -> set[int]:
    """The running workers' process ids (tests watch them)."""
    return {s.worker.proc.pid for s in _slots
            if s.worker is not None and s.worker.proc.poll() is None}


@atexit.register
def _stop() -> None:
    for s in _slots:
        if s.worker is not None:
            s.worker.kill()
