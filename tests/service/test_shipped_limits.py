"""Every limit the server ships with, checked as shipped against the number the docs give.

Other tests pass limits of their own (a cap of 3 sessions, a 0.5 s deadline),
so a shipped limit changed to "unlimited" passed them all. Here the console
script runs with its defaults (`--transport http`, a token in LOOMFS_TOKEN,
roots without any size setting) and each limit is found by pushing on it; the
expected number is read from docs/service.md's table (the config defaults from
docs/configuration.md). Deadlines of a minute or more are read from what the
real start-up path builds (`app.cli.main`, stopped where uvicorn would start
serving, in a child process).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from benchmarks._floods import open_session, probe
from benchmarks.worst_cases_http import TOKEN
from benchmarks.worst_cases_http import server as _serving
from tests.live import INIT_REQUEST, env_without_loomfs
from tests.service.test_http_framing import _exchange

REPO = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
MIB = 1 << 20


def _table(doc: str) -> dict[str, str]:
    rows = re.findall(r"^\| (.+?) \| (.+?) \| .+? \|$", doc, re.MULTILINE)
    return {name: value for name, value in rows}


SERVICE = _table((REPO / "docs" / "service.md").read_text(encoding="utf-8"))
CONFIGURATION = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "s": 1, "min": 60, "": 1}


def documented(row: str) -> float:
    """The number docs/service.md's table gives for `row` (sizes in bytes, times in s)."""
    m = re.fullmatch(r"(\d+) ?(KiB|MiB|s|min|)", SERVICE[row])
    assert m, f"{row!r}: {SERVICE[row]!r} is not a number with a unit"
    return int(m.group(1)) * UNITS[m.group(2)]


def configured(key: str) -> int:
    """A default of docs/configuration.md's example file (`key = value  # ...`)."""
    m = re.search(rf"^{key} = (\d+)\s", CONFIGURATION, re.MULTILINE)
    assert m, key
    return int(m.group(1))


HEAD = "request head (request line, headers, empty lines before it)"
FRAMING = "framing of one request (its head, chunk-size lines, chunk extensions, trailers)"
BODY = "request body"
FIRST_HEAD_DEADLINE = ("head deadline before a request on the connection passed the token "
                       "check (from the connection, or the first byte of the next request)")
HEAD_DEADLINE = ("head deadline on an authenticated connection (from the first byte of a "
                 "keep-alive request)")
BODY_DEADLINE = "body deadline (from the end of its head)"
UNREAD = "an answer left unread"
KEEP_ALIVE = "idle keep-alive connection, authenticated"
FIRST_KEEP_ALIVE = "idle keep-alive connection, before an authenticated request"
CONNECTIONS = ("authenticated connections (a request on them passed the token check), and "
               "`/mcp` requests past it in flight")
UNAUTHENTICATED = ("connections before an authenticated request (silent, trickling, or "
                   "refused with 401)")
SESSIONS = "sessions"
SESSION_IDLE = "session without a request in flight (an open GET stream counts as one)"
PROTECTED = "a session whose last call ended within"
STDIO_LINE = "stdio line (one JSON-RPC message)"
STDIO_OWED = "stdio requests taken and not yet answered"


def test_every_row_of_the_table_is_checked_here() -> None:
    checked = {HEAD, FRAMING, BODY, FIRST_HEAD_DEADLINE, HEAD_DEADLINE, BODY_DEADLINE, UNREAD,
               KEEP_ALIVE, FIRST_KEEP_ALIVE, CONNECTIONS, UNAUTHENTICATED, SESSIONS,
               SESSION_IDLE, PROTECTED, STDIO_LINE, STDIO_OWED}
    assert set(SERVICE) - {"limit", "---"} == checked
    assert SERVICE[BODY] == "twice the largest `max_read_bytes` plus 1 MiB"
    assert SERVICE[STDIO_LINE] == "the request body limit"


# --- the console script as shipped


def _roots(folder: Path) -> Path:
    """One root of each role, no size setting: the shipped defaults apply."""
    lines = []
    for role in ("reference", "sourcecode", "workspace"):
        (folder / role).mkdir()
        lines.append(f'[[roots]]\nname = "{role}"\npath = "{folder / role}"\nrole = "{role}"\n')
    cfg = folder / "roots.toml"
    cfg.write_text('default_root = "workspace"\n' + "\n".join(lines))
    return cfg


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(str(tmp_path_factory.mktemp("shipped").resolve()))


@pytest.fixture(scope="module")
def roots(folder: Path) -> Path:
    return _roots(folder)


@pytest.fixture(scope="module")
def shipped(roots: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    with _serving(roots) as running:
        yield running


def _answers(port: int, raw: bytes, timeout: float = 30) -> bytes:
    """Send `raw` (as far as the server lets us) and read until the server closes."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        with contextlib.suppress(OSError):
            s.sendall(raw)
        with contextlib.suppress(OSError):
            while chunk := s.recv(1 << 16):
                answer += chunk
    return answer


def _status(answer: bytes) -> int | None:
    return int(answer[9:12]) if answer.startswith(b"HTTP/1.1 ") else None


def test_the_head_cap_as_shipped(shipped: tuple[subprocess.Popen[bytes], int]) -> None:
    _, port = shipped
    cap = int(documented(HEAD))

    def head_of(size: int) -> bytes:
        start = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Pad: "
        return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"

    assert _status(_answers(port, head_of(cap - 1024))) == 200
    assert _status(_answers(port, head_of(cap + 2048))) in (431, None)
    assert _status(_answers(port, head_of(4 * cap))) in (431, None)


def test_the_framing_cap_as_shipped(shipped: tuple[subprocess.Popen[bytes], int]) -> None:
    _, port = shipped
    cap = int(documented(FRAMING))
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")

    def with_framing(size: int) -> bytes:
        trailer = b"X-T: " + b"t" * 1000 + b"\r\n"
        count, rest = divmod(size - len(head) - 5 - 7, len(trailer))
        return head + b"0\r\n" + trailer * count + b"X-T: " + b"t" * rest + b"\r\n\r\n"

    assert len(with_framing(cap - 2048)) == cap - 2048
    assert _exchange(port, with_framing(cap - 2048)) == [401, 200]  # served, still usable
    assert 200 not in _exchange(port, with_framing(cap + 2048))  # closed before /healthz


@contextlib.asynccontextmanager
async def _client(port: int) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http,
        streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (r, w),
        ClientSession(r, w) as s,
    ):
        await s.initialize()
        yield s


async def _largest_read(port: int) -> int:
    async with _client(port) as s:
        roots = (await s.call_tool("list_roots", {})).structured_content
        assert roots is not None
        return max(r["max_read_bytes"] for r in roots["roots"])


async def test_the_body_limit_as_shipped(shipped: tuple[subprocess.Popen[bytes], int]) -> None:
    _, port = shipped
    limit = 2 * await _largest_read(port) + MIB  # the documented formula, on the defaults
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nAccept: application/json, "
            b"text/event-stream\r\nConnection: close\r\n")
    declared = head + b"Content-Length: %d\r\n\r\n" % (limit + 1)
    assert _status(_answers(port, declared)) == 413
    chunk = b"{" + b" " * (MIB - 1)
    chunked = head + b"Transfer-Encoding: chunked\r\n\r\n" + (
        b"%x\r\n" % len(chunk) + chunk + b"\r\n") * (limit // MIB + 1) + b"0\r\n\r\n"
    assert _status(_answers(port, chunked)) in (413, None)
    # A body of exactly the limit is read (and refused for what it says, not its size).
    whole = head + b"Content-Length: %d\r\n\r\n" % limit + b"{}" + b" " * (limit - 2)
    assert _status(_answers(port, whole)) == 400


def _ping(sid: str, request_id: int) -> bytes:
    body = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % request_id
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nAccept: application/json, "
            b"text/event-stream\r\nmcp-session-id: " + sid.encode()
            + b"\r\nmcp-protocol-version: 2025-11-25\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body)


def test_the_authenticated_connection_cap_as_shipped(
    shipped: tuple[subprocess.Popen[bytes], int],
) -> None:
    _, port = shipped
    cap = int(documented(CONNECTIONS))
    sid = open_session(port, TOKEN)
    held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(cap)]
    try:
        for n, s in enumerate(held):  # all sent first: each answer starts a 5 s keep-alive
            s.sendall(_ping(sid, 10 + n))
        assert all(s.recv(4096).startswith(b"HTTP/1.1 200 ") for s in held)
        assert probe(port, TOKEN, sid) == 503  # cap authenticated, kept alive
    finally:
        for s in held:
            s.close()


def test_the_cap_before_an_authenticated_request_as_shipped(
    shipped: tuple[subprocess.Popen[bytes], int],
) -> None:
    _, port = shipped
    cap = int(documented(UNAUTHENTICATED))
    held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(cap + 3)]
    try:
        for s in held[:3]:  # the oldest three make room: told why, then closed
            assert _status(s.recv(4096)) == 503
        sid = open_session(port, TOKEN)  # a newcomer with the token gets in
        assert probe(port, TOKEN, sid) == 200
    finally:
        for s in held:
            s.close()


def _closed_after(port: int, opening: bytes) -> tuple[float, bytes]:
    """Send `opening`, then wait (reading) until the server closes: (seconds, answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        t0 = time.monotonic()
        s.sendall(opening)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := s.recv(1 << 16):
                answer += chunk
        return time.monotonic() - t0, answer


def _authenticated_then(port: int, then: bytes) -> tuple[float, bytes]:
    """A ping with the token on a new connection, then `then`; (seconds from the ping's
    answer until the server closed, what it answered after the ping)."""
    sid = open_session(port, TOKEN)
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(_ping(sid, 2))
        got = b""
        while b"\r\n\r\n" not in got:
            got += s.recv(4096)
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), head
        length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
        assert length, head  # a JSON answer, its length given
        while len(body) < int(length.group(1)):
            body += s.recv(4096)
        t0 = time.monotonic()
        s.sendall(then)
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := s.recv(1 << 16):
                answer += chunk
        return time.monotonic() - t0, answer


def test_the_head_deadlines_as_shipped(shipped: tuple[subprocess.Popen[bytes], int]) -> None:
    _, port = shipped
    first = documented(FIRST_HEAD_DEADLINE)
    took, answer = _closed_after(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert first - 1 <= took <= first + 3, took
    assert _status(answer) == 408
    later = documented(HEAD_DEADLINE)
    took, answer = _authenticated_then(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert later - 1 <= took <= later + 5, took
    assert _status(answer) == 408


def test_the_keep_alive_timeouts_as_shipped(
    shipped: tuple[subprocess.Popen[bytes], int],
) -> None:
    _, port = shipped
    first = documented(FIRST_KEEP_ALIVE)
    took, answer = _closed_after(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert _status(answer) == 200
    assert first - 1 <= took <= first + 2, took
    idle = documented(KEEP_ALIVE)
    took, answer = _authenticated_then(port, b"")
    assert answer == b""
    assert idle - 1 <= took <= idle + 5, took


def test_the_session_cap_as_shipped(roots: Path) -> None:
    cap = int(documented(SESSIONS))
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    with _serving(roots) as (_, port), httpx2.Client(timeout=30, headers=headers) as c:
        url = f"http://127.0.0.1:{port}/mcp"
        opened = 0
        while opened <= cap:
            r = c.post(url, json=INIT_REQUEST)
            if r.status_code != 200:
                break
            opened += 1
            sid = r.headers["mcp-session-id"]  # a call: within the minute, never evicted
            assert c.post(url, json=ping, headers={"mcp-session-id": sid,
                                                   "mcp-protocol-version": "2025-11-25"}
                          ).status_code == 200
        assert (opened, r.status_code) == (cap, 503)
        assert 1 <= int(r.headers["retry-after"]) <= documented(PROTECTED)


def test_the_stdio_line_cap_as_shipped(roots: Path) -> None:
    proc = subprocess.Popen([EXE, "--config", str(roots)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env_without_loomfs())
    assert proc.stdin is not None and proc.stdout is not None
    limit = 2 * 8 * MIB + MIB  # the body limit on these roots (the largest default: 8 MiB)
    try:
        def line(size: int, request_id: int) -> bytes:
            start = b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"p":"' % (
                request_id)
            return start + b"p" * (size - len(start) - 5) + b'"}}}\n'

        proc.stdin.write(json.dumps(INIT_REQUEST).encode() + b"\n")
        proc.stdin.write(line(limit, 2) + line(limit + 1, 3))
        proc.stdin.flush()
        got = [json.loads(proc.stdout.readline()) for _ in range(3)]
        assert got[0]["id"] == 1 and got[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert got[2]["id"] is None and got[2]["error"]["code"] == -32600
        assert f"at most {limit} bytes" in got[2]["error"]["message"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


CAPTURE = """
import json, sys, uvicorn
sys.path.insert(0, {repo!r})
seen = {{}}
uvicorn.Server.run = lambda self, sockets=None: seen.setdefault("config", self.config)
from app.cli import main
assert main(["--config", {cfg!r}, "--transport", "http", "--port", "0"]) == 0
config = seen["config"]
from app.http import sessions
from app.stdio.intake import Intake
from tests.live import session_policy
manager = session_policy(config.app).manager
protocol = config.http
print(json.dumps({{
    "max_head": protocol.max_head, "max_framing": protocol.max_framing,
    "head_timeout": protocol.head_timeout, "body_timeout": protocol.body_timeout,
    "answer_timeout": protocol.answer_timeout, "keep_alive": config.timeout_keep_alive,
    "first_head_timeout": protocol.unauthenticated_head_timeout,
    "first_keep_alive": protocol.unauthenticated_keep_alive,
    "connections": protocol.max_connections, "unauthenticated": protocol.max_unauthenticated,
    "uvicorn_cap": config.limit_concurrency, "sessions": manager.max_sessions,
    "session_idle": manager.session_idle_timeout, "protected": sessions.PROTECTED_FOR,
    "stdio_owed": Intake().limit,
}}))
"""


def test_what_the_startup_path_builds_is_what_the_docs_say(roots: Path) -> None:
    code = CAPTURE.format(repo=str(REPO), cfg=str(roots))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env_without_loomfs(LOOMFS_TOKEN=TOKEN), check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    built = json.loads(out.stdout.strip().splitlines()[-1])
    assert built == {
        "max_head": documented(HEAD), "max_framing": documented(FRAMING),
        "head_timeout": documented(HEAD_DEADLINE), "body_timeout": documented(BODY_DEADLINE),
        "answer_timeout": documented(UNREAD), "keep_alive": documented(KEEP_ALIVE),
        "first_head_timeout": documented(FIRST_HEAD_DEADLINE),
        "first_keep_alive": documented(FIRST_KEEP_ALIVE),
        "connections": documented(CONNECTIONS), "unauthenticated": documented(UNAUTHENTICATED),
        "uvicorn_cap": None, "sessions": documented(SESSIONS),
        "session_idle": documented(SESSION_IDLE), "protected": documented(PROTECTED),
        "stdio_owed": documented(STDIO_OWED),
    }


# --- the config defaults, read from the running server's answers


async def test_the_config_defaults_as_shipped(
    shipped: tuple[subprocess.Popen[bytes], int], folder: Path
) -> None:
    _, port = shipped
    per_role = re.search(r"default (\d+) MiB / (\d+) MiB / (\d+) MiB by role", CONFIGURATION)
    assert per_role
    work = folder / "workspace"
    (work / "names").mkdir()
    for i in range(300):
        (work / "names" / (f"{i:03d}" + "n" * 240)).write_text("x")
    (work / "bulk").mkdir()
    block = (b"y" * 1023 + b"\n") * 1024
    for i in range(9):  # 9 files just under 8 MiB: past the 64 MiB search budget
        with open(work / "bulk" / f"f{i}.txt", "wb") as f:
            for _ in range(7):
                f.write(block)
            f.write(block[: MIB - 4096])
    async with _client(port) as s:
        roots = (await s.call_tool("list_roots", {})).structured_content
        assert roots is not None
        assert {r["role"]: r["max_read_bytes"] for r in roots["roots"]} == {
            role: int(n) * MIB
            for role, n in zip(("reference", "sourcecode", "workspace"), per_role.groups(),
                               strict=True)}
        listing = await s.call_tool("list_directory", {"path": "names", "limit": 100_000})
        data = listing.structured_content
        assert data is not None, listing
        assert data["limit"] == configured("max_search_results")  # clamped to it
        cap = configured("max_output_chars")
        assert f"output limit reached (max_output_chars = {cap})" in data["note"]
        found = await s.call_tool("search_text", {"query": "zzz", "path": "bulk"})
        note = (found.structured_content or {}).get("note") or ""
        assert f"max_search_bytes = {configured('max_search_bytes')}" in note, found
