"""What the model reads: characters of the text items, ours vs the reference server.

    .venv/bin/python benchmarks/context_cost.py [--json-too]

The same calls, through the same MCP Python SDK client over stdio, to:
- ours (the console script), answering its readable text (the default);
- ours with `text_format = "json"` (the JSON text this server answered before);
- `@modelcontextprotocol/server-filesystem` (pinned, installed by
  `benchmarks/_client.reference_server`).

On two trees: the seed's (`benchmarks/_trees.py`: 300 small `.py` files under
`src/` beside 24,000 files of `.venv`/`node_modules` noise) and a real source
tree (the `mcp` package this project depends on, as installed). Per call it
prints the characters of the text the model reads (every text item of the
result; `structuredContent` is for programs and is not shown to the model by
the clients this server targets), the items in it (entries, hits, lines), and
characters per item. Characters are deterministic: one run is the figure.
Tokens are not counted: no tokenizer here runs offline (tiktoken downloads
its encodings on first use).

What each side says beyond the items: ours gives sizes, the range read, the
total line count, the sha256 a write needs and how to continue; theirs gives
`[FILE]`/`[DIR]` and absolute paths. Every answer is checked or the script fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._client import (
    call,
    console_script,
    reference_server,
    stdio_session,
    text_of,
    write_config,
)
from benchmarks._trees import USEFUL_FILES, build_seed_tree

EXCLUDES = [".venv", "node_modules", "__pycache__"]


@dataclass
class Op:
    """One call, spelled for both servers, and how to count its items."""

    title: str
    unit: str  # entry | hit | line
    tool: str
    ours: dict[str, Any]
    theirs: dict[str, Any] | None  # None: the reference server has no such tool
    theirs_tool: str | None = None


def items_ours(op: Op, data: dict[str, Any]) -> int:
    if op.unit == "entry":
        return len(data["entries"])
    if op.unit == "hit":
        return len(data["matches"])
    return int(data["end_line"] - data["start_line"] + 1) if data.get("end_line") else 0


def items_theirs(op: Op, text: str) -> int:
    if op.unit == "line":  # the file's lines, blank ones included
        return text.rstrip("\n").count("\n") + 1 if text else 0
    return len([x for x in text.split("\n") if x.strip()])


def fixed_part(text: str, readable: bool) -> int:
    """Characters that do not grow with the items: the readable text's header line and
    bracketed last lines (how to continue, what was cut). Counted as none in a JSON
    text or theirs (no line of theirs is independent of the items)."""
    if not readable:
        return 0
    lines = text.split("\n")
    tail = [x for x in lines[1:] if x.startswith("[")]
    return len(lines[0]) + 1 + sum(len(x) + 1 for x in tail)


def ops_for(tree: Path, listed: str, read_file: str, window: int, query: str) -> list[Op]:
    absolute = str(tree)
    return [
        Op(f"list_directory {listed}", "entry", "list_directory", {"path": listed},
           {"path": f"{absolute}/{listed}"}),
        Op("search_files *.py (theirs **/*.py, excluding noise)", "hit", "search_files",
           {"pattern": "*.py", "limit": 1000},
           {"path": absolute, "pattern": "**/*.py", "excludePatterns": EXCLUDES}),
        Op(f"search_text {query!r}", "hit", "search_text", {"query": query, "limit": 100}, None),
        Op(f"read_text_file {read_file}, first {window} lines", "line", "read_text_file",
           {"path": read_file, "end_line": window}, {"path": f"{absolute}/{read_file}",
                                                     "head": window}),
        Op(f"read_text_file {read_file}, up to 300 lines", "line", "read_text_file",
           {"path": read_file}, {"path": f"{absolute}/{read_file}", "head": 300}),
    ]  # fmt: skip


async def measure(
    session: Any, op: Op, *, theirs: bool, readable: bool
) -> tuple[int, int, int]:
    """(characters the model reads, of which fixed, items) for one call."""
    if theirs:
        assert op.theirs is not None
        res = await call(session, op.theirs_tool or op.tool, op.theirs, validate=False)
        text = text_of(res)
        count = items_theirs(op, text)
    else:
        res = await call(session, op.tool, op.ours, validate=False)
        text = text_of(res)
        count = items_ours(op, res.structured_content)
    if count == 0:
        raise SystemExit(f"{op.title}: no items in the answer: {text[:300]}")
    fixed = fixed_part(text, readable)
    return len(text), fixed, count


async def tool_definitions(session: Any) -> tuple[int, int]:
    """(characters, tools) of the tool definitions a client hands the model: name,
    description and input schema of each tool, as compact JSON."""
    tools = (await session.list_tools()).tools
    defs = [{"name": t.name, "description": t.description, "parameters": t.input_schema}
            for t in tools]
    return len(json.dumps(defs, separators=(",", ":"), ensure_ascii=False)), len(tools)


def row(label: str, chars: int, fixed: int, items: int, unit: str) -> str:
    units = "entries" if unit == "entry" else unit + "s"
    return (f"  {label:<10} {chars:>7,} chars = {fixed:>4} fixed + {items:>4} {units} "
            f"x {(chars - fixed) / items:>6.1f}  (all in: {chars / items:>6.1f} per {unit})")


async def run_tree(name: str, tree: Path, ops: list[Op], sessions: dict[str, Any]) -> list[str]:
    out = [f"\n== {name} =="]
    ratios = []
    out.append("tool definitions (name, description, input schema; read-only surface)")
    for label, session in sessions.items():
        chars, count = await tool_definitions(session)
        out.append(f"  {label:<10} {chars:>7,} chars for {count} tools "
                   f"({chars / count:,.0f} per tool)")
    for op in ops:
        out.append(op.title)
        per: dict[str, float] = {}
        for label, session in sessions.items():
            if label == "theirs" and op.theirs is None:
                out.append(f"  {'theirs':<22} (no such tool)")
                continue
            chars, fixed, items = await measure(
                session, op, theirs=label == "theirs", readable=label == "ours")
            per[label] = (chars - fixed) / items
            out.append(row(label, chars, fixed, items, op.unit))
        if "theirs" in per:
            ratios.append(f"  {op.title}: ours / theirs per {op.unit} = "
                          f"{per['ours'] / per['theirs']:.2f}")
        if "ours json" in per:
            ratios.append(f"  {op.title}: ours / ours json per {op.unit} = "
                          f"{per['ours'] / per['ours json']:.2f}")
    return [*out, "ratios per item, fixed part aside (same run):", *ratios]


async def main(args: argparse.Namespace) -> None:
    from importlib.metadata import version

    import mcp

    entry = reference_server()
    real = Path(mcp.__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="loomfs-context-") as tmp:
        seed = Path(tmp) / "seed"
        seed.mkdir()
        counts = build_seed_tree(seed)
        assert counts.useful == USEFUL_FILES
        trees = {
            "seed tree (24,300 files)": (seed, ops_for(
                seed, "src/loom/core", "src/loom/core/mod_00.py", 20, "VALUE")),
            f"real source tree (the installed mcp {version('mcp')} package)": (
                real, ops_for(real, "server", "server/mcpserver/server.py", 20, "def call_tool")),
        }
        script = console_script()
        lines: list[str] = []
        for name, (tree, ops) in trees.items():
            sessions: dict[str, Any] = {}
            async with contextlib.AsyncExitStack() as stack:
                for label, extra in (("ours", {}), ("ours json", {"text_format": "json"})):
                    if label == "ours json" and not args.json_too:
                        continue
                    cfg = write_config(Path(tmp) / f"{label.replace(' ', '_')}.toml",
                                       [("bench", tree, "reference")],
                                       max_search_results=1000, **extra)
                    sessions[label] = await stack.enter_async_context(
                        stdio_session(script[0], [*script[1:], "--config", str(cfg)]))
                sessions["theirs"] = await stack.enter_async_context(
                    stdio_session("node", [str(entry), str(tree)]))
                lines += await run_tree(name, tree, ops, sessions)
        print("\n".join(lines))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json-too", action="store_true",
                   help='also measure ours with text_format = "json" (the former text)')
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
