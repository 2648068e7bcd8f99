"""Search tools: search_files (names, by glob) and search_text (a literal or an RE2
pattern in file contents). Thin handlers: the arguments and the call's limits become one
options object, checked as it is built; the work is in `app.fs.search`."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from app.corpus.trigram import narrow_for
from app.fs.search.cursor import MAX_CURSOR
from app.fs.search.files import search_files as find_files
from app.fs.search.options import MAX_CONTEXT, MAX_EXCLUDE, MAX_QUERY, FilesOptions, TextOptions
from app.fs.search.results import SearchFilesResult, SearchTextResult
from app.fs.search.text import search_text as find_text
from app.fs.text.paging import clamp_limit
from app.tools.base import Call, Offset, RootArg, run, tool

GlobArg = Annotated[str, Field(max_length=1024)]
ExcludeArg = Annotated[
    list[Annotated[str, Field(max_length=1024)]],
    Field(max_length=MAX_EXCLUDE,
          description="Globs (same rules as the pattern) whose matches, files or directories, "
          "are skipped."),
]
NoIgnoreArg = Annotated[
    bool,
    Field(description="true: also search what .gitignore/.ignore files hide (denied names "
          "stay hidden)."),
]
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
    exclude: ExcludeArg = [],  # noqa: B006  # never mutated; the schema shows the default
    no_ignore: NoIgnoreArg = False,
) -> Annotated[CallToolResult, SearchFilesResult]:
    """Find files and directories by glob under path. A pattern without '/' matches the
    base name at any depth (so '*.py' finds every Python file); with '/' it matches the
    path relative to `path`; '**' crosses directories, '*' and '?' stay within one, [abc]
    and [!abc] are classes. Breadth-first, sorted, deterministic; denied names are never
    entered nor shown, symlinks are never followed (skipped_links). Results are paths
    relative to the root. Paginated: when has_more is true, call again with
    offset=next_offset. exclude skips globs; .gitignore/.ignore files are honoured unless
    no_ignore=true."""

    def work(call: Call) -> SearchFilesResult:
        limits = call.snapshot.limits
        opts = FilesOptions(
            pattern=pattern, path=path, exclude=exclude, no_ignore=no_ignore, offset=offset,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
        )
        return find_files(call.root(root), opts, call)

    return await run(ctx, work)


@tool(perm="read", title="Search text in files", read_only=True, idempotent=True)
async def search_text(
    ctx: Context,
    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY,
                   description="Literal text, or an RE2 pattern with regex=true.")
    ],
    root: RootArg = None,
    path: StartArg = "",
    file_glob: Annotated[
        GlobArg, Field(description="Only files matching this glob (same rules as search_files).")
    ] = "*",
    case_sensitive: bool = True,
    cursor: Annotated[
        str, Field(max_length=MAX_CURSOR, description="next_cursor of a previous call.")
    ] = "",
    offset: Offset = 0,
    limit: Annotated[
        int, Field(ge=1, le=100_000, description="Most matches (capped by max_search_results).")
    ] = 50,
    regex: Annotated[
        bool, Field(description="true: query is an RE2 regex, matched line by line.")
    ] = False,
    context: Annotated[
        int, Field(ge=0, le=MAX_CONTEXT,
                   description="Lines before and after each match (before/after).")
    ] = 0,
    output_mode: Annotated[
        Literal["content", "files_with_matches", "count"],
        Field(description="content: matching lines; files_with_matches: paths only (files); "
              "count: matching lines per file (counts)."),
    ] = "content",
    exclude: ExcludeArg = [],  # noqa: B006
    no_ignore: NoIgnoreArg = False,
) -> Annotated[CallToolResult, SearchTextResult]:
    """Find text in the files under path: one match per matching line, with its path,
    line number and a preview. query is literal unless regex=true (RE2 syntax, like
    ripgrep: (?i), \\b, classes; no backreferences or lookaround). context=N adds N lines
    before/after; output_mode files_with_matches or count answers files or counts instead.
    .gitignore/.ignore files are honoured unless no_ignore=true; exclude skips globs.
    Files larger than max_search_file_bytes and binary files are skipped (and counted);
    one call scans at most max_search_bytes. When the call
    stopped before the end of the tree, truncated is true and note says what was not
    examined and how to narrow (path=, file_glob=). Paginated: when has_more is true, call
    again with cursor=next_cursor (it resumes where the page stopped, also after a budget
    did; offset=next_offset still works)."""

    def work(call: Call) -> SearchTextResult:
        limits = call.snapshot.limits
        r = call.root(root)
        opts = TextOptions(
            query=query, path=path, file_glob=file_glob, case_sensitive=case_sensitive,
            regex=regex, context=context, output_mode=output_mode, exclude=exclude,
            no_ignore=no_ignore, offset=offset, cursor=cursor,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
            file_limit=limits.max_search_file_bytes or r.max_read_bytes,
            budget=limits.max_search_bytes,
        )
        return find_text(r, opts, call, narrow_for(call.snapshot, r))

    return await run(ctx, work)
