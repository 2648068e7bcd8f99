"""The trash view (docs/owner-page.md, "What it shows"): what each root's trash takes on
disk against its caps, its newest items, and emptying older than N days behind a dry run,
over real HTTP against the live server.

Items come from MCP calls (an overwrite and an edit keep versions, a delete moves the
entry) or are made cheaply on disk as the server lays them out (`app.fs.change.trash`: a
stamp folder, its record, the item under its last name), so a test can date them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from pathlib import Path

import anyio
import pytest

from app.fs.change import inventory
from app.fs.change.layout import GENERATION, RECORD, STAMP, TRASH, stamp_key
from app.ui.trash import MAX_DAYS, SHOWN
from tests.live import call
from tests.ui.uikit import Owner, ui_server

OLD = ("20200101T000000Z", "20200102T000000Z", "20200102T000000Z-1")


@pytest.fixture
def srv(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    with ui_server(tmp_path, roots=(("docs", docs, "reference"),)) as s:
        s.ws = tmp_path / "ws"  # type: ignore[attr-defined]
        yield s


def agent_changes(srv) -> None:
    """Two versions (an overwrite, an edit) and two deletes (a file, a folder)."""
    async def agent() -> None:
        async with srv.session() as s:
            for args in ({"path": "a.txt", "content": "one\n"},
                         {"path": "a.txt", "content": "two\n", "overwrite": True},
                         {"path": "dir/b.txt", "content": "bee\n" * 100},
                         {"path": "c.txt", "content": "sea\n"}):
                is_error, answer = await call(s, "write_file", root="ws", **args)
                assert not is_error, answer
            is_error, answer = await call(s, "edit_file", root="ws", path="a.txt",
                                          edits=[{"old_text": "two", "new_text": "three"}])
            assert not is_error, answer
            for path in ("c.txt", "dir"):
                is_error, answer = await call(s, "delete", root="ws", path=path)
                assert not is_error, answer

    anyio.run(agent)


def make_item(trash: Path, name: str, path: str, kind: str = "delete",
              content: bytes = b"old content\n") -> None:
    """A stamp folder as the server makes one: its record and the item under its name."""
    trash.mkdir(mode=0o700, exist_ok=True)
    (trash / name).mkdir(mode=0o700)
    record = {"kind": kind, "path": path, "name": path.rsplit("/", 1)[-1],
              "op": "delete" if kind == "delete" else "write_file", "client": "hand-made"}
    (trash / name / RECORD).write_text(json.dumps(record) + "\n")
    (trash / name / path.rsplit("/", 1)[-1]).write_bytes(content)


def on_disk(path: Path) -> int:
    """What `path` takes on disk by our own walk (a folder at least one block)."""
    total = 0
    for where, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            st = os.lstat(os.path.join(where, name))
            blocks = st.st_blocks * 512
            total += max(blocks, st.st_blksize) if stat.S_ISDIR(st.st_mode) else blocks
    st = os.lstat(path)
    return total + max(st.st_blocks * 512, st.st_blksize)


def stamp_names(trash: Path) -> list[str]:
    return sorted(n for n in os.listdir(trash) if STAMP.match(n) and (trash / n).is_dir())


def split_of(part: str, trash: Path) -> tuple[int, int]:
    """The page's versions and deletes apart, checked against the records and the disk:
    (versions, deletes)."""
    names = stamp_names(trash)
    kinds = [json.loads((trash / n / RECORD).read_text())["kind"] for n in names]
    split = re.search(r'data-versions="(\d+)" data-versions-disk="(\d+)" '
                      r'data-deletes="(\d+)" data-deletes-disk="(\d+)"', part)
    assert split, part
    versions = [n for n, k in zip(names, kinds, strict=True) if k == "version"]
    deletes = [n for n, k in zip(names, kinds, strict=True) if k == "delete"]
    assert [int(g) for g in split.groups()] == [
        len(versions), sum(on_disk(trash / n) for n in versions),
        len(deletes), sum(on_disk(trash / n) for n in deletes)]
    return len(versions), len(deletes)


def section(page: str, root: str) -> str:
    """The part of the page about `root`."""
    found = re.search(rf"<h2>Root {root}</h2>(.*?)</section>", page, re.S)
    assert found, page
    return found.group(1)


def gauge(part: str, label: str) -> tuple[int, int]:
    found = re.search(rf"<th>{label}</th>.*?data-value=\"(\d+)\" data-cap=\"(\d+)\"", part)
    assert found, part
    return int(found.group(1)), int(found.group(2))


def test_the_page_needs_the_owners_login(srv) -> None:
    import httpx

    with httpx.Client(base_url=srv.base) as anyone:
        assert anyone.get("/ui/trash").status_code == 401
        r = anyone.post("/ui/trash/empty", data={"root": "ws", "days": "0", "confirm": "yes"},
                        headers={"Origin": srv.base})
        assert r.status_code == 401
        assert anyone.get("/ui/trash", headers=srv.headers()).status_code == 401  # MCP token


def test_a_root_without_a_trash_says_so_and_the_nav_marks_the_view(srv) -> None:
    page = Owner(srv).get("/ui/trash")
    assert page.status_code == 200
    assert 'aria-current="page">Trash' in page.text
    for root in ("ws", "docs"):
        assert "No trash: nothing was deleted or replaced" in section(page.text, root)


def test_sizes_and_counts_match_what_is_on_disk(srv) -> None:
    agent_changes(srv)
    trash = srv.ws / TRASH
    page = Owner(srv).get("/ui/trash").text
    part = section(page, "ws")
    recovery = srv.registry.current.roots["ws"].recovery
    assert gauge(part, "On disk") == (on_disk(trash), recovery.trash_max_bytes)
    names = stamp_names(trash)
    assert gauge(part, "Items") == (len(names), recovery.trash_max_items)
    assert f"The newest {len(names)} of {len(names)} items" in part
    # The split, from the server's account (current: every change went through it).
    assert split_of(part, trash) == (2, 2)
    # Each item: kind, operation, path, client, size, and its restore form.
    rows = re.findall(r'<tr data-id="([^"]+)"><td>[^<]+</td><td>(\w+)</td><td>(\w+)</td>'
                      r'<td><code>([^<]+)</code></td><td>([^<]+)</td><td data-bytes="(\d+)"',
                      part)
    assert sorted((kind, op, path) for _, kind, op, path, _, _ in rows) == [
        ("delete", "delete", "c.txt"), ("delete", "delete", "dir"),
        ("version", "edit", "a.txt"), ("version", "write", "a.txt")]
    assert {int(size) for _, _, _, path, _, size in rows if path == "dir"} == {400}
    order = [stamp_key(r[0].split("/")[0]) or ("", 0) for r in rows]
    assert order == sorted(order, reverse=True)  # newest first
    assert part.count('action="/ui/restore"') == 4
    assert part.count('name="back" value="trash"') == 4


def test_a_trash_changed_by_another_process_shows_its_disk_without_the_split(srv) -> None:
    agent_changes(srv)
    trash = srv.ws / TRASH
    make_item(trash, OLD[0], "by-hand.txt")
    (trash / GENERATION).write_text("999\n")  # what another writer's bump looks like
    part = section(Owner(srv).get("/ui/trash").text, "ws")
    assert gauge(part, "On disk")[0] == on_disk(trash)
    assert gauge(part, "Items")[0] == len(stamp_names(trash)) == 5
    assert "data-versions=" not in part and "Versions and deletes apart: not known" in part


def test_what_trimming_dropped_is_shown(srv) -> None:
    agent_changes(srv)
    (srv.ws / TRASH / "dropped.json").write_text(
        '{"versions": 7, "bytes": 28672, "last": "2026-12-04T10:00:00Z"}\n')
    part = section(Owner(srv).get("/ui/trash").text, "ws")
    assert "7 older version(s), 28.0 KiB on disk, were removed" in part
    assert "2026-12-04T10:00:00Z" in part


def test_the_listing_is_bounded_and_reads_only_the_newest_records(srv) -> None:
    trash = srv.ws / TRASH
    count = SHOWN * 10
    names = [f"20261201T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}Z" for i in range(count)]
    for i, name in enumerate(names):
        make_item(trash, name, f"f{i:04d}.txt")
    owner = Owner(srv)
    inventory.WORK.clear()
    part = section(owner.get("/ui/trash").text, "ws")
    assert inventory.WORK["records"] <= SHOWN
    assert f"The newest {SHOWN} of {count} items" in part
    assert gauge(part, "Items")[0] == count
    assert gauge(part, "On disk")[0] == on_disk(trash)
    assert part.count("<tr data-id=") == SHOWN
    assert f"f{count - 1:04d}.txt" in part and f"f{count - SHOWN:04d}.txt" in part
    assert f"f{count - SHOWN - 1:04d}.txt" not in part


def empty(owner: Owner, days: str, confirm: bool = False, root: str = "ws", **kw):
    data = {"root": root, "days": days, **({"confirm": "yes"} if confirm else {})}
    return owner.post("/ui/trash/empty", data, **kw)


def test_the_dry_run_lists_what_would_go_and_removes_nothing(srv) -> None:
    agent_changes(srv)
    trash = srv.ws / TRASH
    for name in OLD:
        make_item(trash, name, f"old-{name}.txt", content=b"x" * 1000)
    before = stamp_names(trash)
    r = empty(Owner(srv), "30")
    assert r.status_code == 200
    assert 'data-count="3" data-bytes="3000"' in r.text
    assert "2020-01-01 00:00:00 UTC to 2020-01-02 00:00:00 UTC" in r.text
    assert "4 newer kept" in r.text
    assert 'name="confirm" value="yes"' in r.text and 'name="days" value="30"' in r.text
    assert stamp_names(trash) == before


def test_confirming_removes_only_the_old_stamps_and_is_audited(srv) -> None:
    agent_changes(srv)
    trash = srv.ws / TRASH
    young = stamp_names(trash)
    for name in OLD:
        make_item(trash, name, f"old-{name}.txt")
    generation = (trash / GENERATION).read_text()
    r = empty(Owner(srv), "30", confirm=True)
    assert r.status_code == 200, r.text
    assert 'data-count="3"' in r.text
    assert stamp_names(trash) == young
    assert (trash / GENERATION).read_text() != generation  # the account lists again
    audit = Path(srv.registry.current.config.audit_log).read_text()
    assert re.search(r"ALLOW root=ws path=\.mcp-trash op=owner_empty_trash client=owner",
                     audit), audit
    part = section(Owner(srv).get("/ui/trash").text, "ws")
    assert gauge(part, "Items")[0] == len(young)
    assert gauge(part, "On disk")[0] == on_disk(trash)
    # The server's account took the removed stamps out: still current, the split known,
    # and the agent's next change lists nothing.
    assert split_of(part, trash) == (2, 2)
    inventory.WORK.clear()
    is_error, answer = anyio.run(functools.partial(call, srv, "delete", root="ws",
                                                   path="a.txt"))
    assert not is_error, answer
    assert inventory.WORK["records"] == 0
    part = section(Owner(srv).get("/ui/trash").text, "ws")
    assert split_of(part, trash) == (2, 3)


@pytest.mark.parametrize("kw, status", [
    ({"csrf": ""}, 403),  # no CSRF token
    ({"csrf": "not-the-token"}, 403),
    ({"origin": "http://evil.example"}, 403),  # another origin
    ({"origin": None}, 403),  # no Origin at all
])
def test_a_forged_empty_is_refused_and_removes_nothing(srv, kw, status) -> None:
    trash = srv.ws / TRASH
    for name in OLD:
        make_item(trash, name, f"old-{name}.txt")
    r = empty(Owner(srv), "0", confirm=True, **kw)
    assert r.status_code == status
    assert stamp_names(trash) == sorted(OLD)


@pytest.mark.parametrize("days", [
    # not a whole number
    "", " ", "abc", "1.5", "1e3", "0x10", "½", "٣",
    # negative
    "-1", "-0",
    # huge: past ten years, or past what a date can hold
    str(MAX_DAYS + 1), "99999", "999999999999", "1" * 400,
])
def test_bad_days_are_refused_with_400_and_remove_nothing(srv, days) -> None:
    trash = srv.ws / TRASH
    for name in OLD:
        make_item(trash, name, f"old-{name}.txt")
    r = empty(Owner(srv), days, confirm=True)
    assert r.status_code == 400, r.text
    assert "Nothing was changed." in r.text
    assert stamp_names(trash) == sorted(OLD)
    audit = Path(srv.registry.current.config.audit_log).read_text()
    assert "DENY root=ws path=.mcp-trash op=owner_empty_trash rule=bad_days" in audit


@pytest.mark.parametrize("root, status", [
    ("nowhere", 404),  # no such root
    ("docs", 404),  # a root with no trash
])
def test_emptying_a_root_that_cannot_be_emptied_is_refused(srv, root, status) -> None:
    r = empty(Owner(srv), "0", confirm=True, root=root)
    assert r.status_code == status
    assert "Nothing was changed." in r.text


def test_the_measure_of_a_huge_trash_stops_at_its_bound_and_says_at_least(
        srv, monkeypatch) -> None:
    from app.ui import trash as view

    trash = srv.ws / TRASH
    make_item(trash, OLD[0], "big")
    (trash / OLD[0] / "big").unlink()
    (trash / OLD[0] / "big").mkdir()
    for i in range(50):
        (trash / OLD[0] / "big" / f"{i}.txt").write_text("x")
    monkeypatch.setattr(view, "MAX_WALKED", 20)
    part = section(Owner(srv).get("/ui/trash").text, "ws")
    shown, _ = gauge(part, "On disk")
    assert 0 < shown < on_disk(trash)
    assert "at least" in part and "The measure stopped after 20 entries" in part


def test_a_trash_that_is_a_link_is_neither_read_nor_emptied(srv, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    make_item(elsewhere, OLD[0], "outside.txt")
    (srv.ws / TRASH).symlink_to(elsewhere)
    owner = Owner(srv)
    part = section(owner.get("/ui/trash").text, "ws")
    assert "the trash is not a plain folder" in part and "outside.txt" not in part
    r = empty(owner, "0", confirm=True)
    assert r.status_code == 409
    assert stamp_names(elsewhere) == [OLD[0]]


def restore_forms(part: str) -> dict[str, dict[str, str]]:
    """Each restore form of a root's part of the page, by the item's path and kind."""
    forms: dict[str, dict[str, str]] = {}
    for row in re.findall(r"<tr data-id=.*?</tr>", part, re.S):
        cells = re.search(r"<td>(delete|version)</td><td>\w+</td><td><code>([^<]+)", row)
        assert cells, row
        kind, path = cells.groups()
        form = re.search(r'<form method="post" action="/ui/restore".*?</form>', row, re.S)
        assert form, row
        fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form.group(0)))
        forms.setdefault(f"{kind} {path}", fields)  # newest first: the first is the newest
    return forms


def test_a_restore_posted_from_the_trash_page_puts_the_content_back_on_disk(srv) -> None:
    agent_changes(srv)
    owner = Owner(srv)
    forms = restore_forms(section(owner.get("/ui/trash").text, "ws"))
    deleted = forms["delete c.txt"]
    assert deleted["back"] == "trash" and deleted["root"] == "ws"
    assert deleted["csrf"] == owner.csrf("/ui/trash")
    r = owner.post("/ui/restore", {k: v for k, v in deleted.items() if k != "csrf"})
    assert r.status_code == 200, r.text
    assert 'href="/ui/trash"' in r.text
    assert (srv.ws / "c.txt").read_text() == "sea\n"
    # The newest version of a.txt is "two" (the edit replaced it): it goes back over
    # "three", which is kept as a version in its turn.
    assert (srv.ws / "a.txt").read_text() == "three\n"
    version = forms["version a.txt"]
    r = owner.post("/ui/restore", {k: v for k, v in version.items() if k != "csrf"})
    assert r.status_code == 200, r.text
    assert (srv.ws / "a.txt").read_text() == "two\n"
    part = section(owner.get("/ui/trash").text, "ws")
    assert "<td>version</td><td>restore</td><td><code>a.txt</code>" in part
    assert "<code>c.txt</code>" not in part
    assert gauge(part, "On disk")[0] == on_disk(srv.ws / TRASH)
    assert split_of(part, srv.ws / TRASH) == (2, 1)  # one version out, one kept; a delete out


def test_a_root_without_write_lists_its_trash_without_restore_forms(srv, tmp_path) -> None:
    make_item(tmp_path / "docs" / TRASH, OLD[0], "kept.txt")
    part = section(Owner(srv).get("/ui/trash").text, "docs")
    assert "<code>kept.txt</code>" in part and "The newest 1 of 1 items" in part
    assert 'action="/ui/restore"' not in part and "not writable" in part


def test_an_empty_that_fails_midway_says_so_and_bumps_the_generation(srv, monkeypatch) -> None:
    from app.fs.change import purge

    trash = srv.ws / TRASH
    for name in OLD:
        make_item(trash, name, f"old-{name}.txt")
    (trash / GENERATION).write_text("5\n")
    real = purge.walk_tree
    calls = []

    def failing(dir_fd, name, remove, into=None):
        calls.append(name)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real(dir_fd, name, remove, into)

    monkeypatch.setattr(purge, "walk_tree", failing)
    r = empty(Owner(srv), "0", confirm=True)
    assert r.status_code == 409
    assert "may have been removed" in r.text and "Nothing was changed" not in r.text
    assert 'href="/ui/trash"' in r.text
    assert stamp_names(trash) == sorted(OLD)[1:]  # the first went, then it stopped
    assert (trash / GENERATION).read_text() == "6\n"
    audit = Path(srv.registry.current.config.audit_log).read_text()
    assert "DENY root=ws path=.mcp-trash op=owner_empty_trash rule=failed:" in audit


def test_with_the_account_current_a_load_walks_only_the_items_it_shows(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """In the serving process the trash's account is current after its own changes: a load
    takes the size from it (the same figure the walk finds) and walks no item but the
    `SHOWN` it lists, whatever the trash holds; once another process bumps the
    generation, the load walks the trash again."""
    from app.fs.change import purge, trash
    from app.fs.change.layout import bump_generation
    from app.security import ops
    from app.ui import trash as view
    from tests.fs.conftest import populated_ws

    disk, root = populated_ws(tmp_path)
    for n in range(SHOWN + 40):
        (disk.ws / f"f{n}.txt").write_text(f"{n}\n")
        trash.delete(root, f"f{n}.txt")
    walked: list[str] = []
    real = purge.walk_tree

    def counted(dir_fd, name, remove, into=None):
        walked.append(name)
        return real(dir_fd, name, remove, into)

    monkeypatch.setattr(purge, "walk_tree", counted)
    monkeypatch.setattr(inventory, "walk_tree", counted)
    monkeypatch.setattr(view, "walk_tree", counted)
    current = view.usage(root)
    assert current.split is not None and current.whole
    assert len(walked) <= SHOWN  # the items listed, none of the other 40
    assert current.disk == on_disk(disk.ws / TRASH)
    top = ops.open_root(str(disk.ws))
    fd = ops.open_dir(top, TRASH)
    os.close(top)
    try:
        bump_generation(fd)  # as another process does
    finally:
        os.close(fd)
    walked.clear()
    stale = view.usage(root)
    assert stale.split is None and len(walked) > SHOWN + 40  # every stamp folder walked
    assert stale.disk == current.disk
