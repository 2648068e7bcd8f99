"""The error boundary: domain errors verbatim, everything else generic and logged."""

from __future__ import annotations

import logging

import app.tools.admin as admin


async def test_unexpected_exception_is_generic_logged_and_session_survives(
    live, monkeypatch, caplog, tree
) -> None:
    def boom(snapshot):
        raise OSError(2, "No such file or directory", str(tree / "secret.txt"))

    async with live.session() as s:
        monkeypatch.setattr(admin, "_roots", boom)
        with caplog.at_level(logging.ERROR, logger="loomfs.tools"):
            res = await s.call_tool("list_roots", {})
        assert res.is_error
        text = res.content[0].text
        assert text == "internal error while handling the call (details are in the server log)"
        assert str(tree) not in text
        assert any("tool failed unexpectedly" in r.message for r in caplog.records)
        monkeypatch.undo()
        again = await s.call_tool("list_roots", {})
        assert not again.is_error


async def test_unknown_tool_is_an_error_not_a_crash(live) -> None:
    async with live.session() as s:
        res = await s.call_tool("no_such_tool", {})
        assert res.is_error
        assert "no_such_tool" in res.content[0].text
        ok = await s.call_tool("list_roots", {})
        assert not ok.is_error
