"""What a model pays, in tokens, for the tool list and for the answers it reads.

Counted as benchmarks/context_cost.py counts (`benchmarks/_tokens.py`: the Claude
tokenizer bundled in `anthropic` 0.34), in process, through the SDK client:

- the tool list (name, description and input schema of each tool, as compact
  JSON) on the tools a client lists with one root per role, held to a share of
  the reference server's 14 tools (docs/measured.md#what-the-model-pays): a tool
  or an argument added later fits in it, or this fails and says what each costs;
- a whole file read: its numbered lines and header against the bare file;
- a listing's structuredContent (what some clients show the model instead of the
  text, docs/clients.md) against its text.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from app.registry import Registry
from app.server import LoomServer
from benchmarks._tokens import (
    REFERENCE_TOOL_LIST_TOKENS,
    TOOL_LIST_SHARE,
    compact,
    tokens,
    tool_list_text,
)
from tests.kit import config_file, roots_toml

# No one tool may cost more than this: a description that grows into a manual fails here
# even while the list as a whole still fits.
MAX_TOOL_TOKENS = 220
READ_SHARE = 1.25  # a whole file read, against the file's bare text
STRUCTURED_SHARE = 2.0  # a listing's structuredContent, against its text


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
    assert len(tools) == 17  # the reference server's 14, copy_file, outline and apply_patch
    ceiling = int(TOOL_LIST_SHARE * REFERENCE_TOOL_LIST_TOKENS)
    spent = tokens(tool_list_text(tools))
    assert spent <= ceiling, f"{spent} tokens > {ceiling}: {costs(tools)}"


async def test_no_tool_costs_more_than_its_share(tmp_path: Path) -> None:
    tools = await listed(tmp_path, every=True)
    assert len(tools) == 22
    heavy = [t for t in tools if tokens(tool_list_text([t])) > MAX_TOOL_TOKENS]
    assert heavy == [], costs(heavy)


@pytest.mark.parametrize(("text", "count"), [("", 0), ("hello world", 2)])
def test_the_tokenizer_is_the_one_the_figures_were_counted_with(text: str, count: int) -> None:
    assert tokens(text) == count


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def stdlib_config(tmp_path: Path) -> Path:
    """One reference root on this interpreter's standard library: real code, not made up."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return config_file(tmp_path, roots_toml(("lib", stdlib, "reference"), audit_log=None))


@pytest.mark.parametrize("name", ["textwrap.py", "json/decoder.py", "email/charset.py"])
async def test_a_whole_file_read_costs_at_most_a_quarter_more_than_the_file(
    stdlib_config: Path, name: str
) -> None:
    """The line numbers (which models cite and edit by) and a one-line header, no more."""
    bare = (Path(sysconfig.get_paths()["stdlib"]) / name).read_text(encoding="utf-8")
    async with Client(LoomServer(Registry(str(stdlib_config)))) as client:
        res = await client.call_tool("read_text_file", {"path": name, "end_line": 100_000})
    assert not res.is_error and res.structured_content["total_lines"] == bare.count("\n")
    spent, file = tokens(text_of(res)), tokens(bare)
    assert spent <= READ_SHARE * file, f"{spent} tokens for a file of {file}"


@pytest.mark.parametrize("args", [{"path": "email"}, {"path": "json"}, {"path": "",
                                                                          "limit": 60}])
async def test_a_listings_structured_content_costs_at_most_twice_its_text(
    stdlib_config: Path, args: dict[str, Any]
) -> None:
    async with Client(LoomServer(Registry(str(stdlib_config)))) as client:
        res = await client.call_tool("list_directory", args)
    assert not res.is_error and res.structured_content["entries"]
    text, structured = tokens(text_of(res)), tokens(compact(res.structured_content))
    assert structured <= STRUCTURED_SHARE * text, f"{structured} tokens against {text}"
