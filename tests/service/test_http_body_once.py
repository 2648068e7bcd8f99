"""The request body is read once (`app.http.body.BodyLimit`) and shared by the guards after it.

At the ASGI level, below the SDK: a body sent in several chunks is pulled from the
server once, reaches the app as one message holding the very bytes object that the
response-mode guard and the disconnect watcher decided from; a client that leaves
before its body reaches the app as a disconnect, with no body to decide from. Then
the same under uvicorn: a body sent in chunks (`Transfer-Encoding: chunked`), its
`progressToken` split across two of them, still decides the answer's format.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx
import pytest

from app.http.body import BodyLimit, body_of
from app.http.disconnect import CancelOnDisconnect
from app.http.response_mode import JsonWhenNothingStreams, PerRequestJSON
from tests.live import MCP_POST_HEADERS, open_raw_session, rpc_messages, tool_request

if TYPE_CHECKING:
    from app.server import LoomServer


class Inflight:
    def __init__(self) -> None:
        self.cancelled: list[Any] = []

    def cancel(self, key: Any) -> None:
        self.cancelled.append(key)


class Server:
    def __init__(self) -> None:
        self.inflight = Inflight()


def scope(**extra: Any) -> dict[str, Any]:
    headers = [(b"mcp-session-id", b"s1"), (b"content-type", b"application/json")]
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers,
            "client": ("127.0.0.1", 5000), **extra}


def transport(messages: list[dict[str, Any]], gone: anyio.Event) -> tuple[Any, list[str]]:
    """The server's `receive`: the messages, then a disconnect once `gone` is set."""
    pulled: list[str] = []

    async def receive() -> dict[str, Any]:
        if messages:
            message = messages.pop(0)
        else:
            await gone.wait()
            message = {"type": "http.disconnect"}
        pulled.append(message["type"])
        return message

    return receive, pulled


def stack(app: Any, server: Server) -> Any:
    # The order of app.http.factory.build_app (the guards before BodyLimit take no body).
    # `server` stands in for the LoomServer: the watcher reads only its `inflight`.
    watcher = CancelOnDisconnect(JsonWhenNothingStreams(app), cast("LoomServer", server))
    return BodyLimit(watcher, lambda: 1 << 20)


@pytest.mark.parametrize("progress", [False, True])
async def test_a_chunked_body_is_pulled_once_and_shared(progress: bool) -> None:
    params: dict[str, Any] = {"name": "read_text_file", "arguments": {"path": "x" * 5000}}
    if progress:
        params["_meta"] = {"progressToken": 1}
    raw = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
    body = raw.encode()
    chunks = [body[:10], body[10:3000], body[3000:]]
    gone = anyio.Event()
    receive, pulled = transport(
        [{"type": "http.request", "body": c, "more_body": i < 2} for i, c in enumerate(chunks)],
        gone,
    )
    seen: dict[str, Any] = {}
    server = Server()

    async def app(s: Any, r: Any, send: Any) -> None:
        message = await r()
        seen.update(message=message, scope_body=body_of(s), json=bool(PerRequestJSON()))
        gone.set()  # the client leaves before the answer: the watcher cancels the call
        await anyio.sleep(0.05)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    with anyio.fail_after(10):
        await stack(app, server)(scope(), receive, lambda m: anyio.sleep(0))
    assert pulled[:3] == ["http.request"] * 3 and pulled[3:] == ["http.disconnect"]
    message = seen["message"]
    assert message["body"] == body and message["more_body"] is False
    assert message["body"] is seen["scope_body"]  # one bytes object, not a copy per reader
    assert seen["json"] is not progress  # decided from that body
    assert server.inflight.cancelled == [("127.0.0.1:5000", "s1", "7")]  # its id, from it


async def test_a_client_gone_before_its_body_reaches_the_app_as_a_disconnect() -> None:
    gone = anyio.Event()
    gone.set()
    receive, pulled = transport([], gone)
    seen: list[Any] = []
    server = Server()

    async def app(s: Any, r: Any, send: Any) -> None:
        seen.extend([await r(), body_of(s), bool(PerRequestJSON())])

    with anyio.fail_after(10):
        await stack(app, server)(scope(), receive, lambda m: anyio.sleep(0))
    assert seen == [{"type": "http.disconnect"}, None, False]
    assert pulled == ["http.disconnect"] and server.inflight.cancelled == []


@pytest.mark.parametrize("progress", [False, True])
def test_a_chunked_request_over_http_is_read_whole(live: Any, progress: bool) -> None:
    with httpx.Client(base_url=live.base, headers=MCP_POST_HEADERS, timeout=30) as http:
        open_raw_session(http)
        meta = {"progressToken": "p1"} if progress else None
        raw = json.dumps(tool_request(9, "read_text_file", {"path": "README.md"}, meta))
        body = raw.encode()
        cut = body.find(b"Token") if progress else len(body) // 2
        chunks = [body[:5], body[5:cut], body[cut:]]  # the token's name split in two
        r = http.post("/mcp", content=iter(chunks))
    assert r.status_code == 200, r.text
    assert r.request.headers.get("transfer-encoding") == "chunked"
    kind = "text/event-stream" if progress else "application/json"
    assert r.headers["content-type"].startswith(kind)
    answer = rpc_messages(r)[-1]
    assert answer["id"] == 9 and answer["result"]["structuredContent"]["path"] == "README.md"
