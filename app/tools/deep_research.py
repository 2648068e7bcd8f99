"""ChatGPT deep research / company knowledge tools: `search` and `fetch` (docs/tools.md).

Present only when the config says `search_fetch_tools = true`. Their shapes
are OpenAI's published ones (one query string in, `{results: [{id, title,
url}]}` out; one id in, `{id, title, text, url, metadata}` out), sent as
structured content and as one text item holding the same JSON. `search` adds
`truncated` and `note` only when it stopped short, so a complete answer is
exactly the published shape.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from app.corpus import deep_research as dr
from app.tools.base import Call, run, tool
from app.tools.metered import metered, text_cap, text_used


class SearchHit(BaseModel):
    id: str = Field(description="'root/relative/path': pass it to fetch.")
    title: str
    url: str = Field(description="Citation URL; empty unless public_base_url is configured.")


class SearchResult(BaseModel):
    results: list[SearchHit]
    truncated: bool = Field(
        default=False, description="Present and true only when the search stopped short."
    )
    note: str | None = Field(default=None, description="What was not examined, and why.")


class FetchResult(BaseModel):
    id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]


Query = Annotated[str, Field(min_length=1, max_length=1000)]
DocId = Annotated[str, Field(min_length=1, max_length=4200)]


@tool(perm="search_fetch", title="Search files", read_only=True, idempotent=True)
async def search(ctx: Context, query: Query) -> Annotated[CallToolResult, SearchResult]:
    """Search every readable root for the text files that best match the query's words,
    best first. Pass a result's id to fetch for its text."""

    def work(call: Call) -> dict[str, Any]:
        return dr.search(call.snapshot, query, call)

    return await run(ctx, work)


@tool(perm="search_fetch", title="Fetch file", read_only=True, idempotent=True)
async def fetch(ctx: Context, id: DocId) -> Annotated[CallToolResult, FetchResult]:
    """Fetch the text of one file by the id search returned."""

    def work(call: Call) -> dict[str, Any]:
        name, _, rel = id.partition("/")
        root = call.snapshot.roots.get(name)
        if root is None:
            return dr.fetch(call.snapshot, id)  # refused there, in its words
        return metered(
            call, root, text_cap(call), op="fetch", rel=rel,
            work=lambda: dr.fetch(call.snapshot, id), used=lambda got: text_used([got["text"]]),
        )

    return await run(ctx, work)
