"""What `list_roots` and `reload_config` answer: the roots as a client sees them.

Apart from `app.tools.admin` so that `app.tools.render` can key their renderers
by these classes without importing a tool module.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class BudgetInfo(BaseModel):
    """A byte budget's bucket as it stands (docs/configuration.md#budget)."""

    bytes_per_minute: int
    burst_bytes: int
    available_bytes: int


class RootInfo(BaseModel):
    name: str
    role: str
    permissions: list[str]
    default: bool
    max_read_bytes: int
    budget: BudgetInfo | None = Field(
        default=None, description="This root's own byte budget, paid on top of the server's."
    )


class ListRootsResult(BaseModel):
    roots: list[RootInfo]
    budget: BudgetInfo | None = Field(
        default=None, description="The server's byte budget, in bytes of file content returned "
        "(reads, fetch, search_text's lines, diffs) and written; null when there is none."
    )
    client_budget: BudgetInfo | None = Field(
        default=None, description="The calling client's own byte budget ([[clients]]), paid "
        "on top of the server's and the root's; null when it has none."
    )


class ReloadResult(BaseModel):
    reloaded: bool
    generation: int
    roots: list[RootInfo]
    tools: list[str]
