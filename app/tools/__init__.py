"""MCP tools, one module per group; `app.server` registers them by permission.

A tool is an async function marked with `@tool(...)` whose body hands its
work to `app.tools.base.run`. Tools appear in the order of this list.
"""

from __future__ import annotations

MODULES: tuple[str, ...] = (
    "app.tools.admin",
    "app.tools.read",
    "app.tools.search",
    "app.tools.history",
    "app.tools.write",
    "app.tools.delete",
    "app.tools.deep_research",
)
