"""Counting what a model pays: Claude tokens, offline.

The tokenizer is the one the `anthropic` package bundled up to 0.34
(`anthropic/tokenizer.json`), read with `tokenizers`; both come with the
`bench` extra (`pip install -e '.[bench]'`) and neither is a runtime
dependency. It is not the tokenizer of every current Claude model, but it is
one real tokenizer run the same way on both sides of every comparison, so
the ratios are what it measures; absolute counts are indicative.

`tool_list_text` is how a tool list is counted: each tool's name, description
and input schema as compact JSON, the part of a tool definition a client
hands the model on every request (titles, annotations and output schemas are
not sent to the model by the clients this server targets).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# The reference server's 14 tools (`@modelcontextprotocol/server-filesystem` 2026.8.31, the
# version `benchmarks/_client.REFERENCE_VERSION` pins), counted by `tool_list_text`; measured
# by benchmarks/context_cost.py, which checks it again on every run. Our tool list, with one
# root per role, is held to at most `TOOL_LIST_SHARE` of it (tests/tools/test_tokens.py).
REFERENCE_TOOL_LIST_TOKENS = 1734
TOOL_LIST_SHARE = 0.85  # 0.8 before edits had matching levels and apply_patch; outlines: 0.9


class NoTokenizer(RuntimeError):
    """The `bench` extra is not installed."""


@functools.cache
def _tokenizer() -> Any:
    try:
        import anthropic
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise NoTokenizer(
            "counting tokens needs the bench extra: .venv/bin/pip install -e '.[bench]'"
        ) from exc
    return Tokenizer.from_file(str(Path(anthropic.__file__).parent / "tokenizer.json"))


def tokens(text: str) -> int:
    """Claude tokens in `text` (the bundled tokenizer; no special tokens added)."""
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_list_text(tools: Iterable[Any]) -> str:
    """The tool definitions a model reads, as compact JSON: name, description, input schema.

    `tools` are MCP `Tool` objects (SDK client) or dicts from a raw `tools/list`.
    """
    defs = []
    for t in tools:
        if isinstance(t, dict):
            name, description, schema = t["name"], t.get("description"), t["inputSchema"]
        else:
            name, description, schema = t.name, t.description, t.input_schema
        defs.append({"name": name, "description": description, "parameters": schema})
    return compact(defs)
