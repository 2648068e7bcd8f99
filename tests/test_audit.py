"""The audit log: one line per resolution, rotated within its bounds."""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from pathlib import Path

import pytest

from app.audit import AuditLog, current_client
from app.errors import LoomError
from app.security import Root
from tests.kit import secure_root

LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<decision>ALLOW|DENY) "
    r"root=(?P<root>\S+) path=(?P<path>\S+) op=(?P<op>\S+)"
    r"(?: rule=(?P<rule>\S+))? client=(?P<client>\S+)$"
)


@pytest.fixture
def setup(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("A")
    (docs / ".env").write_text("E")
    log = AuditLog(str(tmp_path / "state" / "audit.log"), 1 << 20, 2)
    root = secure_root(docs, name="docs", role="reference", audit=log)
    yield root, log, tmp_path / "state" / "audit.log"
    log.close()


def lines(path: Path) -> list[dict[str, str]]:
    out = []
    for raw in path.read_text().splitlines():
        m = LINE.match(raw)
        assert m, raw
        out.append(m.groupdict())
    return out


def attempt(root: Root, path: str, *, write: bool = False) -> None:
    try:
        if write:
            root.open_parent(path, op="write_file", perm="write").close()
        else:
            root.open_file(path, op="read_text_file").close()
    except LoomError:
        pass


def test_each_resolution_is_one_line_with_root_path_op_rule_and_client(setup) -> None:
    root, _, path = setup
    attempt(root, "a.txt")
    token = current_client.set("127.0.0.1:51000")
    try:
        attempt(root, "sub/../.env")
        attempt(root, "../outside")
        attempt(root, "a.txt", write=True)
        attempt(root, "missing.txt")
    finally:
        current_client.reset(token)
    got = lines(path)
    assert [(g["decision"], g["root"], g["path"], g["op"], g["client"]) for g in got] == [
        ("ALLOW", "docs", "a.txt", "read_text_file", "stdio"),
        ("DENY", "docs", ".env", "read_text_file", "127.0.0.1:51000"),
        ("DENY", "docs", "../outside", "read_text_file", "127.0.0.1:51000"),
        ("DENY", "docs", "a.txt", "write_file", "127.0.0.1:51000"),
        ("DENY", "docs", "missing.txt", "read_text_file", "127.0.0.1:51000"),
    ]
    rules = [g["rule"] for g in got]
    assert rules[0] is None
    assert rules[1] == r"deny:\x20matches\x20deny\x20pattern\x20'.env'"
    assert rules[2] == r"confinement:\x20path\x20escapes\x20the\x20root"
    assert rules[3] == (
        r"permission:\x20root\x20'docs'\x20(role\x20reference)\x20grants\x20[read],\x20not\x20write"
    )
    assert rules[4].startswith("not\\x20found:")


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch):
    """Local time 5h30 ahead of UTC (a POSIX TZ string: no tz database needed)."""
    monkeypatch.setenv("TZ", "LOOM-5:30")
    time.tzset()
    assert time.localtime(0).tm_hour == 5  # local time really is not UTC now
    yield
    monkeypatch.undo()
    time.tzset()


def test_times_are_utc(setup, far_from_utc) -> None:
    root, _, path = setup
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    attempt(root, "a.txt")
    stamp = dt.datetime.strptime(lines(path)[0]["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    stamp = stamp.replace(tzinfo=dt.timezone.utc)
    assert before - dt.timedelta(seconds=1) <= stamp <= before + dt.timedelta(seconds=5)


def test_a_hostile_path_cannot_forge_or_split_a_line(setup) -> None:
    root, _, path = setup
    attempt(root, "x\nALLOW root=docs path=.env op=read client=stdio")
    attempt(root, "a b.txt")
    attempt(root, "é\u202e.txt")
    raw = path.read_text().splitlines()
    assert len(raw) == 3
    got = lines(path)
    assert got[0]["decision"] == "DENY"
    assert "\\n" in got[0]["path"] and got[1]["path"] == "a\\x20b.txt"
    assert raw[2].isascii()


def test_no_host_path_is_written(setup, tmp_path: Path) -> None:
    root, _, path = setup
    for p in ("a.txt", ".env", "../x", "missing"):
        attempt(root, p)
    assert str(tmp_path) not in path.read_text()


def test_rotation_is_bounded_by_max_bytes_and_backups(tmp_path: Path) -> None:
    target = tmp_path / "state" / "audit.log"
    log = AuditLog(str(target), 600, 2)
    try:
        for i in range(200):
            log("ALLOW", "docs", f"file-{i:04d}.txt", "read_text_file", None)
    finally:
        log.close()
    files = sorted(os.listdir(target.parent))
    assert files == ["audit.log", "audit.log.1", "audit.log.2"]
    for name in files:
        assert (target.parent / name).stat().st_size <= 600
    # The newest line is in the live file; the oldest ones were rotated away.
    assert "file-0199.txt" in target.read_text()
    everything = "".join((target.parent / n).read_text() for n in files)
    assert "file-0000.txt" not in everything


def test_reconfigure_moves_the_log_and_closes_the_old_file(tmp_path: Path) -> None:
    first, second = tmp_path / "one" / "audit.log", tmp_path / "two" / "audit.log"
    log = AuditLog(str(first), 1 << 20, 1)
    try:
        log("ALLOW", "docs", "a", "op", None)
        log.reconfigure(str(second), 1 << 20, 1)
        log("ALLOW", "docs", "b", "op", None)
    finally:
        log.close()
    assert "path=a " in first.read_text() and "path=b " not in first.read_text()
    assert "path=b " in second.read_text()
    assert log.key == (str(second), 1 << 20, 1)


def test_reconfigure_that_cannot_open_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "audit.log"
    (tmp_path / "blocker").write_text("a file, not a folder")
    log = AuditLog(str(target), 1 << 20, 1)
    try:
        with pytest.raises(OSError):
            log.reconfigure(str(tmp_path / "blocker" / "audit.log"), 1 << 20, 1)
        log("ALLOW", "docs", "still-here", "op", None)
    finally:
        log.close()
    assert "still-here" in target.read_text()


def test_after_close_nothing_is_written(tmp_path: Path) -> None:
    target = tmp_path / "audit.log"
    log = AuditLog(str(target), 1 << 20, 1)
    log.close()
    log("ALLOW", "docs", "late", "op", None)
    assert target.read_text() == ""


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_the_log_its_rotations_and_its_folder_are_private(tmp_path: Path, umask: int) -> None:
    """The log names every root and file accessed: 0600 files in a 0700 folder it makes,
    whatever the umask (the index beside it is private too)."""
    target = tmp_path / "state" / "audit.log"
    old = os.umask(umask)
    try:
        log = AuditLog(str(target), 300, 2)
        try:
            for i in range(40):
                log("ALLOW", "docs", f"file-{i:04d}.txt", "read_text_file", None)
        finally:
            log.close()
    finally:
        os.umask(old)
    files = sorted(os.listdir(target.parent))
    assert files == ["audit.log", "audit.log.1", "audit.log.2"]
    for name in files:
        assert (target.parent / name).stat().st_mode & 0o777 == 0o600, name
    assert target.parent.stat().st_mode & 0o777 == 0o700
