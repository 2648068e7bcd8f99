"""The console script over stdio: a real subprocess, stdout holding only JSON-RPC."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.live import INIT_REQUEST, env_without_loomfs

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


async def test_sdk_client_over_stdio_initialises_and_lists_tools(one_root_config) -> None:
    cfg = one_root_config("reference")
    params = StdioServerParameters(command=EXE, args=["--config", str(cfg)],
                                    env=env_without_loomfs())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        assert init.server_info.name == "loom-fs-mcp"
        assert init.capabilities.tools is not None
        assert init.capabilities.tools.list_changed is True
        names = {t.name for t in (await s.list_tools()).tools}
        assert "list_roots" in names and "write_file" not in names
        res = await s.call_tool("list_roots", {})
        assert res.structured_content["roots"][0]["name"] == "main"


def test_stdout_holds_only_json_rpc_and_stderr_announces(one_root_config, tree) -> None:
    cfg = one_root_config("reference")
    requests = [
        INIT_REQUEST,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "list_roots", "arguments": {}},
        },
    ]
    # Write the requests, read the three answers, and only then close stdin: at EOF
    # the SDK drops requests still in flight, so closing first would race them.
    proc = subprocess.Popen(
        [EXE, "--config", str(cfg)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(3)]
        proc.stdin.close()
        rest, stderr = proc.stdout.read(), proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=30)
    finally:
        watchdog.cancel()
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert rest.strip() == "", rest
    assert proc.returncode == 0
    answers = [json.loads(line) for line in lines]
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    assert [a["id"] for a in answers] == [1, 2, 3]
    # stderr: roots (name, role, permissions), then the transport; no host path.
    assert "root main (default): role reference, permissions [read]" in stderr
    assert "transport: stdio" in stderr
    assert str(tree) not in stderr
    assert stderr.index("root main") < stderr.index("transport: stdio")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--config", "/nonexistent/roots.toml"], 1, "config: file not found"),
        ([], 2, "no config"),
    ],
)
def test_bad_start_exits_nonzero_with_message(args, code, message, monkeypatch) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LOOMFS_CONFIG"}
    proc = subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == code
    assert message in proc.stderr
    assert proc.stdout == ""
