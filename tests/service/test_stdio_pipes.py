"""stdio on asyncio pipes (app/stdio.py): long lines, files as stdin, stray output.

Real subprocesses of the console script; what is checked is the wire.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.live import INIT_REQUEST, env_without_loomfs

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
HELLO: list[dict[str, Any]] = [
    INIT_REQUEST,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": name, "arguments": args},
    }


def answers(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


async def test_lines_far_longer_than_a_read_chunk_round_trip(one_root_config, tree) -> None:
    cfg = one_root_config("workspace")
    content = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(3000))  # ~300 KB
    params = StdioServerParameters(command=EXE, args=["--config", str(cfg)],
                                    env=env_without_loomfs())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        w = await s.call_tool("write_file", {"path": "big.txt", "content": content})
        assert not w.is_error, w.content
        r = await s.call_tool("read_text_file", {"path": "big.txt", "tail": 1})
        assert not r.is_error
        assert r.structured_content["content"].startswith("3000 | line 2999 x")
    assert (tree / "big.txt").read_text() == content


async def test_concurrent_calls_are_all_answered_on_the_pipe(one_root_config) -> None:
    cfg = one_root_config("reference")
    params = StdioServerParameters(command=EXE, args=["--config", str(cfg)],
                                    env=env_without_loomfs())
    results: dict[int, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()

        async def one(n: int) -> None:
            results[n] = await s.call_tool("read_text_file", {"path": "README.md"})

        async with anyio.create_task_group() as tg:
            for n in range(40):
                tg.start_soon(one, n)
    assert sorted(results) == list(range(40))
    assert all(
        r.structured_content["content"] == "1 | # Title\n2 | Some text" for r in results.values()
    )


def test_a_regular_file_as_stdin_is_served_by_the_sdk_path(one_root_config, tmp_path) -> None:
    # Not pollable by epoll: app.stdio hands over to the SDK's threaded transport.
    # (At EOF the server stops and calls still in flight are dropped, on either
    # path: only the handshake's answer is certain here.)
    cfg = one_root_config("reference")
    src = tmp_path / "requests.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in HELLO))
    with src.open() as f:
        proc = subprocess.run(
            [EXE, "--config", str(cfg)], stdin=f, capture_output=True, text=True, timeout=60
        )
    got = answers(proc.stdout)
    assert [a["id"] for a in got] == [1]
    assert got[0]["result"]["serverInfo"]["name"] == "loom-fs-mcp"


def test_last_line_without_newline_is_still_read(one_root_config) -> None:
    cfg = one_root_config("reference")
    text = json.dumps(HELLO[0])  # no newline, then EOF
    proc = subprocess.run(
        [EXE, "--config", str(cfg)], input=text, capture_output=True, text=True, timeout=60
    )
    assert [a["id"] for a in answers(proc.stdout)] == [1]


def test_a_socketpair_as_stdin_and_stdout_is_served(one_root_config) -> None:
    # Node-based clients (libuv) hand their children socketpairs, not pipes.
    cfg = one_root_config("reference")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen(
            [EXE, "--config", str(cfg)],
            stdin=theirs.fileno(),
            stdout=theirs.fileno(),
            stderr=subprocess.PIPE,
        )
        theirs.close()
        try:
            requests = [*HELLO, *(call(n, "list_roots", {}) for n in range(2, 6))]
            got: list[dict[str, Any]] = []
            with ours.makefile("rwb") as wire:
                for r in requests:
                    wire.write(json.dumps(r).encode() + b"\n")
                    wire.flush()
                    if "id" in r:  # one at a time: nothing in flight when stdin closes
                        got.append(json.loads(wire.readline()))
            assert [a["id"] for a in got] == [1, 2, 3, 4, 5]
            assert all(a["result"]["structuredContent"]["roots"] for a in got[1:])
        finally:
            ours.shutdown(socket.SHUT_RDWR)  # EOF: the server stops, cleanly
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err.decode()[-3000:]
