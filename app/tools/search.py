"""Search tools: search_files (names, by glob) and search_text (a literal in file
contents). Thin handlers: bounds at the edge, the work in `app.fs.search`."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from app.fs import search as search_mod
from app.fs.paging import clamp_limit
from app.tools.base import Call, Offset, RootArg, run, tool

GlobArg = Annotated[str, Field(max_length=1024)]
StartArg = Annotated[
    str,
    Field(
        max_length=4096,
        description="Directory to search under, relative to the root; '' is the root.",
    ),
]


@tool(perm="read", title="Search file names", read_only=True, idempotent=True)
async def search_files(
    ctx: Context,
    pattern: Annotated[
        GlobArg,
        Field(description="Glob: '*.py' matches base names at any depth; 'pkg/*.py' or "
              "'src/**/test_*.py' match the path relative to `path`."),
    ],
    root: RootArg = None,
    path: StartArg = "",
    offset: Offset = 0,
    limit: Annotated[
        int, Field(ge=1, le=100_000, description="Most matches (capped by max_search_results).")
    ] = 100,
) -> search_mod.SearchFilesResult:
    """Find files and directories by glob under path. A pattern without '/' matches the
    base name at any depth (so '*.py' finds every Python file); with '/' it matches the
    path relative to `path`; '**' crosses directories, '*' and '?' stay within one, [abc]
    and [!abc] are classes. Breadth-first, sorted, deterministic; denied names are never
    entered nor shown, symlinks are never followed (skipped_links). Results are paths
    relative to the root. Paginated: when has_more is true, call again with
    offset=next_offset."""

    def work(call: Call) -> search_mod.SearchFilesResult:
        limits = call.snapshot.limits
        return search_mod.search_files(
            call.root(root), pattern, path, offset=offset,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
            control=call,
        )

    return await run(ctx, work)  # type: ignore[return-value]


@tool(perm="read", title="Search text in files", read_only=True, idempotent=True)
async def search_text(
    ctx: Context,
    query: Annotated[
        str, Field(min_length=1, max_length=search_mod.MAX_QUERY, description="Literal text.")
    ],
    root: RootArg = None,
    path: StartArg = "",
    file_glob: Annotated[
        GlobArg, Field(description="Only files matching this glob (same rules as search_files).")
    ] = "*",
    case_sensitive: bool = True,
    offset: Offset = 0,
    limit: Annotated[
        int, Field(ge=1, le=100_000, description="Most matches (capped by max_search_results).")
    ] = 50,
) -> search_mod.SearchTextResult:
    """Find a literal string in the files under path: one match per matching line, with
    its path, line number and a preview. Files larger than max_search_file_bytes and binary
    files are skipped (and counted); one call scans at most max_search_bytes. When the call
    stopped before the end of the tree, truncated is true and note says what was not
    examined and how to narrow (path=, file_glob=). Paginated: when has_more is true, call
    again with offset=next_offset."""

    def work(call: Call) -> search_mod.SearchTextResult:
        limits = call.snapshot.limits
        r = call.root(root)
        return search_mod.search_text(
            r, query, path, file_glob=file_glob, case_sensitive=case_sensitive, offset=offset,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
            file_limit=limits.max_search_file_bytes or r.max_read_bytes,
            budget=limits.max_search_bytes, control=call,
        )

    return await run(ctx, work)  # type: ignore[return-value]
