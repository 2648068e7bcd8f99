"""What the model pays: tokens of the tool list and of each answer, ours vs the reference server.

    .venv/bin/pip install -e '.[bench]'      # the tokenizer, once (runs offline)
    .venv/bin/python benchmarks/context_cost.py [--json]

Every turn of a conversation carries the tool definitions, and every answer lands
in the context window. This counts both in Claude tokens (`benchmarks/_tokens.py`:
the tokenizer bundled in `anthropic` 0.34, read with `tokenizers`) beside
characters, through the same MCP Python SDK client over stdio, for:

- ours: the console script with one root per role (the tree as `reference`, two
  empty folders as `sourcecode` and `workspace`), so it lists 14 tools;
- theirs: `@modelcontextprotocol/server-filesystem` (pinned, installed with npm
  into `benchmarks/.cache/` by `benchmarks/_client.reference_server`), given the
  tree as its allowed directory; it lists 14 tools too.

On two trees: folders of Python's standard library (this interpreter's) and a real
package (the installed `mcp`). Per tree: the tool list (name, description, input
schema of every tool listed, as compact JSON), a whole-file read, a 20-line read,
a directory listing and a `**/*.py` glob, each side's text item (what the model
reads), the ratio ours / theirs, and the target it is held to. Then ours alone:
`structuredContent` beside the text of the same answer (the clients that show the
model `structuredContent` instead are listed in docs/clients.md). Tokens and
characters are deterministic: one run is the figure.

Every answer is checked (no tool error; the read is the whole file, the listing and
the glob find the same names on both sides) or the script fails. About 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import sysconfig
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
from benchmarks._tokens import REFERENCE_TOOL_LIST_TOKENS, compact, tokens, tool_list_text

# Ours / theirs, at most (docs/measured.md#what-the-model-pays).
TARGETS = {"tool list": 0.8, "whole-file read": 1.25, "listing": 1.0, "glob": 0.8}
STRUCTURED_TARGET = 2.0  # a one-level listing's structuredContent / its text, ours
DENIED = {"__pycache__"}  # names our built-in deny list hides and theirs shows


@dataclass(frozen=True)
class Tree:
    title: str
    top: Path
    listed: str  # a folder to list and to glob under
    read: str  # a file to read whole


@dataclass
class Row:
    item: str
    ours: str
    theirs: str | None
    target: float | None = None

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"item": self.item, "ours_tokens": tokens(self.ours),
                               "ours_chars": len(self.ours)}
        if self.theirs is not None:
            out |= {"theirs_tokens": tokens(self.theirs), "theirs_chars": len(self.theirs)}
            out["ratio"] = out["ours_tokens"] / out["theirs_tokens"]
        if self.target is not None:
            out["target"] = self.target
            out["met"] = out["ratio"] <= self.target
        return out


def trees() -> list[Tree]:
    import mcp

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    real = Path(mcp.__file__).resolve().parent
    return [
        Tree(f"Python {sys.version_info.major}.{sys.version_info.minor} standard library",
             stdlib, "email", "textwrap.py"),
        Tree("the installed mcp package", real, "server", "server/session.py"),
    ]


def names_theirs(text: str) -> set[str]:
    """Base names in the reference server's listing (`[FILE] x`) or search (absolute paths)."""
    out = set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and "] " in line:
            line = line.split("] ", 1)[1]
        if line:
            out.add(line.rstrip("/").rsplit("/", 1)[-1])
    return out


def check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"check failed: {what}")


async def tool_lists(ours: Any, theirs: Any, every_tool: Any) -> list[Row]:
    """Our 14 tools and every tool we have, against their 14."""
    ours_tools = (await ours.list_tools()).tools
    theirs_tools = (await theirs.list_tools()).tools
    every = (await every_tool.list_tools()).tools
    theirs_now = tokens(tool_list_text(theirs_tools))
    if theirs_now != REFERENCE_TOOL_LIST_TOKENS:
        print(f"note: their tool list is {theirs_now} tokens, not the "
              f"{REFERENCE_TOOL_LIST_TOKENS} tests/tools/test_tokens.py holds ours to",
              file=sys.stderr)
    return [
        Row(f"tool list ({len(ours_tools)} tools; theirs {len(theirs_tools)})",
            tool_list_text(ours_tools), tool_list_text(theirs_tools), TARGETS["tool list"]),
        Row(f"tool list, every tool we have ({len(every)}; theirs {len(theirs_tools)})",
            tool_list_text(every), tool_list_text(theirs_tools)),
    ]


@dataclass
class Pair:
    """One call's answers: ours, theirs (None where they have no such call), the target."""

    label: str
    ours: Any
    theirs: Any
    target: float | None = None


async def answers(tree: Tree, ours: Any, theirs: Any) -> list[Pair]:
    """The same calls on both sides, each answer checked."""
    top, pairs = str(tree.top), []
    whole = (tree.top / tree.read).read_text(encoding="utf-8")
    lines = whole.count("\n") + (not whole.endswith("\n"))
    o = await call(ours, "read_text_file", {"path": tree.read, "end_line": lines + 1},
                   validate=False)
    t = await call(theirs, "read_text_file", {"path": f"{top}/{tree.read}"}, validate=False)
    check(o.structured_content.get("total_lines") == lines, f"ours read {tree.read} whole")
    check(text_of(t) == whole, f"theirs read {tree.read} whole")
    pairs.append(Pair(f"read_text_file {tree.read}, whole ({lines} lines)", o, t,
                      TARGETS["whole-file read"]))

    o = await call(ours, "read_text_file", {"path": tree.read, "end_line": 20}, validate=False)
    t = await call(theirs, "read_text_file", {"path": f"{top}/{tree.read}", "head": 20},
                   validate=False)
    pairs.append(Pair(f"read_text_file {tree.read}, first 20 lines", o, t))

    o = await call(ours, "list_directory", {"path": tree.listed}, validate=False)
    t = await call(theirs, "list_directory", {"path": f"{top}/{tree.listed}"}, validate=False)
    got = {e["path"].rsplit("/", 1)[-1] for e in o.structured_content["entries"]}
    check(got == names_theirs(text_of(t)) - DENIED, f"both list {tree.listed} alike")
    pairs.append(Pair(f"list_directory {tree.listed} ({len(got)} entries)", o, t,
                      TARGETS["listing"]))

    o = await call(ours, "search_files", {"pattern": "**/*.py", "path": tree.listed,
                                          "limit": 1000}, validate=False)
    t = await call(theirs, "search_files", {"path": f"{top}/{tree.listed}", "pattern": "**/*.py",
                                            "excludePatterns": sorted(DENIED)}, validate=False)
    hits = o.structured_content["matches"]
    check(len(hits) == len([x for x in text_of(t).splitlines() if x.strip()]),
          f"both glob {tree.listed}/**/*.py alike")
    pairs.append(Pair(f"search_files **/*.py under {tree.listed} ({len(hits)} hits)", o, t,
                      TARGETS["glob"]))
    o = await call(ours, "list_directory", {"path": tree.listed, "recursive": True},
                   validate=False)
    pairs.append(Pair(f"list_directory {tree.listed}, recursive (depth 2)", o, None))
    return pairs


def shown(result: Any) -> str:
    """What a client that prefers structuredContent hands the model: that, as compact JSON
    (`JSON.stringify`), or the text where there is none."""
    if result.structured_content is not None:
        return compact(result.structured_content)
    return text_of(result)


def tables(pairs: list[Pair]) -> tuple[list[Row], list[Row], list[Row]]:
    """(text against text, ours structuredContent against its text, structuredContent as
    shown, against theirs as shown)."""
    text = [Row(p.label, text_of(p.ours), text_of(p.theirs), p.target)
            for p in pairs if p.theirs is not None]
    lean = [Row(p.label, compact(p.ours.structured_content), text_of(p.ours),
                STRUCTURED_TARGET if p.target == TARGETS["listing"] else None)
            for p in pairs]
    as_shown = [Row(p.label, shown(p.ours), shown(p.theirs)) for p in pairs
                if p.theirs is not None]
    return text, lean, as_shown


def table(title: str, rows: list[Row], left: str, right: str) -> list[str]:
    out = [f"  {title:<58} {left:>8} {right:>8} {'ratio':>6}  target   chars {left} / {right}"]
    for row in rows:
        f = row.figures()
        target = f"<= {f['target']:.2f} {'met' if f['met'] else 'MISSED'}" if "target" in f else ""
        out.append(f"  {f['item']:<58} {f['ours_tokens']:>8,} {f['theirs_tokens']:>8,} "
                   f"{f['ratio']:>6.2f}  {target:<15} {f['ours_chars']:,} / "
                   f"{f['theirs_chars']:,}")
    return out


@contextlib.asynccontextmanager
async def servers(tree: Tree, tmp: Path) -> Any:
    """(ours with three roots, ours with every tool, theirs) over stdio."""
    script = console_script()
    src, ws, every = tmp / "src", tmp / "ws", tmp / "every"
    for folder in (src, ws, every / ".git"):
        folder.mkdir(parents=True, exist_ok=True)
    roots = [("tree", tree.top, "reference"), ("src", src, "sourcecode"), ("ws", ws, "workspace")]
    cfg = write_config(tmp / "ours.toml", roots, max_search_results=1000, default_root="tree")
    # A root whose top holds a repository adds the history tools; search/fetch need the switch.
    all_cfg = write_config(tmp / "every.toml", [*roots, ("git", every, "reference")],
                           search_fetch_tools=True)
    async with contextlib.AsyncExitStack() as stack:
        open_ = stack.enter_async_context
        ours = await open_(stdio_session(script[0], [*script[1:], "--config", str(cfg)]))
        every_tool = await open_(stdio_session(script[0], [*script[1:], "--config",
                                                           str(all_cfg)]))
        theirs = await open_(stdio_session("node", [str(reference_server()), str(tree.top)]))
        yield ours, every_tool, theirs


async def main(args: argparse.Namespace) -> int:
    report: list[dict[str, Any]] = []
    lines: list[str] = []
    for tree in trees():
        with tempfile.TemporaryDirectory(prefix="loomfs-context-") as tmp:
            async with servers(tree, Path(tmp)) as (ours, every_tool, theirs):
                pairs = await answers(tree, ours, theirs)
                listed = await tool_lists(ours, theirs, every_tool) if not report else []
        text, lean, as_shown = tables(pairs)
        text = listed + text  # the same tool lists whatever the tree: counted once
        lines += [f"\n== {tree.title} ({tree.top}) ==",
                  *table("the text item, ours against theirs", text, "ours", "theirs"),
                  "", *table("ours: structuredContent against the text of the same answer",
                             lean, "struct", "text"),
                  "", *table("structuredContent as compact JSON, ours against theirs (what "
                             "Claude Code, Codex, pydantic-ai show)", as_shown, "ours",
                             "theirs")]
        report.append({"tree": tree.title, "text": [r.figures() for r in text],
                       "structured": [r.figures() for r in lean],
                       "as_shown": [r.figures() for r in as_shown]})
    print(json.dumps(report, indent=1) if args.json else "\n".join(lines))
    missed = [f for t in report for key in ("text", "structured") for f in t[key]
              if f.get("met") is False]
    return 1 if missed else 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    return p.parse_args(argv)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
