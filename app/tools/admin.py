"""Tools present whatever the configuration: `list_roots` and `reload_config`."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel

from app.errors import LoomError
from app.tools.base import Call, error_result, ok_result, run, tool


class RootInfo(BaseModel):
    name: str
    role: str
    permissions: list[str]
    default: bool
    max_read_bytes: int


class ListRootsResult(BaseModel):
    roots: list[RootInfo]


class ReloadResult(BaseModel):
    reloaded: bool
    generation: int
    roots: list[RootInfo]
    tools: list[str]


def _roots(call_snapshot) -> list[RootInfo]:
    default = call_snapshot.default_root
    return [
        RootInfo(
            name=r.name,
            role=r.role,
            permissions=list(r.permissions),
            default=r.name == default,
            max_read_bytes=r.max_read_bytes,
        )
        for r in call_snapshot.roots.values()
    ]


@tool(perm=None, title="List roots", read_only=True, idempotent=True)
async def list_roots(ctx: Context) -> ListRootsResult:
    """List the roots this server exposes: name, role (reference: read-only; sourcecode:
    read and write, never delete; workspace: read, write and delete to a recoverable
    trash), effective permissions, whether it is the default root, and the largest file
    it will read. Call this first; every other tool takes one of these names as `root`."""

    def work(call: Call) -> ListRootsResult:
        return ListRootsResult(roots=_roots(call.snapshot))

    return await run(ctx, work)  # type: ignore[return-value]


@tool(perm=None, title="Reload configuration", read_only=False, idempotent=True)
async def reload_config(ctx: Context) -> ReloadResult:
    """Re-read the server's roots file. On success the new roots replace the old ones at
    once and the tool list follows the new permissions; if the file is invalid nothing
    changes and the validation error is returned."""
    server = ctx.mcp_server
    try:
        snap = await server.reload()  # type: ignore[attr-defined]
    except LoomError as exc:
        return error_result(exc.message)  # type: ignore[return-value]
    result: CallToolResult = ok_result(
        ReloadResult(
            reloaded=True,
            generation=snap.generation,
            roots=_roots(snap),
            tools=sorted(server.active_tools),  # type: ignore[attr-defined]
        ),
        text_format=snap.limits.text_format,
    )
    return result  # type: ignore[return-value]
