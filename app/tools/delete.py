"""The delete tool (permission `delete`): entries go to the root's trash, never erased.

Registered only when some root grants delete (only the `workspace` role can).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from app.fs.change import trash
from app.fs.change.trash import DeleteResult
from app.tools.base import Call, PathArg, RootArg, run, tool


# Destructive although nothing is erased: the entry leaves the agent's view for good
# (the trash is out of its reach). Not idempotent: a retry trashes whatever now has that path.
@tool(perm="delete", title="Delete to trash", read_only=False, destructive=True, idempotent=False)
async def delete(
    ctx: Context, path: PathArg, root: RootArg = None
) -> Annotated[CallToolResult, DeleteResult]:
    """Move a file or folder to the root's trash (only the owner can restore it)."""

    def work(call: Call) -> DeleteResult:
        return trash.delete(call.root(root), path)

    return await run(ctx, work)
