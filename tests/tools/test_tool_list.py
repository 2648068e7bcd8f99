"""What the tool list costs a model, in tokens, on every turn of every conversation.

Counted as benchmarks/context_cost.py counts it (`benchmarks/_tokens.py`: name,
description and input schema of each tool, as compact JSON, through the Claude
tokenizer bundled in `anthropic` 0.34), on the tools a client lists with one
root per role. The ceiling is the share of the reference server's 14 tools the
project holds itself to (docs/measured.md#what-the-model-pays): a tool or an
argument added later fits in it, or this fails and says what each tool costs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from app.registry import Registry
from app.server import LoomServer
from benchmarks._tokens import (
    REFERENCE_TOOL_LIST_TOKENS,
    TOOL_LIST_SHARE,
    tokens,
    tool_list_text,
)
from tests.kit import config_file, roots_toml

# No one tool may cost more than this: a description that grows into a manual fails here
# even while the list as a whole still fits.
MAX_TOOL_TOKENS = 220


async def listed(folder: Path, *, every: bool) -> list:
    """The tools a client lists: one root per role; `every` adds a repository (the history
    tools) and search_fetch_tools (search, fetch)."""
    roots = []
    for role in ("reference", "sourcecode", "workspace"):
        (folder / role).mkdir()
        roots.append((role, folder / role, role))
    if every:
        (folder / "repo" / ".git").mkdir(parents=True)
        roots.append(("repo", folder / "repo", "reference"))
    extra = "search_fetch_tools = true" if every else ""
    cfg = config_file(folder, roots_toml(*roots, audit_log=None, extra=extra))
    async with Client(LoomServer(Registry(str(cfg)))) as client:
        return list((await client.list_tools()).tools)


def costs(tools: list) -> str:
    return ", ".join(f"{t.name} {tokens(tool_list_text([t]))}" for t in tools)


async def test_the_tool_list_costs_at_most_its_share_of_the_reference_servers(
    tmp_path: Path,
) -> None:
    tools = await listed(tmp_path, every=False)
    assert len(tools) == 14
    ceiling = int(TOOL_LIST_SHARE * REFERENCE_TOOL_LIST_TOKENS)
    spent = tokens(tool_list_text(tools))
    assert spent <= ceiling, f"{spent} tokens > {ceiling}: {costs(tools)}"


async def test_no_tool_costs_more_than_its_share(tmp_path: Path) -> None:
    tools = await listed(tmp_path, every=True)
    assert len(tools) == 19
    heavy = [t for t in tools if tokens(tool_list_text([t])) > MAX_TOOL_TOKENS]
    assert heavy == [], costs(heavy)


@pytest.mark.parametrize(("text", "count"), [("", 0), ("hello world", 2)])
def test_the_tokenizer_is_the_one_the_figures_were_counted_with(text: str, count: int) -> None:
    assert tokens(text) == count
