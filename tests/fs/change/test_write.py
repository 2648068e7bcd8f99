"""app.fs.change.write on its own: what the audit log says each call was, and the modes it makes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from app.errors import (
    AlreadyExists,
    BadArgument,
    FileChanged,
    LoomError,
    NotARegularFile,
    NotFound,
    TooDeep,
)
from app.fs.change import write
from app.security.handles import Parent
from app.security.paths import MAX_DEPTH
from tests.fs.conftest import CancelAfter, Cancelled, umask
from tests.security.conftest import make_root


def test_create_directory_is_audited_as_itself(audited):
    top, root, lines = audited
    with umask(0o027):
        assert write.create_directory(root, "a/b").created is True
    assert stat.S_IMODE((top / "a" / "b").stat().st_mode) == 0o750
    (top / "in_link").symlink_to("a")  # an in-root link to a directory satisfies mkdir -p
    assert write.create_directory(root, "in_link").created is False
    with pytest.raises(LoomError):
        write.create_directory(root, ".git/x")
    assert lines and {op for _, _, op in lines} == {"create_directory"}
    assert ("ALLOW", "a/b", "create_directory") in lines
    assert ("DENY", ".git/x", "create_directory") in lines


def test_write_file_is_audited_as_itself(audited):
    _, root, lines = audited
    write.write_file(root, "n.txt", "x")
    write.write_file(root, "f.txt", "G", overwrite=True,  # with a hash: no folder is made
                     expected_sha256=hashlib.sha256(b"F").hexdigest())
    with pytest.raises(LoomError):
        write.write_file(root, ".env", "x")
    assert lines and {op for _, _, op in lines} == {"write_file"}
    assert ("ALLOW", "n.txt", "write_file") in lines
    assert lines.count(("ALLOW", "f.txt", "write_file")) == 1
    assert ("DENY", ".env", "write_file") in lines


def test_content_with_a_lone_surrogate_is_refused_by_name(audited):
    top, root, _ = audited
    with pytest.raises(BadArgument) as exc:
        write.write_file(root, "s.txt", "a\ud800b")
    assert exc.value.message == "content is not valid Unicode (it holds a lone surrogate)"
    assert not (top / "s.txt").exists()


@pytest.mark.parametrize("change", ["rewritten", "deleted", "now a directory", "now a link"])
def test_the_guard_stops_a_replacement_of_a_file_changed_after_it_was_read(audited, change):
    top, root, _ = audited
    target = top / "f.txt"
    with root.open_parent("f.txt", op="t", perm="write") as parent:
        guard = write.unchanged_guard(parent, target.stat())
        guard()  # unchanged: passes
        if change == "rewritten":
            target.write_text("G" * 10)
        else:
            target.unlink()
            if change == "now a directory":
                target.mkdir()
            elif change == "now a link":
                target.symlink_to("elsewhere")
        with pytest.raises(FileChanged):
            guard()


def test_a_file_read_in_several_chunks_comes_back_whole(audited):
    top, root, _ = audited
    data = bytes(range(256)) * (10 * 1024) + b"end"  # 2.5 MiB: three reads
    (top / "big.bin").write_bytes(data)
    with root.open_parent("big.bin", op="t", perm="write") as parent:
        got, st = write.read_current(parent, 4 << 20)
    assert got == data and st.st_size == len(data)


@pytest.mark.parametrize("limit", [100, 3 << 20])
def test_a_file_that_keeps_growing_while_read_is_changed_and_the_read_stays_bounded(
    audited, monkeypatch, limit
):
    top, root, _ = audited
    (top / "grow.txt").write_text("x" * 10)
    served = []

    def endless(fd: int, n: int) -> bytes:  # the file grows as fast as it is read
        served.append(n)
        if sum(served) > 2 * limit + (1 << 20):
            raise AssertionError(f"read {sum(served)} bytes of a file limited to {limit}")
        return b"x" * n

    monkeypatch.setattr(write.os, "read", endless)
    with root.open_parent("grow.txt", op="t", perm="write") as parent, pytest.raises(
        FileChanged
    ):
        write.read_current(parent, limit)
    assert sum(served) == limit + 1  # one byte past the limit shows it grew; no more


def test_reading_what_is_not_a_readable_regular_file_says_what_and_where(audited):
    top, root, _ = audited
    os.mkfifo(top / "pipe")
    with root.open_parent("gone.txt", op="t", perm="write") as parent, pytest.raises(
        NotFound
    ) as exc:
        write.read_current(parent, 100)
    assert exc.value.message == "no such file or directory: 'gone.txt'"
    with root.open_parent("pipe", op="t", perm="write") as parent, pytest.raises(
        NotARegularFile
    ):
        write.read_current(parent, 100)


def test_write_file_never_replaces_unless_asked(audited):
    top, root, _ = audited
    with pytest.raises(AlreadyExists):
        write.write_file(root, "f.txt", "new")
    assert (top / "f.txt").read_text() == "F"
    assert write.write_file(root, "f.txt", "new", overwrite=True).created is False
    assert (top / "f.txt").read_text() == "new"


def test_a_change_between_the_hash_check_and_the_rename_is_caught(audited, monkeypatch):
    top, root, _ = audited
    target = top / "f.txt"
    digest = hashlib.sha256(b"F").hexdigest()
    real = write.hash_of_current

    def then_someone_writes(parent):
        answer = real(parent)
        target.write_text("G")  # same size, after the hash matched
        return answer

    monkeypatch.setattr(write, "hash_of_current", then_someone_writes)
    with pytest.raises(FileChanged):
        write.write_file(root, "f.txt", "new", overwrite=True, expected_sha256=digest.upper())
    assert target.read_text() == "G"


@pytest.mark.parametrize(("owner", "where"), [(Parent, "lstat"), (write, "replace_file")])
def test_a_system_error_while_writing_names_the_path(audited, monkeypatch, owner, where):
    top, root, _ = audited

    def fail(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(owner, where, fail)
    with pytest.raises(LoomError) as exc:
        write.write_file(root, "n.txt", "x")
    assert exc.value.message.endswith(": 'n.txt'"), exc.value.message
    assert not (top / "n.txt").exists()


def test_a_system_error_making_a_directory_names_the_path(audited, monkeypatch):
    top, root, _ = audited

    def fail(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(write.os, "mkdir", fail)
    with pytest.raises(LoomError) as exc:
        write.create_directory(root, "newdir")
    assert exc.value.message.endswith(": 'newdir'"), exc.value.message
    assert not (top / "newdir").exists()


def test_a_system_error_looking_at_the_target_is_a_refusal_that_names_it(audited, monkeypatch):
    _, root, _ = audited

    def fail(self):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with root.open_parent("f.txt", op="t", perm="write") as parent:
        monkeypatch.setattr(Parent, "lstat", fail)
        with pytest.raises(LoomError) as exc:
            write.existing_target(parent)
    assert exc.value.message.endswith(": 'f.txt'"), exc.value.message


def _record(top: Path, kept: str | None) -> dict[str, str]:
    assert kept is not None
    record: dict[str, str] = json.loads((top / Path(kept).parent / ".mcp-trash").read_text())
    return record


def test_a_replaced_file_is_kept_in_the_trash_as_replaced_by_a_write(audited):
    top, root, _ = audited
    res = write.write_file(root, "f.txt", "new", overwrite=True)
    assert res.created is False and (top / "f.txt").read_text() == "new"
    assert res.kept_version is not None and (top / res.kept_version).read_text() == "F"
    record = _record(top, res.kept_version)
    assert (record["kind"], record["path"], record["op"]) == ("version", "f.txt", "write")


def _racing(monkeypatch, target: Path, *, again: bool) -> list[bool]:
    """Another program makes `target` between the write's look and its rename: once, or
    (`again`) at every try, removing it once the rename failed."""
    real = write.replace_file
    tries: list[bool] = []

    def replace_file(dir_fd, name, data, **kwargs):
        tries.append(kwargs["replace"])
        if again or len(tries) == 1:
            target.write_text("theirs")
        try:
            return real(dir_fd, name, data, **kwargs)
        except FileExistsError:
            if again:
                target.unlink()
            raise

    monkeypatch.setattr(write, "replace_file", replace_file)
    return tries


def test_a_file_made_at_the_rename_is_never_replaced_without_overwrite(audited, monkeypatch):
    top, root, _ = audited
    tries = _racing(monkeypatch, top / "n.txt", again=False)
    with pytest.raises(AlreadyExists) as exc:
        write.write_file(root, "n.txt", "ours")
    assert exc.value.message == "'n.txt' already exists; pass overwrite=true to replace it"
    assert tries == [False] and (top / "n.txt").read_text() == "theirs"


def test_with_overwrite_a_file_made_at_the_rename_is_looked_at_again_and_replaced(
    audited, monkeypatch
):
    top, root, _ = audited
    tries = _racing(monkeypatch, top / "n.txt", again=False)
    res = write.write_file(root, "n.txt", "ours", overwrite=True)
    assert tries == [False, True] and (top / "n.txt").read_text() == "ours"
    assert res.created is False
    assert res.kept_version is not None and (top / res.kept_version).read_text() == "theirs"


def test_a_name_recreated_at_every_rename_is_given_up_after_two_tries(audited, monkeypatch):
    top, root, _ = audited
    tries = _racing(monkeypatch, top / "n.txt", again=True)
    with pytest.raises(AlreadyExists) as exc:
        write.write_file(root, "n.txt", "ours", overwrite=True)
    assert exc.value.message == "'n.txt' kept being recreated by another program; not written"
    assert tries == [False, False] and not (top / "n.txt").exists()


AT64 = "/".join(["at64"] + ["d"] * (MAX_DEPTH - 1))  # a folder MAX_DEPTH levels deep
TOO_DEEP = "/".join(["n"] * MAX_DEPTH + ["x"])
# (the call, the path asked for, the path the refusal is audited at)
DEEP_CALLS = [
    ("write_file", TOO_DEEP, TOO_DEEP),
    ("create_directory", TOO_DEEP, TOO_DEEP),
    ("write_file", "link64/x", AT64 + "/x"),  # shallow as asked, deep where it leads
    ("create_directory", "link64/x", AT64 + "/x"),
]


@pytest.mark.parametrize(("op", "path", "rel"), DEEP_CALLS)
def test_a_path_past_max_depth_is_refused_and_audited_where_it_leads(tmp_path, op, path, rel):
    top = tmp_path / "r"
    top.joinpath(*AT64.split("/")).mkdir(parents=True)
    (top / "link64").symlink_to(AT64)
    lines: list[tuple[str, str, str, str | None]] = []
    root = make_root(top, audit=lambda decision, _root, rel, op, rule: lines.append(
        (decision, rel, op, rule)))
    with pytest.raises(TooDeep) as exc:
        if op == "write_file":
            write.write_file(root, path, "x")
        else:
            write.create_directory(root, path)
    assert lines[-1] == ("DENY", rel, op, f"depth: {exc.value.message}")
    assert not (top / "n").exists() and not top.joinpath(*AT64.split("/"), "x").exists()


def test_the_answer_says_what_is_on_disk_now(audited):
    top, root, _ = audited
    content = "h\u00e9llo \u2603"  # 12 bytes in UTF-8, 8 characters
    res = write.write_file(root, "d/new.txt", content)
    data = content.encode("utf-8")
    assert (res.path, res.created, res.size, res.sha256, res.kept_version, res.note) == (
        "d/new.txt", True, len(data), hashlib.sha256(data).hexdigest(), None, None)
    assert (top / "d" / "new.txt").read_bytes() == data


def test_a_replaced_file_above_the_version_limit_is_not_kept_and_the_answer_says_so(audited):
    top, root, _ = audited
    root.policy.recovery = replace(root.recovery, version_max_bytes=0)
    res = write.write_file(root, "f.txt", "new", overwrite=True)
    assert res.kept_version is None and not (top / ".mcp-trash").exists()
    assert res.note == ("the previous version (1 bytes) was not kept: above this root's limit "
                        "for a kept version (0 bytes)")


@pytest.mark.parametrize("path", ["gone.txt", "no/such/folder/f.txt"])
def test_a_write_with_a_hash_of_a_file_that_is_not_there_is_changed_and_makes_nothing(
    audited, path
):
    top, root, _ = audited
    before = sorted(p.name for p in top.rglob("*"))
    with pytest.raises(FileChanged):
        write.write_file(root, path, "x", overwrite=True,
                         expected_sha256=hashlib.sha256(b"x").hexdigest())
    assert sorted(p.name for p in top.rglob("*")) == before


def test_a_write_with_a_stale_hash_is_changed_and_writes_nothing(audited):
    top, root, _ = audited
    with pytest.raises(FileChanged):
        write.write_file(root, "f.txt", "new", overwrite=True,
                         expected_sha256=hashlib.sha256(b"G").hexdigest())
    assert (top / "f.txt").read_text() == "F"
    res = write.write_file(root, "f.txt", "new", overwrite=True,
                           expected_sha256=hashlib.sha256(b"F").hexdigest())
    assert res.created is False and (top / "f.txt").read_text() == "new"


def test_the_folders_a_failed_write_made_are_removed(audited, monkeypatch):
    top, root, _ = audited

    def fail(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(write, "replace_file", fail)
    with pytest.raises(LoomError) as exc:
        write.write_file(root, "a/b/n.txt", "x")
    assert exc.value.message.endswith(": 'a/b/n.txt'"), exc.value.message
    assert not (top / "a").exists()


def test_a_write_that_makes_folders_is_cancellable_at_each_level_and_leaves_nothing(audited):
    top, root, _ = audited
    n = 0
    while True:
        control = CancelAfter(n)
        try:
            write.write_file(root, "a/b/c/n.txt", "x", control=control)
        except Cancelled:
            assert control.left == -1 and not (top / "a").exists(), n
            n += 1
            continue
        break
    assert n >= 3  # a check at each folder made
    assert (top / "a" / "b" / "c" / "n.txt").read_text() == "x"


def test_a_hash_holding_a_letter_that_only_upper_cases_to_hex_is_refused(audited):
    """U+FB00 (the "ff" ligature) upper-cases to "FF": a hash spelled with it is not hex,
    and is refused, not read as the digest it would spell in capitals."""
    top, root, _ = audited
    old = next(f"x{i}" for i in range(10_000)
               if hashlib.sha256(f"x{i}".encode()).hexdigest().startswith("ff"))
    (top / "f.txt").write_text(old)
    spelled = "\ufb00" + hashlib.sha256(old.encode()).hexdigest()[2:]
    with pytest.raises(FileChanged):
        write.write_file(root, "f.txt", "new", overwrite=True, expected_sha256=spelled)
    assert (top / "f.txt").read_text() == old


def test_a_root_granted_only_write_makes_a_directory_through_an_in_root_link(tmp_path):
    """A config may grant `write` without `read`: `mkdir -p` through a link to a folder
    is a write, and is not refused for want of `read`."""
    (tmp_path / "d").mkdir()
    (tmp_path / "in_link").symlink_to("d")
    root = make_root(tmp_path, permissions=["write"])
    assert write.create_directory(root, "in_link").created is False
    assert write.create_directory(root, "in_link/e").created is True
    assert (tmp_path / "d" / "e").is_dir()
