"""Another client's /healthz answers within a second while each worst case runs.

The worst inputs of `benchmarks/worst_cases.py`, sent as tool calls to the
real app under uvicorn; meanwhile a second client polls /healthz every 50 ms.
A call that held the GIL in one long C call (a backtracking regex) or
swapped the machine (a read of millions of line objects) would stall it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.worst_cases import build
from tests.kit import roots_toml
from tests.live import LiveServer, live_server

FLOOD = ("*a" * 500)[:990] + "?/**/" + "*?" * 10
CASES: list[tuple[str, dict[str, Any]]] = [
    ("search_files", {"pattern": "*?" * 11 + "Z"}),
    ("search_files", {"pattern": FLOOD}),
    ("search_text", {"query": "a", "file_glob": "*?" * 11 + "Z"}),
    ("search_text", {"query": "a", "file_glob": "matches.txt", "offset": 10_000_000}),
    ("search_text", {"query": "A", "file_glob": "matches.txt", "case_sensitive": False,
                     "output_mode": "count"}),
    # RE2 on its NFA until the call's CPU time is spent; 8 MiB of wildcard-heavy ignore files
    ("search_text", {"query": "[ab]*a[ab]{20}$", "path": "ab", "regex": True,
                     "output_mode": "count"}),
    ("search_text", {"query": "zzz", "path": "ignored"}),
    ("read_text_file", {"path": "empty_lines.txt", "end_line": 1_000_000_000}),
    ("read_text_file", {"path": "empty_lines.txt", "tail": 100_000}),
    ("read_text_file", {"path": "utf16_lines.txt", "start_line": 4_000_000,
                        "end_line": 5_000_000}),
    ("read_text_file", {"path": "crlf_lines.txt", "end_line": 1_000_000_000}),
    ("read_text_file", {"path": "one_line.txt", "tail": 100_000}),
    ("read_multiple_files", {"paths": ["empty_lines.txt"] * 50}),
    ("edit_file", {"path": "repetitive.txt", "dry_run": True, "edits": "first-and-last"}),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("worst-live")
    folder = base / "root"
    folder.mkdir()
    build(folder)
    cfg = base / "roots.toml"
    cfg.write_text(roots_toml(("w", os.path.realpath(folder), "workspace"),
                              audit_log=base / "audit.log"))
    with live_server(cfg) as srv:
        yield srv


def _edits(folder: str) -> list[dict[str, str]]:
    text = Path(folder, "repetitive.txt").read_text()
    return [{"old_text": text[:200], "new_text": "first\n"},
            {"old_text": text[-200:], "new_text": "last\n"}]


@pytest.mark.parametrize(("tool", "args"), CASES, ids=[f"{t}-{i}" for i, (t, _) in
                                                        enumerate(CASES)])
async def test_healthz_answers_within_a_second_while_a_worst_case_runs(
    server: LiveServer, tool: str, args: dict[str, Any]
) -> None:
    if args.get("edits") == "first-and-last":
        root = next(iter(server.registry.current.roots.values()))
        args = {**args, "edits": _edits(root.real)}
    worst = 0.0
    done = asyncio.Event()

    async def poll(client: httpx.AsyncClient) -> None:
        nonlocal worst
        while not done.is_set():
            t0 = time.monotonic()
            r = await client.get(f"{server.base}/healthz")
            assert r.status_code == 200
            worst = max(worst, time.monotonic() - t0)
            await asyncio.sleep(0.05)

    async with server.session() as s, httpx.AsyncClient(timeout=10) as other:
        poller = asyncio.create_task(poll(other))
        t0 = time.monotonic()
        try:
            res = await s.call_tool(tool, args)
        finally:
            done.set()
            await poller
        took = time.monotonic() - t0
    assert not res.is_error, res.content
    assert worst < 1.0, f"/healthz took {worst:.2f} s while {tool} ran ({took:.2f} s)"
    assert took < 30.0


