"""app.fs.change.write on its own: what the audit log says each call was, and the modes it makes."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

import pytest

from app.errors import (
    AlreadyExists,
    BadArgument,
    FileChanged,
    LoomError,
    NotARegularFile,
    NotFound,
)
from app.fs.change import write
from app.security.handles import Parent
from tests.fs.conftest import umask
from tests.security.conftest import make_root


@pytest.fixture
def audited(tmp_path: Path):
    top = tmp_path / "r"
    top.mkdir()
    (top / "f.txt").write_text("F")
    lines: list[tuple[str, str, str]] = []
    root = make_root(top, audit=lambda decision, _root, rel, op, _rule: lines.append(
        (decision, rel, op)))
    return top, root, lines


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
    with pytest.raises(LoomError):
        write.write_file(root, ".env", "x")
    assert lines and {op for _, _, op in lines} == {"write_file"}
    assert ("ALLOW", "n.txt", "write_file") in lines
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
