"""The crash loops' writer: a long-lived helper process imports the app once and, for each
round, forks a fresh writer that changes files again and again until the test SIGKILLs it
at a random moment (so thirty kills cost thirty forks, not thirty interpreter starts).

A test gives the helper's `setup`: Python that reads its arguments from `sys.argv` and
defines `step(n)`, one change (n counts from the round's number, so each round starts
where the one before left off). The helper prints `ready`; per round the test sends the
round's number, the helper prints the writer's pid, the writer prints `started` once its
first step is done (the kill may come from then on), and the helper prints `reaped`.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import TracebackType

REPO = Path(__file__).resolve().parents[1]

_LOOP = """
print("ready", flush=True)
for line in sys.stdin:
    pid = os.fork()
    if pid == 0:
        try:
            n = first = int(line)
            while True:
                step(n)
                if n == first:
                    print("started", flush=True)
                n += 1
        finally:
            os._exit(1)  # never fall back into the helper's loop
    print(pid, flush=True)
    os.waitpid(pid, 0)
    print("reaped", flush=True)
"""


class CrashLoop:
    """The helper process, started on `setup` with `args`; a context manager."""

    def __init__(self, setup: str, *args: str, deadline_s: float = 90.0) -> None:
        script = "import os, sys\n" + textwrap.dedent(setup) + _LOOP
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen([sys.executable, "-c", script, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, cwd=REPO)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both PIPE
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.deadline = time.monotonic() + deadline_s
        assert self.stdout.readline().strip() == "ready"

    def kill_round(self, n: int, rng: random.Random, most_s: float = 0.08) -> None:
        """Round `n`: a fresh writer, killed with SIGKILL after a random delay of at most
        `most_s` once its first step is done, however slow the machine is."""
        assert time.monotonic() < self.deadline, "crash loop took too long"
        self.stdin.write(f"{n}\n")
        self.stdin.flush()
        # The helper's pid line and the writer's "started" may come in either order.
        lines = {self.stdout.readline().strip() for _ in range(2)}
        lines.discard("started")
        (pid,) = (int(x) for x in lines)
        time.sleep(rng.uniform(0.0, most_s))
        os.kill(pid, signal.SIGKILL)
        assert self.stdout.readline().strip() == "reaped"

    def __enter__(self) -> CrashLoop:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=10)  # reaps it and closes both pipes


def stamps(trash: Path) -> set[str]:
    """The trash's stamp folders now (none when there is no trash yet)."""
    return set(os.listdir(trash)) if trash.exists() else set()


def kept_since(trash: Path, before: set[str], name: str, data: bytes) -> bool:
    """`data`, what `name` held, is kept in a stamp folder made since `before`."""
    return any(p.exists() and p.read_bytes() == data
               for p in (trash / m / name for m in stamps(trash) - before))
