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

# A commit: a full or abbreviated id, a branch or tag name, HEAD, HEAD~N, X^N (the tools'
# descriptions say so once).
RevArg = Annotated[str, Field(min_length=1, max_length=256)]
HistoryPath = Annotated[str, Field(max_length=4096)]
LogLimit = Annotated[int, Field(ge=1, le=1000)]
# What an answer's last line says to pass to continue.
PageCursor = Annotated[str | None, Field(default=None, max_length=8192)]


@tool(perm="git", title="Git log", read_only=True, idempotent=True)
async def git_log(
    ctx: Context,
    root: RootArg = None,
    path: HistoryPath = "",
    offset: Offset = 0,
    limit: LogLimit = 20,
    commit: RevArg = "HEAD",
    cursor: Annotated[str | None, Field(default=None, max_length=4096)] = None,
) -> Annotated[CallToolResult, ops.LogResult]:
    """Commits of the root's git repository, newest first, like git log; with path, the
    ones that changed it. A commit is an id (or its start), a branch, a tag, HEAD~N or
    X^N."""

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
    path: Annotated[str | None, Field(default=None, max_length=4096)] = None,
    start_line: StartLine = 1,
    end_line: EndLine = 300,
    offset: Offset = 0,
    cursor: PageCursor = None,
) -> Annotated[CallToolResult, ops.ShowResult]:
    """One commit and the files it changed; with path, that file as it was then, numbered
    like read_text_file."""

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
    target: Annotated[str | None, Field(default=None, min_length=1, max_length=256)] = None,
    path: HistoryPath = "",
    offset: Offset = 0,
    cursor: PageCursor = None,
) -> Annotated[CallToolResult, ops.DiffResult]:
    """Unified diff from commit base to commit target, or to the working tree when target
    is left out."""

    def work(call: Call) -> ops.DiffResult:
        limits = call.snapshot.limits
        r = call.root(root)
        # The diff text is file content, paid page by page; the paths and counts are free.
        return metered(
            call, r, text_cap(call), op="git_diff", rel=path,
            work=lambda: ops.git_diff(
                r, base=base, target=target, path=path, offset=offset,
                cap=limits.max_output_chars, read_budget=limits.max_search_bytes, control=call,
                cursor=cursor,
            ),
            used=lambda got: text_used(f.diff for f in got.files),
        )

    return await run(ctx, work)
