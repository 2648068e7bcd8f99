"""Tools present whatever the configuration: `list_roots` and `reload_config`.

With `[[clients]]` both answer by the calling client's grant: its roots, its tools; a
reload the config refuses tells the client only that (the reason names roots and clients
it may not know of: it goes to the server's log, for the person).
"""

from __future__ import annotations

import logging
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from app.calls import granted
from app.errors import LoomError
from app.registry import Snapshot
from app.tools.base import Call, error_result, host_of, ok_result, run, tool
from app.tools.roots import BudgetInfo, ListRootsResult, ReloadResult, RootInfo

log = logging.getLogger("loomfs.admin")
REFUSED_FOR_CLIENTS = (
    "the config was refused, nothing changed: the reason is in the server's log"
)


def _budget(
    snapshot: Snapshot, root: str | None, client: str | None = None
) -> BudgetInfo | None:
    level = snapshot.budget.levels(root, client)
    return None if level is None else BudgetInfo(**vars(level))


def _roots(call_snapshot: Snapshot) -> list[RootInfo]:
    default = call_snapshot.default_root
    return [
        RootInfo(
            name=r.name,
            role=r.role,
            permissions=list(r.permissions),
            default=r.name == default,
            max_read_bytes=r.max_read_bytes,
            budget=_budget(call_snapshot, r.name),
        )
        for r in call_snapshot.roots.values()
    ]


@tool(perm=None, title="List roots", read_only=True, idempotent=True)
async def list_roots(ctx: Context) -> Annotated[CallToolResult, ListRootsResult]:
    """Call first: your roots and what each permits. Paths are relative to a root, '/'
    between names; without `root` a tool uses the default root."""

    def work(call: Call) -> ListRootsResult:
        snap = call.snapshot
        return ListRootsResult(
            roots=_roots(snap), budget=_budget(snap, None),
            client_budget=_budget(snap, None, snap.client) if snap.client else None,
        )

    return await run(ctx, work)


@tool(perm=None, title="Reload configuration", read_only=False, idempotent=True)
async def reload_config(ctx: Context) -> Annotated[CallToolResult, ReloadResult]:
    """Re-read the server's config; an invalid one changes nothing."""
    server = host_of(ctx)
    had_clients = server.registry.current.has_clients
    try:
        snap = await server.reload()
    except LoomError as exc:
        if had_clients:
            log.error("reload_config refused: %s", exc.message)
            return error_result(REFUSED_FOR_CLIENTS)
        return error_result(exc.message)
    seen = granted(snap)
    tools = server.active_tools
    if snap.has_clients:
        tools = tools & server.surface_of(seen)
    return ok_result(
        ReloadResult(
            reloaded=True,
            generation=snap.generation,
            roots=_roots(seen),
            tools=sorted(tools),
        ),
        text_format=snap.limits.text_format,
    )
