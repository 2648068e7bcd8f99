"""Per-request answer format on /mcp: JSON when only the response can come, SSE otherwise.

Raw HTTP against the real app, so the wire format itself is what is checked.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.live import MCP_POST_HEADERS, open_raw_session, rpc_messages, tool_request

HEADERS = MCP_POST_HEADERS


@pytest.fixture
def session(live) -> Any:
    with httpx.Client(base_url=live.base, headers=HEADERS, timeout=30) as http:
        opened = open_raw_session(http)  # initialized answered 202
        # The request that opens a session always streams (its tasks inherit the choice).
        assert opened.headers["content-type"].startswith("text/event-stream")
        yield http


def test_call_without_progress_token_is_answered_with_one_json_body(session) -> None:
    r = session.post("/mcp", json=tool_request(2, "read_text_file", {"path": "README.md"}))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["id"] == 2 and body["result"]["structuredContent"]["path"] == "README.md"


def test_tool_error_is_answered_as_json_too(session) -> None:
    r = session.post("/mcp", json=tool_request(3, "read_text_file", {"path": "../x"}))
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["result"]["isError"] is True


def test_call_asking_for_progress_is_streamed_with_its_notifications(
    session, tree, monkeypatch
) -> None:
    # The server runs in this process: report progress after every file, and give the
    # search enough files that notifications must arrive before the answer.
    from app.fs.search import searcher

    monkeypatch.setattr(searcher, "PROGRESS_EVERY", 0.0)
    for i in range(30):
        (tree / f"f{i:02d}.txt").write_text(f"line {i}\n")
    r = session.post("/mcp", json=tool_request(4, "search_text", {"query": "zzz"},
                                               {"progressToken": "p1"}))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    messages = rpc_messages(r)
    assert messages[-1]["id"] == 4 and "result" in messages[-1]
    notes = messages[:-1]
    assert len(notes) >= 3, messages
    for m in notes:
        assert m["method"] == "notifications/progress"
        assert m["params"]["progressToken"] == "p1"
    done = [m["params"]["progress"] for m in notes]
    assert done == sorted(done) and done[-1] > done[0]  # progress moves forward


def test_other_requests_in_a_session_are_json(session) -> None:
    r = session.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert r.headers["content-type"].startswith("application/json")
    assert any(t["name"] == "list_roots" for t in r.json()["result"]["tools"])


def test_json_and_sse_calls_interleave_in_one_session(session) -> None:
    kinds = []
    for n in range(6, 12):
        meta = {"progressToken": f"t{n}"} if n % 2 else None
        r = session.post("/mcp", json=tool_request(n, "list_roots", {}, meta))
        kinds.append(r.headers["content-type"].split(";")[0])
        answer = rpc_messages(r)[-1]
        assert answer["id"] == n and answer["result"]["structuredContent"]["roots"]
    assert kinds == ["application/json", "text/event-stream"] * 3
