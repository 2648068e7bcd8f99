"""What `list_roots` and `reload_config` answer: the roots as a client sees them.

Apart from `app.tools.admin` so that `app.tools.render` can key their renderers
by these classes without importing a tool module.
"""

from __future__ import annotations

from pydantic import BaseModel


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
