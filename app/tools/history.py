"""History tools: git_log, git_show, git_diff (docs/tools.md#history-git).

Registered when some readable root's top folder holds a `.git` (the `git`
surface key); a call on a root without one is a clear error naming the root.
The repository is read by the server's own bounded decoders through the
root's handle (`app.fs.history`): no `git` process, nothing of the
repository's configuration is ever run.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from app.fs.history import ops
from app.fs.text.paging import clamp_limit
from app.tools.base import (
    Call,
    EndLine,
    Offset,
    RootArg,
    StartLine,
    check_window,
    run,
    tool,
)
from app.tools.metered import metered, text_cap, text_used

RevArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        description="A commit: full or abbreviated id, branch or tag name, HEAD, HEAD~N, X^N.",
    ),
]
HistoryPath = Annotated[
    str,
    Field(max_length=4096, description="Limit to this path relative to the root; '' is all."),
]
LogLimit = Annotated[int, Field(ge=1, le=1000, description="Most commits to return (capped).")]
PageCursor = Annotated[
    str | None,
    Field(default=None, max_length=8192,
          description="next_cursor of a previous call: the next page of files."),
]


@tool(perm="git", title="Git log", read_only=True, idempotent=True)
async def git_log(
    ctx: Context,
    root: RootArg = None,
    path: HistoryPath = "",
    offset: Offset = 0,
    limit: LogLimit = 20,
    commit: Annotated[
        str, Field(min_length=1, max_length=256, description="Where the log starts.")
    ] = "HEAD",
    cursor: Annotated[
        str | None,
        Field(default=None, max_length=4096, description="next_cursor of a previous call."),
    ] = None,
) -> Annotated[CallToolResult, ops.LogResult]:
    """Commits of the root's git repository, newest first (id, author, date, subject), like
    `git log`; with path, only commits that changed it (like `git log -- path`). One call
    walks a bounded number of commits: when has_more is true, call again with
    cursor=next_cursor (a path-limited log over a long history may return few or no commits
    per call, with truncated=true). Denied paths cannot be asked for."""

    def work(call: Call) -> ops.LogResult:
        limits = call.snapshot.limits
        return ops.git_log(
            call.root(root), path=path, commit=commit, offset=offset,
            limit=clamp_limit(limit, limits.max_search_results), cursor=cursor,
            cap=limits.max_output_chars, control=call,
        )

    return await run(ctx, work)


@tool(perm="git", title="Git show", read_only=True, idempotent=True)
async def git_show(
    ctx: Context,
    commit: RevArg,
    root: RootArg = None,
    path: Annotated[
        str | None,
        Field(default=None, max_length=4096, description="A file to read at that commit."),
    ] = None,
    start_line: StartLine = 1,
    end_line: EndLine = 300,
    offset: Offset = 0,
    cursor: PageCursor = None,
) -> Annotated[CallToolResult, ops.ShowResult]:
    """One commit: id, author, date, message, parents and the files it changed (path,
    change: added|deleted|modified|renamed|type_changed), paged: when has_more is true,
    call again with cursor=next_cursor. With path: that file as it was at that commit, in
    `file` with read_text_file's fields (lines start_line..end_line). Files under denied
    names are left out (hidden_denied counts them) and cannot be read at any commit."""

    def work(call: Call) -> ops.ShowResult:
        check_window(start_line, end_line)
        r = call.root(root)
        # Only a file's content counts; a commit's message and list of files are free.
        return metered(
            call, r, text_cap(call) if path is not None else 0, op="git_show", rel=path or "",
            work=lambda: ops.git_show(
                r, commit=commit, path=path, start_line=start_line,
                end_line=end_line, offset=offset, cap=call.snapshot.limits.max_output_chars,
                control=call, cursor=cursor,
            ),
            used=lambda got: text_used([got.file.content if got.file else None]),
        )

    return await run(ctx, work)


@tool(perm="git", title="Git diff", read_only=True, idempotent=True)
async def git_diff(
    ctx: Context,
    root: RootArg = None,
    base: RevArg = "HEAD",
    target: Annotated[
        str | None,
        Field(
            default=None, min_length=1, max_length=256,
            description="The commit to compare with; omit for the working tree.",
        ),
    ] = None,
    path: HistoryPath = "",
    offset: Offset = 0,
    cursor: PageCursor = None,
) -> Annotated[CallToolResult, ops.DiffResult]:
    """Changes between two commits, or between a commit (default HEAD) and the working tree
    when target is omitted, as unified diffs per file (3 lines of context). The working
    tree side covers files tracked in base, read like any file of the root. Denied paths
    are left out (hidden_denied counts them). Paged by file: when has_more is true, call
    again with cursor=next_cursor; a file's diff longer than the output limit is cut with
    a visible marker (truncated=true)."""

    def work(call: Call) -> ops.DiffResult:
        limits = call.snapshot.limits
        return ops.git_diff(
            call.root(root), base=base, target=target, path=path, offset=offset,
            cap=limits.max_output_chars, read_budget=limits.max_search_bytes, control=call,
            cursor=cursor,
        )

    return await run(ctx, work)
