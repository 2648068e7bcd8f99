"""`POST /ui/restore` on a live server: the agent changes files through MCP, the owner puts
them back by a POST as the page's buttons do. The disk is checked, the restore is
undone the same way, the owner's audit line written; every refused POST (no session,
another Origin, no CSRF token, a wrong root or ID, a delete over a file made since)
changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from app.ui.activity import Row, parse
from tests.live import call
from tests.ui.uikit import Owner, ui_server

TRASH = ".mcp-trash"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory):
    with ui_server(tmp_path_factory.mktemp("restore")) as server:
        yield server


def ws_of(srv) -> Path:
    return Path(srv.registry.current.roots["ws"].real)


def agent(srv, tool: str, **args) -> dict:
    is_error, result = anyio.run(lambda: call(srv, tool, **args))
    assert not is_error, result
    return result


def items(top: Path) -> list[str]:
    base = top / TRASH
    return sorted(f"{s.name}/{n.name}" for s in base.iterdir() if s.is_dir()
                  for n in s.iterdir() if n.name != TRASH) if base.is_dir() else []


def owner_lines(srv) -> list[Row]:
    audit = Path(srv.registry.current.config.audit_log)
    rows = [parse(x) for x in audit.read_text().splitlines() if x.strip()]
    return [x for x in rows if x is not None and x.op == "owner_restore"]


def test_a_version_is_restored_by_post_and_the_restore_undone_the_same_way(srv):
    top = ws_of(srv)
    (top / "plan.md").write_text("the owner's plan\n")
    kept = agent(srv, "write_file", path="plan.md", content="the agent's plan\n",
                 overwrite=True)["kept_version"].split("/", 1)[1]
    owner = Owner(srv)
    r = owner.post("/ui/restore", {"root": "ws", "id": kept, "back": "changes"})
    assert r.status_code == 200, r.text
    assert (top / "plan.md").read_text() == "the owner's plan\n"
    assert "is back" in r.text and 'href="/ui/changes"' in r.text
    replaced = next(i for i in items(top) if i.endswith("/plan.md"))
    assert f"version {replaced}" in r.text
    record = json.loads((top / TRASH / replaced.split("/")[0] / TRASH).read_text())
    assert (record["op"], record["client"]) == ("restore", "owner")
    r = owner.post("/ui/restore", {"root": "ws", "id": replaced, "back": "trash"})
    assert r.status_code == 200 and 'href="/ui/trash"' in r.text
    assert (top / "plan.md").read_text() == "the agent's plan\n"
    lines = [x for x in owner_lines(srv) if x.path == "plan.md"]  # one line per restore
    assert [(x.outcome, x.path, x.client) for x in lines] == [
        ("ALLOW", "plan.md", "owner"), ("ALLOW", "plan.md", "owner")]


def test_a_delete_is_restored_and_never_over_a_file_made_since(srv):
    top = ws_of(srv)
    (top / "gone.txt").write_text("first\n")
    moved = agent(srv, "delete", path="gone.txt")["trashed_to"].split("/", 1)[1]
    (top / "gone.txt").write_text("made since\n")
    owner = Owner(srv)
    r = owner.post("/ui/restore", {"root": "ws", "id": moved})
    assert r.status_code == 409
    assert "never restored over it" in r.text and str(top) not in r.text
    assert (top / "gone.txt").read_text() == "made since\n" and moved in items(top)
    assert owner_lines(srv)[-1].outcome == "DENY"
    (top / "gone.txt").unlink()
    assert owner.post("/ui/restore", {"root": "ws", "id": moved}).status_code == 200
    assert (top / "gone.txt").read_text() == "first\n" and moved not in items(top)


REFUSED = [
    ("no session", None, {}, 401),
    ("another origin", "http://evil.example", {}, 403),
    ("no origin", "none", {}, 403),
    ("no csrf token", "same", {"csrf": ""}, 403),
    ("a wrong csrf token", "same", {"csrf": "x" * 43}, 403),
    ("an unknown root", "same", {"root": "nope"}, 404),
    ("an id that is no item", "same", {"id": "20200101T000000Z/x.txt"}, 409),
    ("an id with ..", "same", {"id": "../../etc/passwd"}, 404),
    ("an id too long", "same", {"id": "2" * 600 + "/x"}, 404),
]


@pytest.mark.parametrize("origin,change,status", [r[1:] for r in REFUSED],
                         ids=[r[0] for r in REFUSED])
def test_a_refused_restore_changes_nothing(srv, origin, change, status):
    top = ws_of(srv)
    (top / "keep.txt").write_text("before\n")
    kept = agent(srv, "write_file", path="keep.txt", content="after\n",
                 overwrite=True)["kept_version"].split("/", 1)[1]
    held = items(top)
    owner = Owner(srv)
    fields = {"root": "ws", "id": kept, **change}
    csrf = fields.pop("csrf", None)
    if origin is None:
        owner.http.cookies.clear()
        r = owner.post("/ui/restore", fields, csrf="x", origin="same")
    else:
        r = owner.post("/ui/restore", fields, csrf=csrf,
                       origin=None if origin == "none" else origin)
    assert r.status_code == status, r.text
    assert (top / "keep.txt").read_text() == "after\n"
    assert items(top) == held
