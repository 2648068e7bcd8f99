"""Search tools: search_files (names, by glob) and search_text (a literal or an RE2
pattern in file contents). Thin handlers: the arguments and the call's limits become one
options object, checked as it is built; the work is in `app.fs.search`. search_text's
lines are file content, paid from the byte budget page by page (`app.tools.metered`)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from app.fs.search.cursor import MAX_CURSOR
from app.fs.search.files import search_files as find_files
from app.fs.search.options import MAX_CONTEXT, MAX_EXCLUDE, MAX_QUERY, FilesOptions, TextOptions
from app.fs.search.results import (
    FILES_LIMIT,
    TEXT_LIMIT,
    SearchFilesResult,
    SearchTextResult,
)
from app.fs.text.paging import clamp_limit
from app.tools.base import Call, Offset, RootArg, run, tool
from app.tools.metered import metered, text_cap, text_used

GlobArg = Annotated[str, Field(max_length=1024)]
ExcludeArg = Annotated[list[Annotated[str, Field(max_length=1024)]], Field(max_length=MAX_EXCLUDE)]
StartArg = Annotated[str, Field(max_length=4096)]
Limit = Annotated[int, Field(ge=1, le=100_000)]
CursorArg = Annotated[str, Field(max_length=MAX_CURSOR, description="A previous next_cursor.")]


@tool(perm="read", title="Search file names", read_only=True, idempotent=True)
async def search_files(
    ctx: Context,
    pattern: GlobArg,
    root: RootArg = None,
    path: StartArg = "",
    cursor: CursorArg = "",
    offset: Offset = 0,
    limit: Limit = FILES_LIMIT,
    exclude: ExcludeArg = [],  # noqa: B006  # never mutated
    no_ignore: bool = False,
) -> Annotated[CallToolResult, SearchFilesResult]:
    """Find files and folders under path by glob: '*.py' names at any depth,
    'src/**/test_*.py' paths below path."""

    def work(call: Call) -> SearchFilesResult:
        limits = call.snapshot.limits
        opts = FilesOptions(
            pattern=pattern, path=path, exclude=exclude, no_ignore=no_ignore, offset=offset,
            cursor=cursor, limit=clamp_limit(limit, limits.max_search_results),
            cap=limits.max_output_chars,
        )
        return find_files(call.root(root), opts, call)

    return await run(ctx, work)


@tool(perm="read", title="Search text in files", read_only=True, idempotent=True)
async def search_text(
    ctx: Context,
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY)],
    root: RootArg = None,
    path: StartArg = "",
    file_glob: GlobArg = "*",
    case_sensitive: bool = True,
    cursor: CursorArg = "",
    offset: Offset = 0,
    limit: Limit = TEXT_LIMIT,
    regex: bool = False,
    context: Annotated[int, Field(ge=0, le=MAX_CONTEXT)] = 0,
    output_mode: Literal["content", "files_with_matches", "count"] = "content",
    exclude: ExcludeArg = [],  # noqa: B006
    no_ignore: bool = False,
) -> Annotated[CallToolResult, SearchTextResult]:
    """Search the files under path for lines holding query, like ripgrep: literal text,
    or an RE2 pattern with regex=true."""

    def work(call: Call) -> SearchTextResult:
        limits = call.snapshot.limits
        # The content search and its index (its watcher, its storage) are imported at the
        # first search_text, not at start: a server that only reads never pays for them.
        from app.corpus.trigram import narrow_for
        from app.fs.search.text import search_text as find_text

        r = call.root(root)
        opts = TextOptions(
            query=query, path=path, file_glob=file_glob, case_sensitive=case_sensitive,
            regex=regex, context=context, output_mode=output_mode, exclude=exclude,
            no_ignore=no_ignore, offset=offset, cursor=cursor,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
            file_limit=limits.max_search_file_bytes or r.max_read_bytes,
            budget=limits.max_search_bytes,
        )
        # The lines a page shows are paid, page by page; names and counts are free.
        return metered(
            call, r, text_cap(call) if output_mode == "content" else 0, op="search_text",
            rel=path, work=lambda: find_text(r, opts, call, narrow_for(call.snapshot, r)),
            used=lines_shown,
        )

    return await run(ctx, work)


def lines_shown(page: SearchTextResult) -> int:
    """The bytes of file content a page holds: each hit's line and its context lines."""
    return sum(
        text_used([m.preview, *(m.before or ()), *(m.after or ())]) for m in page.matches or ()
    )
