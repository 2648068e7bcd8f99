"""The HTTP guards, against the real app under uvicorn (tests/live.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import INIT_REQUEST, MCP_POST_HEADERS, LiveServer, live_server

TOKEN = "s3cret-token-value"
INIT = INIT_REQUEST
MCP_HEADERS = MCP_POST_HEADERS


@pytest.fixture
def guarded(one_root_config) -> Iterator[LiveServer]:
    with live_server(
        one_root_config("reference"),
        token=TOKEN,
        allowed_hosts=["tunnel.example.net"],
        allowed_origins=["https://chat.example.com"],
    ) as srv:
        yield srv


def post_init(srv: LiveServer, **headers: str) -> httpx.Response:
    return httpx.post(
        srv.url, content=json.dumps(INIT), headers={**MCP_HEADERS, **headers}, timeout=10
    )


# -- bearer token -------------------------------------------------------------


@pytest.mark.parametrize(
    "auth",
    [
        None,  # no header
        "Bearer wrong-token",
        f"Bearer {TOKEN}x",
        f"bearer{TOKEN}",
        f"Basic {TOKEN}",
        TOKEN,
    ],
)
def test_mcp_without_the_right_token_is_401_with_bearer_challenge(guarded, auth) -> None:
    headers = {"Authorization": auth} if auth else {}
    r = post_init(guarded, **headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")


def test_mcp_with_the_right_token_initialises(guarded) -> None:
    r = post_init(guarded, Authorization=f"Bearer {TOKEN}")
    assert r.status_code == 200
    assert "mcp-session-id" in r.headers


def test_post_mcp_is_served_without_redirect(guarded) -> None:
    r = post_init(guarded, Authorization=f"Bearer {TOKEN}")
    assert r.status_code == 200 and not r.history


def test_healthz_needs_no_token(guarded) -> None:
    r = httpx.get(f"{guarded.base}/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ok"
    assert httpx.head(f"{guarded.base}/healthz").status_code == 200


@pytest.mark.parametrize(
    "path",
    ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"],
)
def test_oauth_well_known_is_404(guarded, path) -> None:
    assert httpx.get(f"{guarded.base}{path}").status_code == 404


# -- Host and Origin (DNS rebinding) --------------------------------------------


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("evil.example.com", 421),
        ("evil.example.com:8000", 421),
        ("127.0.0.1.evil.example.com", 421),
        ("10.0.0.5:8000", 421),
        ("localhost:1234", 200),
        ("127.0.0.1:9", 200),
        ("[::1]:8000", 200),
        ("tunnel.example.net", 200),  # allowed_hosts lets a tunnel host through
        ("tunnel.example.net:443", 200),
    ],
)
def test_host_header_must_be_loopback_or_allowed(guarded, host, status) -> None:
    r = post_init(guarded, Authorization=f"Bearer {TOKEN}", Host=host)
    assert r.status_code == status


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://evil.example.com", 403),
        ("http://127.0.0.1.evil.example.com", 403),
        ("null", 403),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1:6274", 200),
        ("https://chat.example.com", 200),  # allowed_origins
    ],
)
def test_origin_must_be_loopback_or_allowed(guarded, origin, status) -> None:
    r = post_init(guarded, Authorization=f"Bearer {TOKEN}", Origin=origin)
    assert r.status_code == status


def test_host_check_covers_healthz_too(guarded) -> None:
    r = httpx.get(f"{guarded.base}/healthz", headers={"Host": "evil.example.com"})
    assert r.status_code == 421


# -- body limit -------------------------------------------------------------------


def test_oversize_body_is_rejected_with_413(guarded) -> None:
    limit = 2 * (1 << 20) + (1 << 20)  # reference root: 1 MiB max_read_bytes
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' + b"x" * limit + b'"}'
    r = httpx.post(
        guarded.url,
        content=body,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert r.status_code == 413


def test_oversize_chunked_body_is_rejected_with_413(guarded) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(8):
            yield b"x" * (1 << 20)

    r = httpx.post(
        guarded.url,
        content=chunks(),
        headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert r.status_code == 413


def test_body_under_the_limit_is_accepted(guarded) -> None:
    r = post_init(guarded, Authorization=f"Bearer {TOKEN}")
    assert r.status_code == 200


def _post_raw(srv: LiveServer, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        srv.url,
        content=body,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", **headers},
        timeout=30,
    )


def _padded_ping(size: int) -> bytes:
    head, tail = b'{"jsonrpc":"2.0","id":7,"method":"ping","pad":"', b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_body_limit_is_pinned_on_both_sides(one_root_config, tree) -> None:
    # docs/service.md's floor: a write_file of a file at the largest max_read_bytes must get
    # through the guard and be written.
    cfg = one_root_config("workspace", extra=f"max_read_bytes = {1 << 20}")
    with live_server(cfg, token=TOKEN) as srv:
        r = post_init(srv, Authorization=f"Bearer {TOKEN}")
        sid = r.headers["mcp-session-id"]
        ver = {"mcp-session-id": sid, "mcp-protocol-version": INIT["params"]["protocolVersion"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        _post_raw(srv, json.dumps(note).encode(), **ver)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "write_file",
                           "arguments": {"path": "big.txt", "content": "x" * (1 << 20)}}}
        r = _post_raw(srv, json.dumps(call).encode(), **ver)
        assert r.status_code == 200, r.text[:200]
        assert (tree / "big.txt").stat().st_size == 1 << 20
        # The exact edge, found from the 413's own message: `limit` bytes pass, one more does not.
        r = _post_raw(srv, _padded_ping(8 << 20))
        assert r.status_code == 413
        limit = int(re.search(r"(\d+) bytes", r.text).group(1))  # type: ignore[union-attr]
        assert limit >= len(json.dumps(call))
        assert _post_raw(srv, _padded_ping(limit)).status_code != 413
        assert _post_raw(srv, _padded_ping(limit + 1)).status_code == 413


def test_no_token_configured_means_no_auth(live) -> None:
    assert post_init(live).status_code == 200


def test_token_file_is_read(tmp_path: Path, monkeypatch) -> None:
    from app.security.tokenfile import TokenFile, read_token
    from app.settings import Settings

    f = tmp_path / "token"
    f.write_text(f"{TOKEN}\n")
    monkeypatch.setenv("LOOMFS_TOKEN_FILE", str(f))
    monkeypatch.delenv("LOOMFS_TOKEN", raising=False)
    token_file = Settings().token_file
    assert token_file is not None and read_token(TokenFile(token_file)) == TOKEN


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a.example, b.example", ["a.example", "b.example"]),
        ('["a.example", "b.example:8443"]', ["a.example", "b.example:8443"]),
        ("", []),
    ],
)
def test_list_settings_take_json_or_commas(monkeypatch, raw, expected) -> None:
    from app.settings import Settings

    monkeypatch.setenv("LOOMFS_ALLOWED_HOSTS", raw)
    assert Settings().allowed_hosts == expected


def test_unknown_session_id_is_404_so_clients_reinitialise(guarded) -> None:
    # What a client holding a session id from before a restart sees.
    headers = {
        **MCP_POST_HEADERS,
        "Authorization": f"Bearer {TOKEN}",
        "mcp-session-id": "0123456789abcdef0123456789abcdef",
        "mcp-protocol-version": "2025-11-25",
    }
    r = httpx.post(
        guarded.url,
        headers=headers,
        timeout=10,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
    assert r.status_code == 404
