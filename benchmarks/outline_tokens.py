"""What an outline saves, what a parse costs, and whether a real tree parses within its bound.

    .venv/bin/pip install -e '.[bench]'      # the tokenizer, once (runs offline)
    .venv/bin/python benchmarks/outline_tokens.py [--files 10] [--json]

1. Tokens (the tokenizer `benchmarks/context_cost.py` uses, `benchmarks/_tokens.py`): on
   the largest .py files of this interpreter's standard library, the text of `outline`
   plus one `read_text_file(symbol=...)` (the file's largest method or function: the
   costliest one to read) against the whole-file read (`end_line` past the end),
   each the text item a model reads, through the MCP SDK client in process.
2. Parse time per MB for each language, in the worker as the tool parses: real files where
   the machine has them (the standard library's .py, site-packages' .c/.h/.md), else the
   language's fixture (tests/fs/code/fixtures) repeated to about 1 MB, marked `fixture`.
3. Every file of a known language in the standard library and site-packages (code nobody
   here wrote) parsed under the bounds: how many stopped, the slowest parse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `app` and `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fs" / "code" / "fixtures"
MB = 1 << 20


def largest_stdlib(n: int) -> list[Path]:
    files = [p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts]
    return sorted(files, key=lambda p: -p.stat().st_size)[:n]


def text_of(res: Any) -> str:
    return "".join(getattr(c, "text", "") for c in res.content)


def biggest(symbols: list[dict[str, Any]], prefix: str = "") -> tuple[int, str]:
    best = (0, "")
    for s in symbols:
        q = prefix + s["name"]
        if s["kind"] in ("function", "method"):
            best = max(best, (s["end_line"] - s["start_line"], q))
        best = max(best, biggest(s.get("children", []), q + "."))
    return best


async def tokens_part(n: int) -> list[dict[str, Any]]:
    from mcp import Client

    from app.registry import Registry
    from app.server import LoomServer
    from benchmarks._tokens import tokens
    from tests.kit import config_file, roots_toml

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = config_file(Path(tmp), roots_toml(
            ("lib", STDLIB, "reference", {"max_read_bytes": 8 * MB}), audit_log=None,
            extra="max_output_chars = 2000000"))
        async with Client(LoomServer(Registry(str(cfg)))) as client:
            for path in largest_stdlib(3 * n):
                if len(rows) == n:
                    break
                rel = str(path.relative_to(STDLIB))
                whole = await client.call_tool("read_text_file",
                                               {"path": rel, "end_line": 10**8})
                out = await client.call_tool("outline", {"path": rel})
                size, name = biggest(out.structured_content.get("symbols", []))
                if not name:  # a file of data (pydoc_data/topics.py): nothing to outline
                    continue
                one = await client.call_tool("read_text_file", {"path": rel, "symbol": name})
                assert not (whole.is_error or out.is_error or one.is_error), rel
                w, o, s = tokens(text_of(whole)), tokens(text_of(out)), tokens(text_of(one))
                rows.append({"file": rel, "bytes": path.stat().st_size, "whole": w,
                             "outline": o, "symbol": name, "symbol_lines": size + 1,
                             "symbol_read": s, "ratio": round((o + s) / w, 3)})
    return rows


def samples() -> dict[str, tuple[bytes, str]]:
    from app.fs.code.languages import GRAMMARS, language_of

    real: dict[str, list[Path]] = {"python": largest_stdlib(40)}
    for p in PURELIB.rglob("*"):
        lang = language_of(p.name) if p.is_file() else None
        if lang in ("c", "markdown"):
            real.setdefault(lang, []).append(p)
    out = {}
    for lang in GRAMMARS:
        files = real.get(lang, [])
        data = b"".join(p.read_bytes() + b"\n" for p in files)[: 2 * MB]
        if len(data) >= MB // 4:
            out[lang] = (data, f"real ({len(files)} files)")
            continue
        fixture = next(p for p in FIXTURES.iterdir() if language_of(p.name) == lang)
        body = fixture.read_bytes()
        if lang == "php":  # one opening tag, the rest repeated after it
            body = body.replace(b"<?php", b"", 1)
            out[lang] = (b"<?php\n" + body * (MB // len(body) + 1), "fixture")
        else:
            out[lang] = (body * (MB // len(body) + 1), "fixture")
    return out


def speed_part() -> list[dict[str, Any]]:
    from app.fs.code import parse

    rows = []
    for lang, (data, what) in samples().items():
        parse.parse(lang, b"\n", 1)  # grammar loaded: not timed
        t0 = time.perf_counter()
        got = parse.parse(lang, data, 2, deadline_s=60)
        took = time.perf_counter() - t0
        rows.append({"language": lang, "source": what, "bytes": len(data),
                     "s_per_mb": round(took / (len(data) / MB), 3),
                     "stopped": got.stopped, "symbols": len(got.symbols)})
    return rows


def tree_part() -> dict[str, Any]:
    from app.fs.code import parse
    from app.fs.code.languages import language_of
    from app.fs.code.outline import MAX_PARSE_BYTES

    seen: dict[str, int] = {}
    stopped: list[str] = []
    slowest = (0.0, "")
    for top in (STDLIB, PURELIB):
        for p in top.rglob("*"):
            lang = language_of(p.name)
            if lang is None or not p.is_file() or p.is_symlink():
                continue
            if "site-packages" in p.parts and top is STDLIB:
                continue
            data = p.read_bytes()
            if len(data) > MAX_PARSE_BYTES or b"\0" in data[:4096]:
                continue
            t0 = time.perf_counter()
            got = parse.parse(lang, data, 1)
            slowest = max(slowest, (time.perf_counter() - t0, p.name))
            seen[lang] = seen.get(lang, 0) + 1
            if got.stopped is not None:
                stopped.append(f"{p} ({got.stopped})")
    return {"files": seen, "stopped": stopped, "slowest_s": round(slowest[0], 3),
            "slowest": slowest[1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10, help="largest stdlib files to count")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result: dict[str, Any] = {"tokens": asyncio.run(tokens_part(args.files)),
                              "speed": speed_part(),
              "tree": tree_part()}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print("file  bytes  whole-read  outline  +symbol(lines)  (outline+symbol)/whole")
    for r in result["tokens"]:
        print(f"{r['file']}  {r['bytes']}  {r['whole']}  {r['outline']}  "
              f"{r['symbol_read']} ({r['symbol']}, {r['symbol_lines']})  {r['ratio']}")
    print("\nlanguage  source  s/MB  symbols  stopped")
    for r in result["speed"]:
        print(f"{r['language']}  {r['source']}  {r['s_per_mb']}  {r['symbols']}  {r['stopped']}")
    t = result["tree"]
    print(f"\nreal tree: {t['files']}; stopped: {len(t['stopped'])} {t['stopped'][:5]}; "
          f"slowest {t['slowest_s']} s ({t['slowest']})")


if __name__ == "__main__":
    main()
