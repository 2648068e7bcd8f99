"""search_files('*.py') on the seed's tree shape: in process and over HTTP.

    .venv/bin/python benchmarks/search_files.py [--runs N] [--calls N]

Builds the seed's tree (24,300 files: 300 useful `.py` files under `src/`, the
rest under `.venv/` and `node_modules/`, see `benchmarks/_trees.py`) in a
temporary folder, then measures on the same warm cache, runs interleaved:

- floor: a bare `os.scandir` breadth-first walk that prunes `.venv` and
         `node_modules` by name and does nothing else (no sort, no deny
         rules, no handles, no match, no result) - nothing correct is cheaper;
- walk:  the search's walk and match alone: `Walker.dirs()` (every deny rule,
         handles, sorting) and the compiled glob, building no result;
- page:  `app.fs.search.files.search_files` in process, exactly what the tool runs
         (choke point, walk, glob, one stat per match for its size, the
         result model), with the tool's default limit=100;
- ours:  the same with a limit large enough for all 300 matches;
- glob:  the seed's "before": unpruned `Path.glob('**/*.py')`, then drop
         every path with a denied component.

Then starts the real app under uvicorn (tests/live.py) with the tree as a root
and times `search_files(pattern='*.py')` (its default page: 100 matches) and,
as the protocol's own cost, `list_roots`, both over one MCP Streamable HTTP
session of the SDK's client. That client re-validates every structured result
against the tool's output schema with `jsonschema`, a client-side cost that
grows with the result; it is timed and shown apart.

Prints medians and ratios: ours/floor (target: within 2x), glob/ours, and the
end-to-end medians (target: under 10 ms). Wall-clock figures move with the
machine's load; the ratios are measured in the same run, interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.control import NoControl
from app.fs.filters.glob import compile_glob
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions
from app.security import DenyRules, Root, Walker
from benchmarks._trees import build_seed_tree, scandir_floor

PATTERN = "*.py"


def make_root(folder: str) -> Root:
    return Root(
        name="bench", role="reference", permissions=["read"], real=os.path.realpath(folder),
        rules=DenyRules(), max_read_bytes=1 << 20,
    )


def ours(root: Root, limit: int = 1000) -> list[str]:
    result = search_files(
        root, FilesOptions(pattern=PATTERN, offset=0, limit=limit, cap=1 << 22), NoControl()
    )
    return [m.path for m in result.matches]


def walk_match(root: Root) -> list[str]:
    """The search's walk and glob alone: Walker.dirs() and the compiled pattern, no result."""
    match = compile_glob(PATTERN).match_name
    return [d.prefix + e.name for d in Walker(root, ()).dirs() for e in d.entries
            if match(e.name)]


def glob(folder: Path, rules: DenyRules) -> list[str]:
    found = []
    for p in folder.glob(f"**/{PATTERN}"):
        rel = p.relative_to(folder).parts
        if rules.path(rel) is None:
            found.append("/".join(rel))
    return found


def medians(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """name -> median wall seconds, variants interleaved round by round."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


async def over_http(config: Path, calls: int, mode: str) -> dict[str, float]:
    """Median seconds per call, and the SDK client's own output-schema check of it."""
    from mcp.types import CallToolResult

    from tests.live import live_server

    kwargs = {} if mode == "auto" else {"json_response": mode == "json"}
    with live_server(config, **kwargs) as srv:
        async with srv.session() as s:
            checking: list[float] = []
            check = s.validate_tool_result

            async def timed_check(name: str, result: CallToolResult) -> None:
                t0 = time.perf_counter()
                await check(name, result)
                checking.append(time.perf_counter() - t0)

            # Timed in place, on this session only: mypy has no type for that but an ignore.
            s.validate_tool_result = timed_check  # type: ignore[method-assign]
            res = await s.call_tool("search_files", {"pattern": PATTERN})
            assert not res.is_error and res.structured_content["returned"] == 100
            times: dict[str, list[float]] = {"search_files": [], "list_roots": []}
            checks: dict[str, list[float]] = {"search_files": [], "list_roots": []}
            for _ in range(calls):
                for name, args in (("search_files", {"pattern": PATTERN}), ("list_roots", {})):
                    checking.clear()
                    t0 = time.perf_counter()
                    res = await s.call_tool(name, args)
                    times[name].append(time.perf_counter() - t0)
                    checks[name].append(sum(checking))
                    assert not res.is_error
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update({f"{k}_check": statistics.median(v) for k, v in checks.items()})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=31, help="rounds in process (min 7)")
    ap.add_argument("--calls", type=int, default=101, help="tool calls over HTTP (min 7)")
    ap.add_argument("--tree", help="use (or build, then keep) the tree in this empty folder")
    ap.add_argument("--mode", choices=["auto", "json", "sse"], default="auto",
                    help="HTTP answers: the app's default (auto), or forced JSON or SSE")
    args = ap.parse_args()
    runs, calls = max(7, args.runs), max(7, args.calls)
    import logging

    logging.disable(logging.INFO)
    tmp = tempfile.mkdtemp(prefix="loomfs-bench-")
    try:
        tree = Path(args.tree) if args.tree else Path(tmp) / "tree"
        tree.mkdir(exist_ok=True)
        counts = build_seed_tree(tree) if not any(tree.iterdir()) else None
        if counts is None:  # a kept tree: count what is there
            from benchmarks._trees import NOISE_FILES, USEFUL_FILES, TreeCounts

            counts = TreeCounts(USEFUL_FILES, NOISE_FILES, sum(1 for _ in tree.rglob("*/")))
        root = make_root(str(tree))
        print(f"tree: {counts.files} files ({counts.useful} useful), {counts.dirs} dirs")
        mine, theirs = sorted(ours(root)), sorted(glob(tree, root.rules))
        if mine != theirs or len(mine) != counts.useful:
            print(f"FAIL: ours found {len(mine)}, glob {len(theirs)}", file=sys.stderr)
            return 1
        m = medians(
            {"floor": lambda: scandir_floor(str(tree)), "walk": lambda: walk_match(root),
             "ours": lambda: ours(root), "page": lambda: ours(root, 100)},
            runs,
        )
        m["glob"] = medians({"glob": lambda: glob(tree, root.rules)}, 7)["glob"]
        print(f"in process, median of {runs} interleaved rounds (glob: 7):")
        for key, label in (
            ("floor", "bare pruned scandir BFS"),
            ("walk", "its walk + glob, no result"),
            ("page", "search_files, limit=100"),
            ("ours", "search_files, all 300 matches"),
            ("glob", "unpruned Path.glob + filter"),
        ):
            print(f"  {key:6s} {label:32s} {m[key] * 1e3:9.2f} ms")
        print(f"walk/floor = {m['walk'] / m['floor']:.2f}x (target <= 2x); "
              f"page/floor = {m['page'] / m['floor']:.2f}x; "
              f"ours/floor = {m['ours'] / m['floor']:.2f}x; "
              f"glob/ours = {m['glob'] / m['ours']:.0f}x")
        print("(the result costs one stat per match for its size, and the result model)")

        config = Path(tmp) / "roots.toml"
        config.write_text(textwrap.dedent(f"""
            audit_log = "{Path(tmp) / 'audit.log'}"
            [[roots]]
            name = "seed"
            path = "{tree}"
            role = "reference"
        """))
        e2e = asyncio.run(over_http(config, calls, args.mode))
        print(f"over HTTP (one MCP session, SDK client, answers: {args.mode}), "
              f"median of {calls} calls:")
        for name, label in (("search_files", "search_files('*.py')"), ("list_roots", "list_roots")):
            total, check = e2e[name], e2e[f"{name}_check"]
            print(f"  {label:22s} {total * 1e3:7.2f} ms, of which the client's schema check "
                  f"{check * 1e3:5.2f} ms -> {(total - check) * 1e3:6.2f} ms without it")
        print("target: search_files end to end < 10 ms; list_roots is the protocol's own cost")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
