"""The changes view (docs/owner-page.md, "What it shows"): what an agent's changes left in
the trash, newest first and bounded, and one item's diff against the file now at its
path, over real HTTP against a live server whose trash is filled through MCP tools.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest

from app.ui import changes
from tests.live import call
from tests.ui.uikit import Owner, ui_server

TRASH = ".mcp-trash/"
ROW = re.compile(
    r'<tr class="(?P<kind>delete|version)"><td>(?P<when>[^<]*)</td><td>(?P<root>[^<]*)</td>'
    r"<td>(?P<op>[^<]*)</td><td><code>(?P<path>[^<]*)</code></td><td>(?P<client>[^<]*)</td>"
    r'<td>(?P<size>[^<]*)</td><td class="actions">(?P<actions>.*?)</td></tr>', re.S)
DIFF_LINE = re.compile(r'<span class="(add|del|hunk|meta|ctx)">([^<]*)</span>')


@pytest.fixture
def srv(tmp_path: Path):
    with ui_server(tmp_path) as s:
        s.ws = tmp_path / "ws"  # type: ignore[attr-defined]
        yield s


def agent(srv: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """The answers of `calls` (tool, arguments), made in one MCP session; each must work."""
    async def run() -> list[Any]:
        async with srv.session() as s:
            out = []
            for tool, args in calls:
                is_error, answer = await call(s, tool, **args)
                assert not is_error, (tool, answer)
                out.append(answer)
            return out
    return anyio.run(run)


def item_id(answer: dict[str, Any]) -> str:
    """The trash ID in a write's (`kept_version`) or a delete's (`trashed_to`) answer."""
    where = answer.get("kept_version") or answer["trashed_to"]
    assert where.startswith(TRASH), answer
    return str(where[len(TRASH):])


def rows(page: str) -> list[dict[str, str]]:
    return [{k: html.unescape(v) for k, v in m.groupdict().items()} for m in ROW.finditer(page)]


def diff_lines(page: str) -> list[tuple[str, str]]:
    return [(k, html.unescape(t)) for k, t in DIFF_LINE.findall(page)]


def detail(owner: Owner, item: str, root: str = "ws") -> Any:
    return owner.get(f"/ui/changes/{quote(root, safe='')}", params={"id": item})


def write(path: str, content: str, overwrite: bool = False,
          root: str | None = None) -> tuple[str, dict[str, Any]]:
    where = {} if root is None else {"root": root}
    return "write_file", {"path": path, "content": content, "overwrite": overwrite, **where}


def test_an_overwrite_an_edit_and_a_delete_through_mcp_are_rows_with_their_op_and_client(
    srv: Any,
) -> None:
    agent(srv, write("w.txt", "one\n"), write("w.txt", "two\n", True),
          write("e.txt", "alpha beta\n"),
          ("edit_file", {"path": "e.txt", "edits": [{"old_text": "beta", "new_text": "gamma"}]}),
          write("d/gone.txt", "bye\n"), ("delete", {"path": "d/gone.txt"}),
          write("folder/inside.txt", "x\n"), ("delete", {"path": "folder"}))
    page = Owner(srv).get("/ui/changes")
    assert page.status_code == 200
    assert 'aria-current="page">Changes' in page.text
    got = rows(page.text)
    seen = [(r["kind"], r["op"], r["path"]) for r in got]
    assert seen == [("delete", "delete", "folder"), ("delete", "delete", "d/gone.txt"),
                    ("version", "edit", "e.txt"), ("version", "write", "w.txt")]
    for r in got:
        assert r["root"] == "ws"
        assert re.fullmatch(r"127\.0\.0\.1:\d+", r["client"]), r  # the agent, as audited
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", r["when"]), r
        assert 'action="/ui/restore"' in r["actions"] and "restore</button>" in r["actions"]
    sizes = {r["path"]: r["size"] for r in got}
    assert sizes["w.txt"] == "4 bytes" and sizes["e.txt"] == "11 bytes"
    # A diff for versions and deleted regular files; a deleted folder has none.
    diffs = {r["path"]: ">diff</a>" in r["actions"] for r in got}
    assert diffs == {"folder": False, "d/gone.txt": True, "e.txt": True, "w.txt": True}
    assert "the newest 4 of 4 items" in page.text


def test_the_diff_shows_the_removed_and_added_lines_escaped(srv: Any) -> None:
    old = "keep me\n<script>alert('old')</script>\nlast\n"
    new = "keep me\n<img src=x onerror=\"alert('new')\">\nlast\n"
    answers = agent(srv, write("h<i>.html", old), write("h<i>.html", new, True))
    r = detail(Owner(srv), item_id(answers[1]))
    assert r.status_code == 200, r.text
    assert "<script>alert" not in r.text and "<img src=x" not in r.text
    assert "&lt;script&gt;alert(&#39;old&#39;)&lt;/script&gt;" in r.text
    lines = diff_lines(r.text)
    assert ("del", "-<script>alert('old')</script>") in lines
    assert ("add", "+<img src=x onerror=\"alert('new')\">") in lines
    assert ("ctx", " keep me") in lines and lines[0][0] == "meta"
    assert '<pre class="diff">' in r.text and "style=" not in r.text
    assert "<code>h&lt;i&gt;.html</code>" in r.text  # the path, escaped
    assert "write" in r.text and 'name="id" value="' in r.text


BIG = 300 << 10  # past MAX_SIDE (256 KiB)


def _binary_now(ws: Path) -> None:
    (ws / "f.txt").write_bytes(b"now\0binary\n")


def _not_utf8_now(ws: Path) -> None:
    (ws / "f.txt").write_bytes(b"caf\xe9\n")


def _large_now(ws: Path) -> None:
    (ws / "f.txt").write_bytes(b"x" * BIG)


def _many_lines_now(ws: Path) -> None:
    (ws / "f.txt").write_text("line\n" * (changes.MAX_SIDE_LINES + 1))


def _gone(ws: Path) -> None:
    (ws / "f.txt").unlink()


def _folder_now(ws: Path) -> None:
    (ws / "f.txt").unlink()
    (ws / "f.txt").mkdir()


def _same(ws: Path) -> None:
    (ws / "f.txt").write_text("kept\n")


SECRET = "a secret outside the root"


def _link_out_now(ws: Path) -> None:
    (ws.parent / "outside.txt").write_text(SECRET)
    (ws / "f.txt").unlink()
    (ws / "f.txt").symlink_to(ws.parent / "outside.txt")


def _link_to_denied_now(ws: Path) -> None:
    (ws / ".env").write_text(SECRET)
    (ws / "f.txt").unlink()
    (ws / "f.txt").symlink_to(".env")


@pytest.mark.parametrize("before, after, says, lines", [
    # the current file past a bound, or not text
    (b"kept\n", _binary_now, "The current file is binary (it holds a NUL byte)", False),
    (b"kept\n", _not_utf8_now, "The current file is binary (not UTF-8 text)", False),
    (b"kept\n", _large_now, "The current file is too large to compare", False),
    (b"kept\n", _many_lines_now, "The current file is too large to compare (5001 lines", False),
    (b"kept\n", _folder_now, "cannot be compared: not a regular file", False),
    # the path leads now where the root does not go: refused as a tool is, nothing read
    (b"kept\n", _link_out_now, "The file at its path cannot be compared", False),
    (b"kept\n", _link_to_denied_now, "The file at its path cannot be compared", False),
    # the kept version past a bound, or not text
    (b"old\0binary\n", None, "The kept version is binary (it holds a NUL byte)", False),
    (b"\xff\xfe\n", None, "The kept version is binary (not UTF-8 text)", False),
    (b"y" * BIG, None, "The kept version is too large to compare (300.0 KiB", False),
    # gone: against nothing; the same: no line
    (b"kept\n", _gone, "The file is gone from its path: the diff is against nothing", True),
    (b"kept\n", _same, "The kept version and the current file are the same", False),
])
def test_a_diff_says_why_it_shows_no_text_or_against_what(srv: Any, before: bytes, after: Any,
                                                          says: str, lines: bool) -> None:
    ws = srv.ws
    (ws / "f.txt").write_bytes(before)
    answers = agent(srv, write("f.txt", "the agent's\n", True))
    if after is not None:
        after(ws)
    r = detail(Owner(srv), item_id(answers[0]))
    assert r.status_code == 200, r.text
    assert html.escape(says, quote=True) in r.text, r.text
    assert SECRET not in r.text and str(ws) not in r.text
    shown = diff_lines(r.text)
    assert bool(shown) == lines
    if lines:
        assert [k for k, _ in shown] == ["meta", "meta", "hunk", "del"]


def test_a_deleted_file_is_diffed_against_nothing(srv: Any) -> None:
    answers = agent(srv, write("bye.txt", "first\nsecond\n"), ("delete", {"path": "bye.txt"}))
    r = detail(Owner(srv), item_id(answers[1]))
    assert r.status_code == 200
    assert "Deleted: <code>bye.txt</code>" in r.text and "<td>delete</td>" in r.text
    assert "The file is gone from its path" in r.text
    assert [x for x in diff_lines(r.text) if x[0] in ("add", "del")] == [
        ("del", "-first"), ("del", "-second")]


def test_looking_at_a_diff_writes_no_audit_line(srv: Any) -> None:
    answers = agent(srv, write("seen.txt", "1\n"), write("seen.txt", "2\n", True))
    audit = Path(srv.registry.current.config.audit_log)
    before = audit.read_text()
    owner = Owner(srv)
    assert detail(owner, item_id(answers[1])).status_code == 200
    assert owner.get("/ui/changes").status_code == 200
    after = audit.read_text()[len(before):]
    assert "seen.txt" not in after and "owner_view" not in after, after


def test_a_long_diff_shows_its_first_lines_and_says_so(srv: Any, monkeypatch) -> None:
    monkeypatch.setattr(changes, "MAX_LINES", 10)
    old = "".join(f"old {i}\n" for i in range(20))
    answers = agent(srv, write("long.txt", old), write("long.txt", "new\n", True))
    r = detail(Owner(srv), item_id(answers[1]))
    assert len(diff_lines(r.text)) == 10
    assert "The first 10 of 24 lines of the diff are shown." in r.text


def test_the_listing_reads_the_newest_items_of_a_trash_only_and_says_so(
    srv: Any, monkeypatch
) -> None:
    monkeypatch.setattr(changes, "PER_ROOT", 3)
    made = [write(f"n{i}.txt", "x\n") for i in range(5)]
    agent(srv, *made, *(("delete", {"path": f"n{i}.txt"}) for i in range(5)))
    page = Owner(srv).get("/ui/changes").text
    assert "the newest 3 of 5 items (at most 3 read of each root" in page
    assert [r["path"] for r in rows(page)] == ["n4.txt", "n3.txt", "n2.txt"]


def test_the_shipped_bound_reads_200_records_of_a_trash_of_250(srv: Any) -> None:
    """`PER_ROOT` as shipped: of 250 items (made on disk as the server makes them), the
    page lists the newest 200, reads those records only, and says so."""
    from app.fs.change import inventory

    trash = srv.ws / ".mcp-trash"
    trash.mkdir(mode=0o700)
    for n in range(250):
        stamp = trash / f"20261201T{n // 60:02d}{n % 60:02d}00Z"
        stamp.mkdir()
        (stamp / f"f{n}.txt").write_text(f"{n}\n")
        (stamp / ".mcp-trash").write_text(json.dumps(
            {"kind": "delete", "path": f"f{n}.txt", "name": f"f{n}.txt", "op": "delete",
             "client": "hand-made"}) + "\n")
    owner = Owner(srv)
    before = inventory.WORK["records"]
    page = owner.get("/ui/changes").text
    assert inventory.WORK["records"] - before == changes.PER_ROOT == 200
    assert "the newest 200 of 250 items (at most 200 read of each root" in page
    listed = [r["path"] for r in rows(page)]
    assert listed[0] == "f249.txt" and listed[-1] == "f50.txt" and len(listed) == 200


@pytest.fixture
def two_roots(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    with ui_server(tmp_path, roots=(("docs", docs, "workspace"),)) as s:
        yield s


def test_the_filters_keep_a_root_or_an_operation(two_roots: Any) -> None:
    agent(two_roots, write("a.txt", "1\n", root="ws"), write("a.txt", "2\n", True, root="ws"),
          ("delete", {"path": "a.txt", "root": "ws"}),
          write("b.txt", "1\n", root="docs"), write("b.txt", "2\n", True, root="docs"))
    owner = Owner(two_roots)
    every = rows(owner.get("/ui/changes").text)
    assert {(r["root"], r["op"]) for r in every} == {("ws", "write"), ("ws", "delete"),
                                                      ("docs", "write")}
    by_root = rows(owner.get("/ui/changes", params={"root": "docs"}).text)
    assert [(r["root"], r["path"]) for r in by_root] == [("docs", "b.txt")]
    by_op = owner.get("/ui/changes", params={"op": "delete"}).text
    assert [(r["root"], r["op"]) for r in rows(by_op)] == [("ws", "delete")]
    assert "of them, 1 by delete" in by_op
    assert rows(owner.get("/ui/changes", params={"op": "<script>"}).text) == []


def test_a_trash_that_is_a_link_is_not_read_and_the_page_says_so(two_roots: Any,
                                                                tmp_path: Path) -> None:
    agent(two_roots, write("a.txt", "1\n", root="ws"), write("a.txt", "2\n", True, root="ws"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "docs" / ".mcp-trash").symlink_to(tmp_path / "elsewhere")
    page = Owner(two_roots).get("/ui/changes")
    assert page.status_code == 200
    assert "&#39;.mcp-trash&#39; in root &#39;docs&#39; is not a plain folder" in page.text
    assert [(r["root"], r["path"]) for r in rows(page.text)] == [("ws", "a.txt")]
    assert str(tmp_path) not in page.text


@pytest.mark.parametrize("root, item", [
    # no such root
    ("nowhere", "20261204T000000Z/a.txt"),
    ("<script>", "20261204T000000Z/a.txt"),
    # well formed, but no such item
    ("ws", "20261204T000000Z/a.txt"),
    ("ws", "20261204T000000Z-7/a.txt"),
    # `..` and other ways out of a stamp folder
    ("ws", "../../etc/passwd"),
    ("ws", "20261204T000000Z/.."),
    ("ws", "20261204T000000Z/../a.txt"),
    ("ws", "../20261204T000000Z/a.txt"),
    ("ws", "20261204T000000Z/./a.txt"),
    ("ws", "/20261204T000000Z/a.txt"),
    # malformed
    ("ws", ""),
    ("ws", "a.txt"),
    ("ws", "20261204T000000Z"),
    ("ws", "20261204T000000Z/"),
    ("ws", "not-a-stamp/a.txt"),
    ("ws", "20261204T000000Z/a\0b"),
    ("ws", "20261204T000000Z/" + "a" * 600),
])
def test_an_unknown_root_or_item_is_a_not_found_notice(srv: Any, root: str, item: str) -> None:
    agent(srv, write("a.txt", "1\n"), write("a.txt", "2\n", True))
    r = detail(Owner(srv), item, root)
    assert r.status_code == 404, r.text
    assert "No such change" in r.text and "<pre" not in r.text
    assert str(srv.ws) not in r.text  # no host path


def test_the_real_item_of_that_trash_is_found(srv: Any) -> None:
    # The 404 table above is about the IDs, not a broken view: the real ID answers 200.
    answers = agent(srv, write("a.txt", "1\n"), write("a.txt", "2\n", True))
    assert detail(Owner(srv), item_id(answers[1])).status_code == 200


@pytest.mark.parametrize("path", ["/ui/changes", "/ui/changes/ws?id=20261204T000000Z/a.txt"])
def test_without_a_session_the_view_asks_for_a_login(srv: Any, path: str) -> None:
    import httpx

    r = httpx.get(srv.base + path, timeout=30)
    assert r.status_code == 401
    assert "loom-fs-mcp --ui-link" in r.text and "<table" not in r.text


FIELD = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')


def restore_form(page: str, path: str) -> dict[str, str]:
    """The fields of the restore form in the newest row of `path`."""
    row = next(r for r in rows(page) if r["path"] == path)
    return {k: html.unescape(v) for k, v in FIELD.findall(row["actions"])}


def test_a_restore_posted_from_the_page_puts_the_version_back_and_lists_what_it_replaced(
    srv: Any,
) -> None:
    agent(srv, write("r.txt", "old\n"), write("r.txt", "new <b>\n", True))
    owner = Owner(srv)
    fields = restore_form(owner.get("/ui/changes").text, "r.txt")
    assert fields["root"] == "ws" and fields["back"] == "changes"
    done = owner.post("/ui/restore", fields, csrf=fields.pop("csrf"))
    assert done.status_code == 200, done.text
    assert (srv.ws / "r.txt").read_text() == "old\n"
    page = owner.get("/ui/changes").text
    got = [(r["op"], r["path"], r["client"]) for r in rows(page)]
    assert got == [("restore", "r.txt", "owner")]  # the write's version went back
    href = re.search(r'href="(/ui/changes/ws\?id=[^"]+)"', page)
    assert href is not None
    lines = diff_lines(owner.get(html.unescape(href.group(1))).text)
    assert ("del", "-new <b>") in lines and ("add", "+old") in lines


def test_a_deleted_file_is_not_restored_over_one_made_since(srv: Any) -> None:
    agent(srv, write("d.txt", "deleted\n"), ("delete", {"path": "d.txt"}),
          write("d.txt", "made since\n"))
    owner = Owner(srv)
    fields = restore_form(owner.get("/ui/changes").text, "d.txt")
    refused = owner.post("/ui/restore", fields, csrf=fields.pop("csrf"))
    assert refused.status_code == 409, refused.text
    assert (srv.ws / "d.txt").read_text() == "made since\n"
    assert [r["op"] for r in rows(owner.get("/ui/changes").text)] == ["delete"]


# Shapes that make difflib slow, at the bound: every other line changed, and a cycle of
# 199 lines against its permutation (each took 19 s and 39 s at 20,000 lines a side).
WORST = {
    "alternating": ("x{i}", "{p}{i}"),
    "cycle": ("x{c}", "x{c7}"),
}


@pytest.mark.parametrize("shape", sorted(WORST))
def test_the_worst_diff_shapes_at_the_bound_stay_within_a_cpu_limit(shape: str) -> None:
    """`changes.diff`'s compare on two sides of `MAX_SIDE_LINES` lines, in a child whose
    CPU time is capped (RLIMIT_CPU 15 s): it finishes, and under the cap."""
    import subprocess
    import sys

    code = f"""
import resource, time, difflib
resource.setrlimit(resource.RLIMIT_CPU, (15, 15))
from app.ui.changes import MAX_SIDE_LINES as n
old, new = {WORST[shape]!r}
a = [old.format(i=i, c=i % 199, c7=i % 199, p="x") for i in range(n)]
b = [new.format(i=i, c=i % 199, c7=(i * 7) % 199, p="x" if i % 2 else "y") for i in range(n)]
sum(1 for _ in difflib.unified_diff(a, b, lineterm=""))
print(time.process_time())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr  # SIGXCPU past the cap
    assert float(done.stdout) < 15
