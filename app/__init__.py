"""loom-fs-mcp: a secure, role-based filesystem MCP server."""

from __future__ import annotations

__version__ = "0.1.0"
