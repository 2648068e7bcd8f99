from __future__ import annotations

import httpx


async def test_healthz_answers_without_names_or_paths(live) -> None:
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{live.base}/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok" and body["roots"] == 1
    assert "main" not in r.text and "/" not in r.text.replace("\\/", "")


async def test_sdk_client_lists_tools_and_calls_list_roots(live) -> None:
    async with live.session() as s:
        tools = {t.name for t in (await s.list_tools()).tools}
        assert {"list_roots", "reload_config"} <= tools
        res = await s.call_tool("list_roots", {})
        assert not res.is_error
        assert res.structured_content == {
            "roots": [
                {
                    "name": "main",
                    "role": "reference",
                    "permissions": ["read"],
                    "default": True,
                    "max_read_bytes": 1 << 20,
                }
            ]
        }
