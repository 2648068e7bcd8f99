"""Read tools: list_directory, stat_path, read_text_file, read_multiple_files,
read_media_file, outline. Thin handlers: bounds at the edge, the work in `app.fs`."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import AudioContent, CallToolResult, ImageContent
from pydantic import Field

from app.errors import BadArgument
from app.fs.code import outline as outline_mod
from app.fs.code.symbols import MAX_DEPTH
from app.fs.reading import listing, media
from app.fs.reading import read as read_mod
from app.fs.text.paging import clamp_limit
from app.tools.base import (
    MAX_LINE,
    Call,
    Offset,
    PathArg,
    RootArg,
    StartLine,
    check_window,
    ok_result,
    run,
    tool,
)
from app.tools.metered import PaidAsItGoes, metered, text_cap, text_used

DEFAULT_DEPTH = 2
DEFAULT_END_LINE = 300
MAX_SYMBOL = 512

DirPathArg = Annotated[str, Field(max_length=4096)]
Limit = Annotated[int, Field(ge=1, le=100_000)]


@tool(perm="read", title="List directory", read_only=True, idempotent=True)
async def list_directory(
    ctx: Context,
    root: RootArg = None,
    path: DirPathArg = "",
    recursive: bool = False,
    max_depth: Annotated[int | None, Field(default=None, ge=1, le=listing.MAX_DEPTH)] = None,
    offset: Offset = 0,
    limit: Limit = listing.DEFAULT_LIMIT,
) -> Annotated[CallToolResult, listing.ListResult]:
    """List a folder, with file sizes; recursive=true also lists subfolders, max_depth
    levels down (default 2)."""

    # A depth asked for is a recursive listing: silently listing one level instead
    # would answer a question that was not asked.
    deep = recursive or max_depth is not None
    depth = max_depth if max_depth is not None else DEFAULT_DEPTH

    def work(call: Call) -> listing.ListResult:
        limits = call.snapshot.limits
        return listing.list_directory(
            call.root(root), path, recursive=deep, max_depth=depth, offset=offset,
            limit=clamp_limit(limit, limits.max_search_results), cap=limits.max_output_chars,
            control=call,
        )

    return await run(ctx, work)


@tool(perm="read", title="Stat path", read_only=True, idempotent=True)
async def stat_path(
    ctx: Context, path: PathArg, root: RootArg = None
) -> Annotated[CallToolResult, listing.StatResult]:
    """A file's or folder's type, size, times, mode and sha256, and whether a file is
    text."""

    def work(call: Call) -> listing.StatResult:
        return listing.stat_path(call.root(root), path)

    return await run(ctx, work)


@tool(perm="read", title="Read text file", read_only=True, idempotent=True)
async def read_text_file(
    ctx: Context,
    path: PathArg,
    root: RootArg = None,
    start_line: StartLine = 1,
    end_line: Annotated[int | None, Field(default=None, ge=1, le=MAX_LINE)] = None,
    tail: Annotated[int | None, Field(default=None, ge=1, le=100_000)] = None,
    symbol: Annotated[str | None, Field(default=None, max_length=MAX_SYMBOL)] = None,
) -> Annotated[CallToolResult, read_mod.ReadTextResult]:
    """Read lines start_line..end_line of a text file, its last `tail` lines or one
    `symbol`, each after its number."""

    def work(call: Call) -> read_mod.ReadTextResult:
        if symbol is not None and tail is not None:
            raise BadArgument("pass symbol or tail, not both")
        if tail is None:
            check_window(start_line, end_line if end_line is not None else MAX_LINE)
        r = call.root(root)
        cap = call.snapshot.limits.max_output_chars
        if symbol is not None:
            return metered(
                call, r, text_cap(call), op="read_text_file", rel=path,
                work=lambda: outline_mod.read_symbol(
                    r, path, symbol, start=start_line, end=end_line, cap=cap),
                used=lambda got: text_used([got.content]),
            )
        end = end_line if end_line is not None else DEFAULT_END_LINE
        return metered(
            call, r, text_cap(call), op="read_text_file", rel=path,
            work=lambda: read_mod.read_text_file(
                r, path, start=start_line, end=end, tail=tail, cap=cap,
            ),
            used=lambda got: text_used([got.content]),
        )

    return await run(ctx, work)


@tool(perm="read", title="Read several files", read_only=True, idempotent=True)
async def read_multiple_files(
    ctx: Context,
    paths: Annotated[
        list[Annotated[str, Field(max_length=4096)]],
        Field(min_length=1, max_length=read_mod.MAX_FILES),
    ],
    root: RootArg = None,
) -> Annotated[CallToolResult, read_mod.ReadManyResult]:
    """Read several text files from line 1, numbered as read_text_file numbers them."""

    def work(call: Call) -> read_mod.ReadManyResult:
        r = call.root(root)
        return metered(
            call, r, text_cap(call), op="read_multiple_files", rel=paths[0],
            work=lambda: read_mod.read_multiple_files(
                r, paths, cap=call.snapshot.limits.max_output_chars, control=call
            ),
            used=lambda got: text_used(i.file.content for i in got.results if i.file),
        )

    return await run(ctx, work)


@tool(perm="read", title="Read image or audio", read_only=True, idempotent=True)
async def read_media_file(
    ctx: Context, path: PathArg, root: RootArg = None
) -> Annotated[CallToolResult, media.MediaInfo]:
    """Return an image or audio file (recognised by its bytes) as image or audio
    content."""

    def work(call: Call) -> CallToolResult:
        r = call.root(root)
        with PaidAsItGoes(call, r, "read_media_file") as paid:  # its size, before it is read
            info, data = media.read_media(r, path, pay=paid.pay)
            paid.settle(info.size)
        block = (
            ImageContent(type="image", data=data, mime_type=info.mime_type)
            if info.kind == "image"
            else AudioContent(type="audio", data=data, mime_type=info.mime_type)
        )
        described = ok_result(info, text_format=call.snapshot.limits.text_format)
        return CallToolResult(
            content=[block, *described.content], structured_content=described.structured_content
        )

    return await run(ctx, work)


@tool(perm="read", title="Outline code", read_only=True, idempotent=True)
async def outline(
    ctx: Context,
    path: PathArg,
    root: RootArg = None,
    depth: Annotated[int, Field(ge=1, le=MAX_DEPTH)] = outline_mod.DEFAULT_DEPTH,
    cursor: Annotated[str, Field(max_length=outline_mod.MAX_CURSOR)] = "",
    limit: Limit = outline_mod.DEFAULT_LIMIT,
) -> Annotated[CallToolResult, outline_mod.OutlineResult]:
    """Symbols of code files, with lines."""

    def work(call: Call) -> outline_mod.OutlineResult:
        r = call.root(root)
        return metered(
            call, r, text_cap(call), op="outline", rel=path,
            work=lambda: outline_mod.outline(
                r, path, depth=depth, cursor=cursor, limit=limit,
                cap=call.snapshot.limits.max_output_chars, control=call,
            ),
            used=lambda got: text_used(outline_mod.signatures(got)),
        )

    return await run(ctx, work)
