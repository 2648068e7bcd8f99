"""HTTP details of the protocol a client may spell differently, on a live server.

The auth scheme is case-insensitive (RFC 9110 §11.1: `bearer` works), and
`Mcp-Method`/`Mcp-Name` values are compared without surrounding whitespace
(RFC 9110 §5.5). Raw sockets: httpx refuses to send a header value with
surrounding whitespace, other clients do not.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kit import roots_toml
from tests.live import INIT_REQUEST, LiveServer, live_server, tool_request

TOKEN = "s3cret-token"


def raw_post(srv: LiveServer, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str]:
    data = json.dumps(body).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n"
        + "".join(f"{k}:{v}\r\n" for k, v in headers.items())
        + "\r\n"
    )
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    status_line, _, rest = out.decode("utf-8", "replace").partition("\r\n")
    return int(status_line.split()[1]), rest


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("scheme")
    (base / "ws").mkdir()
    cfg = base / "roots.toml"
    cfg.write_text(roots_toml(("ws", base / "ws", "reference"), audit_log=base / "audit.log"))
    with live_server(cfg, token=TOKEN) as s:
        yield s


@pytest.mark.parametrize(
    "auth",
    [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"BeArEr {TOKEN}",
     f"Bearer  {TOKEN}", f" Bearer {TOKEN} "],
)  # fmt: skip
def test_the_auth_scheme_is_case_insensitive(srv: LiveServer, auth: str) -> None:
    status, _ = raw_post(srv, {"Authorization": auth}, INIT_REQUEST)
    assert status == 200


@pytest.mark.parametrize(
    "auth",
    [f"bearer {TOKEN}x", f"bearer{TOKEN}", f"Basic {TOKEN}", "bearer", "Bearer ", TOKEN,
     f"Bearer {TOKEN} {TOKEN}", f"Token {TOKEN}"],
)  # fmt: skip
def test_anything_else_is_still_401(srv: LiveServer, auth: str) -> None:
    status, rest = raw_post(srv, {"Authorization": auth}, INIT_REQUEST)
    assert status == 401 and "www-authenticate: bearer" in rest.lower()


def modern_call(tool: str) -> dict[str, Any]:
    """A 2026-07-28 tools/call (stateless: the client's details travel in `_meta`)."""
    return tool_request(2, tool, {}, {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })


def call_list_roots_with(srv: LiveServer, method: str, name: str) -> tuple[int, str]:
    """A 2026-07-28 `tools/call` of list_roots carrying these Mcp-Method/Mcp-Name values."""
    return raw_post(
        srv,
        {"Authorization": f"Bearer {TOKEN}", "MCP-Protocol-Version": "2026-07-28",
         "Mcp-Method": method, "Mcp-Name": name},
        modern_call("list_roots"),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("method", "name"),
    [("tools/call", "list_roots"), (" tools/call ", "list_roots"), ("tools/call", "  list_roots  "),
     ("\ttools/call", "list_roots\t"), ("tools/call ", " list_roots")],
)  # fmt: skip
def test_mcp_method_and_name_are_compared_without_surrounding_whitespace(
    srv: LiveServer, method: str, name: str
) -> None:
    status, rest = call_list_roots_with(srv, method, name)
    assert status == 200, rest
    assert '"roots"' in rest


@pytest.mark.parametrize(
    ("method", "name"),
    [("tools/list", "list_roots"), ("tools/call", "stat_path"), ("tools/call", "list roots"),
     ("tools/ call", "list_roots")],
)  # fmt: skip
def test_a_header_that_differs_inside_is_still_refused(
    srv: LiveServer, method: str, name: str
) -> None:
    status, rest = call_list_roots_with(srv, method, name)
    assert status == 400, rest
    assert "does not match" in rest
