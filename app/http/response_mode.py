"""Per request, a plain JSON answer or an SSE stream (`JsonWhenNothingStreams`)."""

from __future__ import annotations

from contextvars import ContextVar

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.body import body_of
from app.http.guards import header

_answer_json: ContextVar[bool] = ContextVar("loomfs_answer_json", default=False)


class PerRequestJSON:
    """The SDK's `json_response` flag, read as a bool: this request's choice."""

    def __bool__(self) -> bool:
        return _answer_json.get()


class JsonWhenNothingStreams:
    """Answer a POST with one JSON body when nothing but its response can be sent on it.

    An SSE answer costs the server about twice the CPU of a JSON one per small
    call, and the client as much again (docs/measured.md). Only a request
    that may get more than its response needs the stream: one that asked for
    progress (`progressToken`; looked for in the raw bytes, so a false positive
    just keeps SSE). Our tools send nothing else on a request's stream (no
    sampling, elicitation or request-scoped logs). The request that opens a
    session (no `mcp-session-id`, handshake era) always streams: the session's
    own tasks are started inside it and inherit its choice; they must see SSE.
    The body is the one `BodyLimit` (outside this one) already read.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = body_of(scope) if scope["type"] == "http" else None
        if body is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        version = header(scope, b"mcp-protocol-version")
        # The SDK's own routing rule: a version outside the handshake era is served
        # per request (2026-07-28), never opening a session.
        per_request = version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
        in_session = header(scope, b"mcp-session-id") is not None
        token = _answer_json.set((in_session or per_request) and b"progressToken" not in body)
        try:
            await self.app(scope, receive, send)
        finally:
            _answer_json.reset(token)
