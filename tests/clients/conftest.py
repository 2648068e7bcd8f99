"""Real peers for the server: Node tools (conformance suite, Inspector) and the
console script run as its own process.

The Node tools come from `scripts/install_node.sh` (run_tests.sh calls it; a
bare `pytest` calls it here if it has not run). When they cannot be had the
tests fail with the script's reason: a client test is never skipped quietly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.kit import roots_toml
from tests.live import env_without_loomfs

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "scripts" / "install_node.sh"
START_DEADLINE = 20.0


@dataclass(frozen=True)
class NodeTools:
    node: str
    conformance_js: str
    conformance_next_js: str  # the 2026-07-28 requirement set
    inspector_js: str


def tools_dir() -> Path:
    return Path(os.environ.get("LOOMFS_NODE_TOOLS") or REPO / ".ci-cache" / "node-tools")


def _read_env(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k: v for k, v in pairs}


@pytest.fixture(scope="session")
def node_tools() -> NodeTools:
    env_file = tools_dir() / "tools.env"
    wanted = ("NODE", "CONFORMANCE_JS", "CONFORMANCE_NEXT_JS", "INSPECTOR_JS")
    found = _read_env(env_file) if env_file.exists() else {}
    if not all(k in found and Path(found[k]).exists() for k in wanted):
        done = subprocess.run(
            ["bash", str(INSTALL)], capture_output=True, text=True, timeout=900, check=False
        )
        if done.returncode != 0:
            pytest.fail(
                "scripts/install_node.sh failed; the client tests need Node >= 22.19 and "
                f"npm:\n{done.stderr[-4000:]}",
                pytrace=False,
            )
    env = _read_env(env_file)
    return NodeTools(
        env["NODE"], env["CONFORMANCE_JS"], env["CONFORMANCE_NEXT_JS"], env["INSPECTOR_JS"]
    )


def console_script() -> str:
    """The installed `loom-fs-mcp` beside this interpreter (what a client config points at)."""
    found = shutil.which("loom-fs-mcp", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.fail("the console script loom-fs-mcp is not installed in this environment")
    return found


@dataclass
class ServerProcess:
    """`loom-fs-mcp --transport http --port 0` as its own process."""

    proc: subprocess.Popen[str]
    url: str = ""
    stderr: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


@contextlib.contextmanager
def run_server(
    config: Path, *, token: str | None = None, port: int = 0
) -> Iterator[ServerProcess]:
    """With `token`, /mcp requires it (LOOMFS_TOKEN); without, the server runs `--no-auth`
    (the conformance suite and the Inspector's defaults send no header)."""
    env = env_without_loomfs(**({"LOOMFS_TOKEN": token} if token else {}))
    auth = [] if token else ["--no-auth"]
    proc = subprocess.Popen(
        [console_script(), "--config", str(config), "--transport", "http", "--port", str(port),
         *auth],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    srv = ServerProcess(proc)
    ready = threading.Event()

    def drain() -> None:
        # Read stderr to the end so the server never blocks on a full pipe.
        assert proc.stderr is not None
        for line in proc.stderr:
            srv.stderr.append(line)
            if line.startswith("listening on "):
                srv.url = line.split()[2]
                ready.set()
        ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        ready.wait(START_DEADLINE)
        if not srv.url:
            raise RuntimeError("server did not start:\n" + "".join(srv.stderr))
        _wait_healthy(srv.base)
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()


def _wait_healthy(base: str) -> None:
    deadline = time.monotonic() + START_DEADLINE
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server never answered /healthz")
        time.sleep(0.05)


@pytest.fixture
def search_fetch_config(write_config: Callable[..., Path], tree: Path) -> Path:
    """One reference root (the shared `tree`, with .env/.git/node_modules) and search/fetch on."""
    return write_config(
        roots_toml(("main", tree, "reference"), audit_log=None, extra="search_fetch_tools = true")
    )
