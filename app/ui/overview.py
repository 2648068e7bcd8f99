"""The overview: roots, clients and their sessions, the budget's buckets, the indexes."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from app.ui.context import UiContext


@dataclass(frozen=True)
class Gauge:
    who: str
    available: int
    burst: int
    per_minute: int

    @property
    def share(self) -> float:
        return self.available / self.burst if self.burst else 0.0


def gauges(ctx: UiContext) -> list[Gauge]:
    snap = ctx.registry.current
    budget = snap.budget
    found: list[Gauge] = []

    def add(who: str, level: Any) -> None:
        if level is not None:
            found.append(Gauge(who, level.available_bytes, level.burst_bytes,
                               level.bytes_per_minute))

    add("the server", budget.levels())
    for name in snap.roots:
        add(f"root {name}", budget.levels(root=name))
    for c in snap.config.clients:
        add(f"client {c.name}", budget.levels(client=c.name))
    return found


@dataclass(frozen=True)
class ClientRow:
    name: str
    grant: str
    sessions: int | None  # None: not known here (a `--ui` process)
    busy: int | None
    last_call: str


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "no call yet"
    if seconds < 120:
        return f"{int(seconds)} s ago"
    if seconds < 7200:
        return f"{int(seconds // 60)} min ago"
    return f"{int(seconds // 3600)} h ago"


def clients(ctx: UiContext) -> list[ClientRow]:
    snap = ctx.registry.current
    uses: dict[str, Any] = dict(getattr(ctx.mcp_sessions, "uses", {}) or {})
    now = time.monotonic()
    names: list[tuple[str | None, str, str]] = [
        (c.name, c.name, ", ".join(f"{r} [{', '.join(p)}]" for r, p in c.grants))
        for c in snap.config.clients
    ]
    if not names:
        names = [(None, "every client with the token", "every root")]
    rows = []
    for key, name, grant in names:
        mine = [u for u in uses.values() if u.client == key]
        last = max((u.last_call for u in mine if u.last_call is not None), default=None)
        rows.append(ClientRow(
            name, grant,
            None if ctx.standalone else len(mine),
            None if ctx.standalone else sum(u.busy for u in mine),
            "-" if ctx.standalone else _ago(None if last is None else now - last),
        ))
    return rows


def roots(ctx: UiContext) -> list[dict[str, str]]:
    loaded = ctx.registry.current.config
    return [{"name": r.name, "role": r.role, "permissions": ", ".join(r.permissions),
             "path": r.real, "default": "yes" if r.name == loaded.default_root else ""}
            for r in loaded.roots]


def indexes(ctx: UiContext) -> list[str]:
    from app.corpus.trigram import check_lines

    try:
        return check_lines(ctx.registry.current.config)
    except Exception as exc:  # a state the page cannot read is said, never a 500
        return [f"the indexes' state cannot be read ({type(exc).__name__})"]
