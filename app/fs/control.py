"""What long fs work asks of the call it runs in: has it been cancelled, and where is it.

Every walk, scan, index refresh and history walk calls `check()` between steps (a
cancelled call raises there, changing nothing further) and may report `progress()`.
The call layer (`app.calls`) supplies the real one, tied to the MCP request; direct
callers (tests, benchmarks, the command line) pass `NoControl()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

# Pays the byte budget for n bytes at rel, or raises BudgetSpent (app.errors): a change or a
# media read calls it once it knows its size, before the first byte is written or read.
Pay = Callable[[int, str], None]


class Control(Protocol):
    """What long fs work needs from its call: a cancel check and a progress sink."""

    def check(self) -> None: ...

    def progress(
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None: ...


class NoControl:
    """For direct callers (tests, benchmarks): never cancelled, progress dropped."""

    def check(self) -> None:
        return None

    def progress(
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None
