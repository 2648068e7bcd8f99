"""The activity view (docs/owner-page.md, "What it shows"): the audit log's newest lines as
a filtered timeline, its chart, and the polling after a cursor, over real HTTP.

Lines come from MCP calls through the SDK client, or are written by the audit log's own
writer (`app.audit.AuditLog`) into `ui-audit.log`, the second log the view reads, so a
test controls exactly what is there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import httpx
import pytest

from app import hostfiles
from app.audit import AuditLog, current_client, current_grant
from app.ui import activity
from app.ui.activity import LINE_CAP, MAX_ROWS, WINDOW_BYTES, load, parse, read_window
from app.ui.context import ui_audit_path
from tests.ui.uikit import Owner, ui_server

HIDDEN = "\u202e"


@pytest.fixture
def srv(tmp_path: Path):
    with ui_server(tmp_path) as s:
        yield s


def audit_of(srv) -> str:
    return str(srv.registry.current.config.audit_log)


def owner_lines(srv) -> str:
    """The second log the view reads (a `--ui` process's), empty at first."""
    return ui_audit_path(audit_of(srv))


def write(path: str, lines: list[tuple[str, str, str, str, str | None, str]]) -> None:
    """Audit lines (decision, root, path, op, rule, client) by the audit log's writer."""
    log = AuditLog(path, 1 << 30, 1)
    try:
        for decision, root, rel, op, rule, client in lines:
            peer, grant = current_client.set(client), current_grant.set(None)
            try:
                log(decision, root, rel, op, rule)
            finally:
                current_client.reset(peer)
                current_grant.reset(grant)
    finally:
        log.close()


def rows(owner: Owner, after: str = "~0", **filters: str) -> dict:
    r = owner.get("/ui/activity/rows", params={"after": after, **filters})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def test_mcp_calls_appear_in_the_page_and_in_the_rows(srv) -> None:
    async def agent() -> tuple[bool, bool]:
        async with srv.session() as s:
            wrote = await s.call_tool("write_file", {"path": "notes.txt", "content": "hi"})
            denied = await s.call_tool("read_text_file", {"path": ".env"})
            return bool(wrote.is_error), bool(denied.is_error)

    assert anyio.run(agent) == (False, True)
    owner = Owner(srv)
    page = owner.get("/ui/activity")
    assert page.status_code == 200
    assert 'aria-current="page">Activity' in page.text
    assert "notes.txt" in page.text and "write_file" in page.text
    assert ".env" in page.text and "DENY" in page.text
    got = rows(owner)["rows"]
    wrote = [r for r in got if r["op"] == "write_file" and r["path"] == "notes.txt"]
    denied = [r for r in got if r["path"] == ".env"]
    assert wrote and wrote[-1]["outcome"] == "ALLOW" and wrote[-1]["root"] == "ws"
    assert denied and denied[-1]["outcome"] == "DENY" and denied[-1]["rule"]
    assert got == sorted(got, key=lambda r: r["ts"])  # oldest first, newest last


LINES = [
    ("ALLOW", "ws", "a.txt", "write_file", None, "alice"),
    ("DENY", "ws", ".env", "read_text_file", "secrets", "alice"),
    ("ALLOW", "docs", "b.md", "read_text_file", None, "bob"),
    ("DENY", "docs", "c.key", "write_file", "readonly", "bob"),
]


@pytest.mark.parametrize("filters, shown", [
    ({}, {"a.txt", ".env", "b.md", "c.key"}),
    ({"root": "docs"}, {"b.md", "c.key"}),
    ({"client": "alice"}, {"a.txt", ".env"}),
    ({"op": "write_file"}, {"a.txt", "c.key"}),
    ({"outcome": "DENY"}, {".env", "c.key"}),
    ({"outcome": "ALLOW", "root": "docs"}, {"b.md"}),
    ({"rule": "secrets"}, {".env"}),
    ({"root": "nowhere"}, set()),  # a value not present keeps nothing
    ({"outcome": "MAYBE"}, set()),
    ({"client": "<script>"}, set()),
])
def test_each_filter_keeps_its_rows_in_the_page_and_in_the_rows(srv, filters, shown) -> None:
    write(owner_lines(srv), LINES)
    owner = Owner(srv)
    page = owner.get("/ui/activity", params=filters).text
    mine = {r["path"] for r in rows(owner, **filters)["rows"]} & {line[2] for line in LINES}
    assert mine == shown
    for line in LINES:
        assert (f"<code>{line[2]}</code>" in page) == (line[2] in shown), line
    if filters == {}:  # the selects hold what is in the window
        for value in ("docs", "bob", "secrets", "readonly", "read_text_file"):
            assert f'<option value="{value}">' in page


def test_the_chart_counts_calls_per_minute_allowed_and_denied_apart(srv) -> None:
    write(owner_lines(srv), LINES)
    page = Owner(srv).get("/ui/activity").text
    assert '<svg class="chart"' in page and 'class="denied"' in page
    assert 'class="allowed"' in page and "allowed, " in page
    assert "style=" not in page  # the CSP forbids inline style: attributes and classes
    bars = activity.chart(load([owner_lines(srv)]).rows)
    assert sum(b.allow for b in bars) == 2 and sum(b.deny for b in bars) == 2
    assert max(b.allow_h + b.deny_h for b in bars) == activity.BAR_HEIGHT


def test_the_chart_of_a_long_window_has_at_most_its_bars() -> None:
    rows_ = [parse(f"2026-12-0{d}T{h:02d}:00:00.000Z ALLOW root=ws path=a op=x client=c")
             for d in (1, 2) for h in range(24)]
    bars = activity.chart([r for r in rows_ if r is not None])
    assert 1 < len(bars) <= activity.MAX_BARS
    assert sum(b.allow for b in bars) == 48


def big_log(path: Path, mib: int) -> tuple[str, str]:
    """A log of `mib` MiB of audit lines: its first line's path and its last's."""
    line = "2026-12-03T10:00:00.000Z ALLOW root=ws path=filler-{:08d} op=read_text_file " \
           "client=stdio\n"
    count = (mib << 20) // len(line.format(0)) + 1
    with open(path, "w", encoding="ascii") as f:
        f.write("2026-12-03T09:00:00.000Z ALLOW root=ws path=the-oldest op=x client=c\n")
        for i in range(count):
            f.write(line.format(i))
        f.write("2026-12-03T11:00:00.000Z DENY root=ws path=the-newest op=x client=c\n")
    return "the-oldest", "the-newest"


def test_a_large_log_is_read_as_its_newest_window_only(tmp_path, monkeypatch) -> None:
    log = tmp_path / "audit.log"
    oldest, newest = big_log(log, 21)
    assert log.stat().st_size > 20 << 20
    read: list[bytes] = []
    real = os.read

    def counted(fd: int, n: int) -> bytes:
        read.append(real(fd, n))
        return read[-1]

    monkeypatch.setattr(hostfiles.os, "read", counted)
    window = read_window(str(log))
    assert sum(map(len, read)) <= WINDOW_BYTES
    assert window.bytes_read <= WINDOW_BYTES and not window.whole
    assert len(window.lines) <= MAX_ROWS
    assert newest in window.lines[-1]
    assert all(oldest not in line for line in window.lines)
    assert all(parse(line) is not None for line in window.lines)  # the partial one dropped


def test_the_page_says_its_window_and_shows_the_newest_of_a_large_log(srv) -> None:
    oldest, newest = big_log(Path(owner_lines(srv)), 21)
    owner = Owner(srv)
    page = owner.get("/ui/activity").text
    assert newest in page and oldest not in page
    said = re.search(r"the newest (\d+) lines \(the last (\d+) KiB of the audit log\)", page)
    assert said, page
    lines, kib = int(said.group(1)), int(said.group(2))
    assert MAX_ROWS <= lines <= 2 * MAX_ROWS  # of the two logs, each bounded
    assert WINDOW_BYTES // 1024 <= kib <= 2 * WINDOW_BYTES // 1024
    got = rows(owner)["rows"]
    assert len(got) == activity.POLL_ROWS and newest in [r["path"] for r in got]


HOSTILE = ["<script>window.pwned=1</script>.txt", '"><svg onload=alert(1)>.txt',
           f"report{HIDDEN}txt.exe", "javascript:alert(1)", "a b\tc\nd"]


def test_hostile_names_are_escaped_in_the_page_and_revealed_in_the_rows(srv) -> None:
    write(owner_lines(srv), [("DENY", "ws", name, "read_text_file", f"r{HIDDEN}",
                              f"<img src=x onerror=alert(1)>{HIDDEN}") for name in HOSTILE])
    owner = Owner(srv)
    page = owner.get("/ui/activity").text
    assert "<script>window" not in page and "<svg onload" not in page and "<img src" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;.txt" in page
    assert "&#34;&gt;&lt;svg onload=alert(1)&gt;.txt" in page
    assert HIDDEN not in page and "report⟦U+202E⟧txt.exe" in page
    got = rows(owner, outcome="DENY")["rows"]
    paths = [r["path"] for r in got]
    assert "<script>window.pwned=1</script>.txt" in paths  # JSON, inserted as text
    assert "report⟦U+202E⟧txt.exe" in paths and "a b\tc\nd" in paths
    assert all(HIDDEN not in value for r in got for value in r.values())
    assert {r["client"] for r in got} == {"<img src=x onerror=alert(1)>⟦U+202E⟧"}


def test_lines_that_do_not_parse_are_shown_raw_and_break_nothing(srv) -> None:
    path = owner_lines(srv)
    write(path, [("ALLOW", "ws", "before.txt", "write_file", None, "c")])
    with open(path, "ab") as f:
        f.write(b"not an audit line <b>bold</b>\n")
        f.write(b"2026-12-03T10:00:00.000Z ALLOW root=ws path=half\n")  # no op
        f.write(b"2026-12-03T10:00:00.000Z MAYBE root=ws path=a op=b client=c\n")
        f.write(b"2026-12-03T10:00:00.000Z ALLOW root=ws path=\\xZZ op=b client=c\n")
        f.write(b"2026-12-03T10:00:00.000Z ALLOW root=ws path=\xff\xfe op=b client=c\n")
        f.write(b"2026-12-03T10:00:00.000Z ALLOW root=ws path=a op=b sneaky=1 client=c\n")
        f.write(b"2026-12-03T10:00:00.000Z ALLOW root=ws path=" + b"L" * (3 * LINE_CAP)
                + b" op=b client=c\n")
        f.write(b"\x00\x1b[31m" + "\u202e".encode() + b"\n")
    write(path, [("ALLOW", "ws", "after.txt", "write_file", None, "c")])
    with open(path, "ab") as f:
        f.write(b"2026-12-03T23:59:59.999Z ALLOW root=ws path=still-being-writ")  # no \n yet
    owner = Owner(srv)
    r = owner.get("/ui/activity")
    assert r.status_code == 200
    page = r.text
    assert "before.txt" in page and "after.txt" in page
    assert "not an audit line &lt;b&gt;bold&lt;/b&gt;" in page
    assert "L" * LINE_CAP not in page.replace("\n", "")  # a long line is cut
    assert "⟦U+0000⟧⟦U+001B⟧[31m⟦U+202E⟧" in page
    assert "still-being-writ" not in page  # waits for its line feed
    got = rows(owner)["rows"]
    raws = [r["raw"] for r in got if r["raw"]]
    assert len(raws) == 8
    assert all(len(raw) <= LINE_CAP + 1 for raw in raws)
    kept = rows(owner, outcome="ALLOW")["rows"]
    assert kept and all(not r["raw"] for r in kept)  # a filter keeps no raw line


def test_the_polling_cursor_moves_forward_and_ends(srv) -> None:
    path = owner_lines(srv)
    write(path, LINES)
    owner = Owner(srv)
    page = owner.get("/ui/activity").text
    assert 'data-activity-rows="/ui/activity/rows?"' in page
    first = rows(owner)
    assert {r["path"] for r in first["rows"]} >= {line[2] for line in LINES}
    cursor = first["cursor"]
    assert f'data-cursor="{cursor}"' in page
    again = rows(owner, after=cursor)
    assert again["rows"] == [] and again["cursor"] == cursor  # nothing new: it stays
    write(path, [("ALLOW", "ws", "later.txt", "write_file", None, "c")])
    fresh = rows(owner, after=cursor)
    assert [r["path"] for r in fresh["rows"]][-1:] == ["later.txt"]
    assert fresh["cursor"] > cursor
    assert rows(owner, after=fresh["cursor"])["rows"] == []
    # filtered out, the cursor still moves past what was read
    write(path, [("ALLOW", "ws", "later2.txt", "write_file", None, "c")])
    skipped = rows(owner, after=fresh["cursor"], root="nowhere")
    assert skipped["rows"] == [] and skipped["cursor"] > fresh["cursor"]
    assert rows(owner, after=skipped["cursor"])["rows"] == []


def test_a_poll_that_finds_the_logs_as_they_were_reads_no_byte_of_them(srv, monkeypatch) -> None:
    """Polls cost one `lstat` per log while nothing is written: the Nth reads what the first
    read, none of its window again; a new line is read at the next poll."""
    path = owner_lines(srv)
    write(path, LINES)
    owner = Owner(srv)
    reads: list[str] = []
    real = hostfiles.read_tail

    def counted(p: str, most: int):
        reads.append(p)
        return real(p, most)

    monkeypatch.setattr(activity.hostfiles, "read_tail", counted)
    cursor = rows(owner)["cursor"]
    first = len(reads)
    for _ in range(5):
        assert rows(owner, after=cursor)["rows"] == []
    assert len(reads) == first  # none of the five polls read a log again
    write(path, [("ALLOW", "ws", "polled.txt", "write_file", None, "c")])
    assert [r["path"] for r in rows(owner, after=cursor)["rows"]] == ["polled.txt"]
    assert reads[first:] == [path]  # only the log that changed


@pytest.mark.parametrize("cursor", ["x", "2026-12-03~a", "~-1", "<script>~1", "~" + "9" * 20])
def test_a_cursor_that_is_not_one_is_refused_as_json(srv, cursor) -> None:
    r = Owner(srv).get("/ui/activity/rows", params={"after": cursor})
    assert r.status_code == 400 and "cursor" in r.json()["error"]


@pytest.mark.parametrize("path", ["/ui/activity", "/ui/activity/rows",
                                  "/ui/activity/rows?after=~0"])
def test_without_a_session_the_activity_is_401(srv, path) -> None:
    r = httpx.get(f"{srv.base}{path}")
    assert r.status_code == 401
    if "rows" in path:
        assert r.json() == {"error": "log in to the owner's page first"}
    else:
        assert "--ui-link" in r.text


def test_a_log_that_is_a_link_or_not_a_regular_file_is_not_read(srv, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere.log"
    write(str(elsewhere), [("ALLOW", "ws", "through-a-link", "write_file", None, "c")])
    os.symlink(elsewhere, owner_lines(srv))
    owner = Owner(srv)
    r = owner.get("/ui/activity")
    assert r.status_code == 200 and "through-a-link" not in r.text
    os.unlink(owner_lines(srv))
    os.mkfifo(owner_lines(srv))
    r = owner.get("/ui/activity")  # a FIFO: refused without waiting on it
    assert r.status_code == 200
    assert rows(owner)["rows"] is not None


@pytest.mark.parametrize("name", ["plain.txt", "with space", "back\\slash", "lit\\x20eral",
                                  "tab\there", "é-ü-日本", HIDDEN, "\udcff-lone", "q\"'=x"])
def test_a_field_reads_back_as_the_audit_log_wrote_it(tmp_path, name) -> None:
    log = str(tmp_path / "audit.log")
    write(log, [("ALLOW", "ws", name, "write_file", f"rule {name}", name)])
    (row,) = load([log]).rows
    assert (row.path, row.rule, row.client, row.raw) == (name, f"rule {name}", name, "")
