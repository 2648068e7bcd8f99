"""The trigram index through the real server: `search_index = true`, a live uvicorn and the
MCP SDK client. A write through the server is found by the next call; a deny rule added by
a reload leaves the file out of the answer and out of the index's rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from app.corpus import trigram as corpus_trigram
from tests.kit import roots_toml
from tests.live import LiveServer, live_server


def config(write_config: Any, tmp_path: Path, root: Path, deny: list[str]) -> Path:
    return write_config(roots_toml(
        ("main", root, "workspace", {"deny": deny}),
        audit_log=tmp_path / "state" / "audit.log",
        extra="search_index = true",
    ))


async def found(srv: LiveServer, query: str) -> set[str]:
    async with srv.session() as s:
        res = await s.call_tool("search_text", {"query": query, "root": "main"})
        assert not res.is_error, res.content
        assert res.structured_content is not None
        return {m["path"] for m in res.structured_content["matches"]}


async def call(srv: LiveServer, tool: str, args: dict[str, Any]) -> None:
    async with srv.session() as s:
        res = await s.call_tool(tool, args)
        assert not res.is_error, res.content


def settle() -> dict[str, int]:
    """Every build under way finished; the rows of the (one) index: path -> id."""
    rows: dict[str, int] = {}
    for path, keeper in list(corpus_trigram._keepers.items()):
        state = keeper.wait()
        assert state.error is None, state.error
        con = apsw.Connection(path)
        rows.update({p: i for p, i in con.execute("SELECT path, id FROM files")})
        con.close()
    return rows


async def test_writes_through_the_server_and_deny_rules_reach_the_indexed_search(
    write_config: Any, tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("needle_one = 1\n")
    (root / "secret.txt").write_text("needle_one in a secret\n")
    (root / "other.txt").write_text("nothing here\n")
    cfg = config(write_config, tmp_path, root, [])
    corpus_trigram._keepers.clear()
    with live_server(cfg) as srv:
        assert await found(srv, "needle_one") == {"src/a.py", "secret.txt"}
        assert {"src/a.py", "secret.txt", "other.txt"} <= settle().keys()
        await call(srv, "write_file", {"root": "main", "path": "new.txt",
                                       "content": "needle_one written\n"})
        assert await found(srv, "needle_one") == {"src/a.py", "secret.txt", "new.txt"}
        config(write_config, tmp_path, root, ["secret.txt"])
        await call(srv, "reload_config", {})
        assert await found(srv, "needle_one") == {"src/a.py", "new.txt"}
        rows = settle()
        assert "secret.txt" not in rows and {"src/a.py", "new.txt"} <= rows.keys()
        assert await found(srv, "needle_one") == {"src/a.py", "new.txt"}
    for keeper in corpus_trigram._keepers.values():
        keeper.stop()
