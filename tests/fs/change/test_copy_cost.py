"""A folder copy costs what it visits and leaves nothing when it fails: copying a tree d
levels deep opens O(d) folders (counted, not timed), every folder made and every file
copied is a cancel check, and a copy that fails (a full disk) or is cancelled removes
what it made and says so, so that the same copy then works."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.errors import AlreadyExists, BudgetSpent, DeniedName, LoomError, OSRefusal, TooDeep
from app.fs.change import copy_tree, copying
from app.fs.change.copy import copy_file
from app.fs.control import NoControl
from app.security import ops
from app.security.resolve import Parent, Root
from tests.fs.conftest import CancelAfter, Cancelled, temp_leftovers
from tests.kit import count_folder_opens
from tests.security.conftest import make_root


def _chain(top: Path, levels: int, *, files: bool = True) -> None:
    here = top / "src"
    for i in range(levels):
        here = here / f"d{i}"
        here.mkdir(parents=True)
        if files:
            (here / "f.txt").write_text(f"{i}\n")


class _Counting:
    """A control that counts its checks and os.mkdir calls made before each."""

    def __init__(self) -> None:
        self.checks = 0

    def check(self) -> None:
        self.checks += 1

    def progress(self, *a: object) -> None:
        pass



def _opens_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: int) -> int:
    top = tmp_path / f"t{levels}"
    _chain(top, levels)
    root = make_root(top)  # the component walk: every folder opened is an os.open
    count = count_folder_opens(monkeypatch)
    out = copy_file(root, "src", root, "dst")
    monkeypatch.undo()
    assert out.files == levels and not out.truncated
    subprocess.run(["rm", "-rf", str(top)], check=True, timeout=60)
    return count[0]


def test_copying_a_tree_d_deep_opens_O_d_folders(tmp_path, monkeypatch):
    """Each folder is opened once on either side, from its parent's handle, not again
    from the copy's top for every level below it (which cost d²/2 opens per side)."""
    shallow, deep = _opens_for(tmp_path, monkeypatch, 10), _opens_for(tmp_path, monkeypatch, 60)
    per_level = (deep - shallow) / 50
    assert per_level <= 6, (shallow, deep)  # the walk, the source side and the copy's side
    assert deep / 60 <= 1.5 * shallow / 10, (shallow, deep)


@pytest.mark.parametrize("files", [True, False], ids=["with files", "folders only"])
def test_a_cancel_at_any_step_stops_there_and_leaves_nothing(tmp_path, files):
    top = tmp_path / "r"
    levels = 12
    _chain(top, levels, files=files)
    root = make_root(top)
    counting = _Counting()
    copy_file(root, "src", root, "probe", control=counting)
    subprocess.run(["rm", "-rf", str(top / "probe")], check=True)
    # The walk checks once per folder; making them is a step each too, as is each file.
    assert counting.checks >= 2 * (levels + 1) + (levels if files else 0)
    before = sorted(p.name for p in top.iterdir())
    for n in range(counting.checks):
        control = CancelAfter(n)
        with pytest.raises(Cancelled):
            copy_file(root, "src", root, "dst", control=control)
        assert control.left == -1  # not one check after the cancel
        assert sorted(p.name for p in top.iterdir()) == before, n
    assert copy_file(root, "src", root, "dst").files == (levels if files else 0)


def _two_parts(top: Path) -> Root:
    (top / "src" / "sub").mkdir(parents=True)
    (top / "src" / "p0.bin").write_bytes(b"\0" * 150_000)
    (top / "src" / "sub" / "p1.bin").write_bytes(b"\1" * 150_000)
    return make_root(top)


def _no_space_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """ENOSPC at the one write of a copy, for the file `name` (its first byte)."""
    real = copying.stream

    def stream(src_fd, seen, rel, control, done):
        fill = real(src_fd, seen, rel, control, done)

        def full(fd: int) -> None:
            if rel.endswith(name):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fill(fd)

        return full

    monkeypatch.setattr(copying, "stream", stream)


def test_a_copy_that_fails_on_a_full_disk_removes_what_it_made_and_a_retry_works(
        tmp_path, monkeypatch):
    top = tmp_path / "r"
    root = _two_parts(top)
    before = sorted(os.listdir(top))
    _no_space_at(monkeypatch, "p1.bin")
    with pytest.raises(LoomError) as err:
        copy_file(root, "src", root, "dst")
    monkeypatch.undo()
    assert err.value.message == (
        "cannot copy 'src' to 'dst': stopped at 'sub/p1.bin': no space left on device; "
        "what it had made (1 file(s)) was removed, nothing is left at 'dst'")
    assert sorted(os.listdir(top)) == before and not temp_leftovers(top)
    out = copy_file(root, "src", root, "dst")
    assert out.files == 2 and (top / "dst" / "sub" / "p1.bin").stat().st_size == 150_000


def test_a_real_full_disk(tmp_path):
    """The same on a real file system that fills up: a 640 KiB tmpfs holding 300 KB of
    source and 150 KB of filler has room for one more 150 KB file, not two (needs the
    right to mount: skipped without it)."""
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=640k", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    root = None
    try:
        root = _two_parts(disk)
        (disk / "filler").write_bytes(b"\2" * 150_000)
        with pytest.raises(LoomError, match="no space left on device; what it had made"):
            copy_file(root, "src", root, "dst")
        assert sorted(os.listdir(disk)) == ["filler", "src"] and not temp_leftovers(disk)
        (disk / "filler").unlink()
        assert copy_file(root, "src", root, "dst").files == 2
    finally:
        if root is not None:
            root.handle.close()  # else the mount is busy
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_copy_stopped_by_the_byte_budget_keeps_what_it_copied(tmp_path):
    top = tmp_path / "r"
    root = _two_parts(top)
    paid: list[int] = []

    def pay(n: int, rel: str) -> None:
        if paid:
            raise BudgetSpent("byte budget spent")
        paid.append(n)

    out = copy_file(root, "src", root, "dst", pay=pay)
    assert out.truncated and out.files == 1
    assert "stopped at 'sub/p1.bin': byte budget spent" in (out.note or "")
    assert (top / "dst" / "p0.bin").stat().st_size == 150_000
    assert not (top / "dst" / "sub" / "p1.bin").exists()


# One file's copy (app.fs.change.copying) on its own: its refusals name the file, its bounds
# count what earlier files of the call copied, its reads stop one byte past the size it saw.

class _OnFirstCheck:
    """A control that runs `act` at its first check (the copy's first chunk)."""

    def __init__(self, act) -> None:
        self.act, self.checks = act, 0

    def check(self) -> None:
        self.checks += 1
        if self.checks == 1:
            self.act()

    def progress(self, *a: object) -> None:
        pass


def _one(root: Root, source: str, dest: str, done: copying.Copied, *,
         overwrite: bool = False, control=None) -> None:
    from app.fs.control import NoControl
    with root.open_parent(source, op="t", perm="read") as src, \
            root.open_parent(dest, op="t", perm="write") as dst:
        copying.copy_one(root, src, dst, overwrite=overwrite, control=control or NoControl(),
                         done=done)


@pytest.mark.parametrize("name, message", [
    ("missing.txt", "no such file or directory: 'missing.txt'"),
    ("link.txt", "too many levels of symbolic links"),  # never followed
    ("sub", "not a regular file: 'sub'"),
])
def test_a_source_that_cannot_be_opened_as_a_file_is_named(tmp_path, name, message):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "link.txt").symlink_to("a.txt")
    root = make_root(tmp_path)
    with root.open_parent(name, op="t", perm="read") as src, pytest.raises(LoomError) as e:
        copying.open_source(src)
    assert message in e.value.message


def test_the_byte_bound_counts_what_the_call_copied_before(tmp_path, monkeypatch):
    monkeypatch.setattr(copying, "MAX_COPY_BYTES", 10)
    (tmp_path / "four.txt").write_bytes(b"4444")
    (tmp_path / "six.txt").write_bytes(b"666666")
    (tmp_path / "seven.txt").write_bytes(b"7777777")
    root = make_root(tmp_path)
    paid: list[tuple[int, str]] = []
    done = copying.Copied(lambda n, rel: paid.append((n, rel)))
    _one(root, "four.txt", "c1.txt", done)
    _one(root, "six.txt", "c2.txt", done)  # exactly the bound: copied
    assert (done.files, done.bytes) == (2, 10)
    assert paid == [(4, "four.txt"), (6, "six.txt")]
    done = copying.Copied()
    done.bytes = 4
    with pytest.raises(LoomError) as e:
        _one(root, "seven.txt", "c3.txt", done)
    assert e.value.message == (
        "'seven.txt' is 7 bytes; one copy_file call copies at most 10 bytes")
    assert not (tmp_path / "c3.txt").exists() and done.bytes == 4


def test_copying_a_file_onto_another_name_of_itself_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    os.link(tmp_path / "a.txt", tmp_path / "twin.txt")
    root = make_root(tmp_path)
    with pytest.raises(LoomError) as e:
        copy_file(root, "a.txt", root, "twin.txt", overwrite=True)
    assert e.value.message == "source and destination are the same file"


def test_a_destination_replaced_during_the_copy_is_not_overwritten(tmp_path):
    (tmp_path / "a.txt").write_text("new")
    (tmp_path / "b.txt").write_text("old")
    root = make_root(tmp_path)

    def swap() -> None:  # another program replaces the destination by a rename
        (tmp_path / "other").write_text("theirs")
        os.rename(tmp_path / "other", tmp_path / "b.txt")

    with pytest.raises(LoomError) as e:
        _one(root, "a.txt", "b.txt", copying.Copied(), overwrite=True,
             control=_OnFirstCheck(swap))
    assert "changed" in e.value.message
    assert (tmp_path / "b.txt").read_text() == "theirs" and not temp_leftovers(tmp_path)


def _reads(monkeypatch) -> list[int]:
    got: list[int] = []
    real = os.read

    def read(fd: int, n: int) -> bytes:
        data = real(fd, n)
        got.append(len(data))
        return data

    monkeypatch.setattr(copying.os, "read", read)
    return got


@pytest.mark.parametrize("grow, reads", [
    (b"", [4, 4, 0]),  # the size it saw, then one more byte asked for, none there
    (b"+" * 12, [4, 4, 1]),  # grown: one byte past the size is enough to tell
])
def test_a_copy_reads_one_byte_past_the_size_it_saw_and_no_more(tmp_path, monkeypatch, grow,
                                                                reads):
    monkeypatch.setattr(copying, "CHUNK", 4)
    (tmp_path / "a.txt").write_bytes(b"12345678")
    root = make_root(tmp_path)

    def append() -> None:
        with open(tmp_path / "a.txt", "ab") as f:
            f.write(grow)

    got = _reads(monkeypatch)
    done = copying.Copied()
    if grow:
        with pytest.raises(LoomError) as e:
            _one(root, "a.txt", "b.txt", done, control=_OnFirstCheck(append))
        assert e.value.message == "'a.txt' changed while it was copied; nothing was written"
        assert not (tmp_path / "b.txt").exists() and done.bytes == 0
    else:
        done.bytes = 2  # an earlier file of the same call
        _one(root, "a.txt", "b.txt", done, control=_OnFirstCheck(append))
        assert (tmp_path / "b.txt").read_bytes() == b"12345678" and done.bytes == 10
    monkeypatch.undo()
    assert got == reads


def test_a_copy_waiting_for_its_destinations_key_can_be_cancelled(tmp_path):
    import threading

    from app.fs.change.locks import changing
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    root = make_root(tmp_path)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            _one(root, "a.txt", "b.txt", copying.Copied(), overwrite=True,
                 control=CancelAfter(0))
        except BaseException as exc:
            failed.append(exc)

    with root.open_parent("b.txt", op="t", perm="write") as held, changing(held):
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(timeout=60)  # cancelled at its first poll, the key still held here
        assert not t.is_alive() and [type(x) for x in failed] == [Cancelled]
    t.join(timeout=60)
    assert (tmp_path / "b.txt").read_text() == "b"


# copy_file's own refusals, in process: each one names the path and is audited as copy_file.

def _audited(top: Path) -> tuple[Root, list[tuple]]:
    (top / "a.txt").write_text("a")
    (top / "b.txt").write_text("b")
    (top / ".env").write_text("secret")
    (top / ".git").mkdir()
    (top / ".git" / "config").write_text("c")
    (top / "gitlink").symlink_to(".git")
    (top / "link.txt").symlink_to("a.txt")
    lines: list[tuple] = []
    return make_root(top, audit=lambda *a: lines.append(a)), lines


@pytest.mark.parametrize("source, destination, message, audited", [
    (".env", "e.txt", "matches deny pattern '.env'", ".env"),
    ("a.txt", ".env", "matches deny pattern '.env'", ".env"),
    ("gitlink/config", "c.txt", "matches deny pattern '.git'", "gitlink/config"),
    ("a.txt", "gitlink/a.txt", "matches deny pattern '.git'", "gitlink/a.txt"),
    ("a.txt", "x/y/z/a.txt", "it would lie 4 levels below the root (the server makes paths at "
     "most 3 levels deep); nothing was copied", "x/y/z/a.txt"),
])
def test_a_refused_copy_is_audited_as_copy_file(tmp_path, monkeypatch, source, destination,
                                                message, audited):
    from app.fs.change import copy as copy_mod
    monkeypatch.setattr(copy_mod, "MAX_DEPTH", 3)
    root, lines = _audited(tmp_path)
    (tmp_path / "x" / "y" / "z").mkdir(parents=True)
    with pytest.raises(LoomError) as e:
        copy_file(root, source, root, destination)
    assert message in e.value.message
    assert {op for *_, op, _ in lines} == {"copy_file"}
    denied = [line for line in lines if line[0] == "DENY"]
    assert denied == [("DENY", root.name, audited, "copy_file",
                       f"{e.value.rule}: {e.value.message}")]


def test_a_destination_at_the_depth_bound_is_copied(tmp_path, monkeypatch):
    from app.fs.change import copy as copy_mod
    monkeypatch.setattr(copy_mod, "MAX_DEPTH", 3)
    root, lines = _audited(tmp_path)
    (tmp_path / "x" / "y").mkdir(parents=True)
    assert copy_file(root, "a.txt", root, "x/y/a.txt").files == 1
    assert (tmp_path / "x" / "y" / "a.txt").read_text() == "a"
    assert [line[0] for line in lines] == ["ALLOW", "ALLOW"]


@pytest.mark.parametrize("source, destination, message", [
    ("a.txt", "b.txt", "destination 'b.txt' already exists; pass overwrite=true to replace it"),
    ("link.txt", "l.txt", "'link.txt' is a symbolic link; links are never copied"),
])
def test_no_overwrite_unless_asked_and_no_link_copied(tmp_path, source, destination, message):
    root, _ = _audited(tmp_path)
    with pytest.raises(LoomError) as e:
        copy_file(root, source, root, destination)
    assert e.value.message == message
    assert (tmp_path / "b.txt").read_text() == "b" and not (tmp_path / "l.txt").exists()


def test_an_os_error_while_copying_names_the_destination(tmp_path, monkeypatch):
    from app.fs.change import copy as copy_mod
    root, _ = _audited(tmp_path)

    def failing(*a: object, **k: object) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(copy_mod, "copy_one", failing)
    with pytest.raises(LoomError) as e:
        copy_file(root, "a.txt", root, "new.txt")
    assert e.value.message.endswith(": 'new.txt'")


@pytest.mark.parametrize("options, kept, note", [
    ({}, True, None),
    ({"version_max_bytes": 4}, False, "the previous version (14 bytes) was not kept: above "
     "this root's limit for a kept version (4 bytes)"),
])
def test_a_copy_over_a_file_says_where_its_version_went_or_why_none(tmp_path, options, kept,
                                                                   note):
    from app.registry import Registry
    from tests.fs.conftest import make_disk, populate
    from tests.kit import config_file, roots_toml
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = config_file(tmp_path, roots_toml(("ws", disk.ws, "workspace", options),
                                           audit_log=tmp_path / "state" / "audit.log"))
    root = Registry(str(cfg), audit=False).current.root("ws")
    out = copy_file(root, "dir/a.txt", root, "notes.txt", overwrite=True)
    assert out.note == note and (out.kept_version is not None) == kept
    if kept:
        assert out.kept_version.startswith(".mcp-trash/")
        assert out.kept_version.endswith("/notes.txt")


def test_a_source_rewritten_in_place_at_its_size_is_refused(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"12345678")
    root = make_root(tmp_path)

    def rewrite() -> None:  # same size, new bytes, another time
        with open(tmp_path / "a.txt", "r+b") as f:
            f.write(b"abcdefgh")
        os.utime(tmp_path / "a.txt", ns=(1, 1))

    with pytest.raises(LoomError) as e:
        _one(root, "a.txt", "b.txt", copying.Copied(), control=_OnFirstCheck(rewrite))
    assert e.value.message == "'a.txt' changed while it was copied; nothing was written"
    assert not (tmp_path / "b.txt").exists()


def test_a_destination_made_by_another_program_during_the_copy_is_kept(tmp_path):
    (tmp_path / "a.txt").write_text("ours")
    root = make_root(tmp_path)

    def make() -> None:
        (tmp_path / "new.txt").write_text("theirs")

    from app.fs.change import copy as copy_mod
    with pytest.raises(LoomError) as e:
        copy_mod.copy_file(root, "a.txt", root, "new.txt", control=_OnFirstCheck(make))
    assert e.value.message == (
        "destination 'new.txt' already exists; pass overwrite=true to replace it")
    assert (tmp_path / "new.txt").read_text() == "theirs" and not temp_leftovers(tmp_path)


# --- copy_tree's own steps, in process ------------------------------------------------------


def _recorded(top: Path, deny: tuple[str, ...] = ()) -> tuple[Root, list[tuple[object, ...]]]:
    records: list[tuple[object, ...]] = []
    return make_root(top, audit=lambda *rec: records.append(rec), deny=deny), records


def test_a_subfolder_the_destination_denies_refuses_the_copy_and_is_audited(tmp_path):
    """Even an empty subfolder (the first planned below the top) is checked: the refusal
    names it as it would be at the destination, and is one DENY line of copy_file."""
    top = tmp_path / "r"
    (top / "src" / "a").mkdir(parents=True)
    (top / "out").mkdir()
    root, records = _recorded(top, deny=("out/dst/a",))
    with pytest.raises(DeniedName) as err:
        copy_file(root, "src", root, "out/dst")
    message = ("cannot copy 'src' to 'out/dst': 'out/dst/a' would match deny pattern "
               "'out/dst/a' in the destination; nothing was copied")
    assert err.value.message == message and err.value.pattern == "out/dst/a"
    assert records[-1] == ("DENY", "r", "out/dst", "copy_file", f"deny: {message}")
    assert not (top / "out" / "dst").exists()


def test_a_copy_too_deep_is_refused_and_audited_and_one_that_just_fits_is_not(
        tmp_path, monkeypatch):
    top = tmp_path / "r"
    (top / "src" / "a").mkdir(parents=True)
    (top / "src" / "a" / "f.txt").write_text("f\n")
    (top / "x").mkdir()
    root, records = _recorded(top)
    monkeypatch.setattr(copy_tree, "MAX_DEPTH", 3)  # dst/a/f.txt: 3 levels, x/dst/a/f.txt: 4
    assert copy_file(root, "src", root, "dst").files == 1
    with pytest.raises(TooDeep) as err:
        copy_file(root, "src", root, "x/dst")
    assert records[-1] == ("DENY", "r", "x/dst", "copy_file", f"depth: {err.value.message}")
    assert not (top / "x" / "dst").exists()


def test_links_and_special_files_are_counted_in_the_answer(tmp_path):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    for name in ("l1", "l2"):
        (top / "src" / name).symlink_to("elsewhere")
    for name in ("p1", "p2"):
        os.mkfifo(top / "src" / name)
    root = make_root(top)
    out = copy_file(root, "src", root, "dst")
    assert out.note == ("2 symbolic link(s) not copied (links are never followed); "
                        "2 special file(s) not copied")
    assert os.listdir(top / "dst") == []


@pytest.mark.parametrize(("sizes", "cut"), [
    ([5, 5], None),  # exactly the bytes a call may copy
    ([3, 3, 3, 3], "stopped at 3 files, 9 bytes (a call copies at most 10000 files, 10 bytes)"),
])
def test_a_folder_copy_is_cut_one_byte_past_its_bytes(tmp_path, monkeypatch, sizes, cut):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    for i, size in enumerate(sizes):
        (top / "src" / f"f{i}").write_bytes(b"x" * size)
    root = make_root(top)
    monkeypatch.setattr(copy_tree, "MAX_COPY_BYTES", 10)
    out = copy_file(root, "src", root, "dst")
    assert out.note == (cut and cut + "; copy the rest in parts")
    assert (out.truncated, out.files) == (cut is not None, 3 if cut else len(sizes))


@pytest.mark.parametrize(("entries", "cut"), [(3, False), (4, True)])
def test_a_folder_copy_is_cut_past_the_entries_it_may_look_at(tmp_path, monkeypatch, entries,
                                                              cut):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    for i in range(entries):
        (top / "src" / f"f{i}").write_text("x")
    root = make_root(top)
    monkeypatch.setattr(copy_tree, "MAX_COPY_ENTRIES", 3)
    out = copy_file(root, "src", root, "dst")
    assert out.truncated is cut
    assert out.note == ("stopped after looking at 3 entries; copy the rest in parts"
                        if cut else None)


def test_hidden_entries_are_counted_in_the_plural(tmp_path):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    for name in ("a.secret", "b.secret", "c.txt"):
        (top / "src" / name).write_text("x")
    root = make_root(top, deny=["*.secret"])
    out = copy_file(root, "src", root, "dst")
    assert out.note == ("incomplete: 2 entries that the source root's deny rules hide were "
                        "not copied")


def test_a_source_folder_gone_before_its_copy_is_refused(tmp_path):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    root = make_root(top)
    with root.open_parent("src", op="copy_file", perm="read") as src, \
            root.open_parent("dst", op="copy_file", perm="write") as dst:
        os.rmdir(top / "src")
        with pytest.raises(LoomError) as err:
            copy_tree.copy_folder(root, src, root, dst, NoControl(), copying.Copied())
    assert err.value.message == "'src' vanished before it was copied"


def _modes_tree(top: Path) -> None:
    for sub, mode in (("src/a/x", 0o710), ("src/b", 0o750)):
        (top / sub).mkdir(parents=True)
        (top / sub / "f.txt").write_text(sub)
        os.chmod(top / sub, mode)
    os.chmod(top / "src", 0o751)


def test_each_folder_is_private_while_it_is_filled_then_takes_its_source_s_bits(
        tmp_path, monkeypatch):
    top = tmp_path / "r"
    _modes_tree(top)
    root = make_root(top)
    seen: dict[str, int] = {}
    real = copy_tree.copy_one

    def copy_one(root: Root, s: Parent, d: Parent, **kw: Any) -> None:
        seen[d.rel] = os.fstat(d.fd).st_mode & 0o777
        seen["dst"] = (top / "dst").stat().st_mode & 0o777
        real(root, s, d, **kw)

    monkeypatch.setattr(copy_tree, "copy_one", copy_one)
    assert copy_file(root, "src", root, "dst").files == 2
    assert seen == {"dst/a/x/f.txt": 0o700, "dst/b/f.txt": 0o700, "dst": 0o700}
    modes = {p: (top / p).stat().st_mode & 0o777 for p in ("dst", "dst/a", "dst/a/x", "dst/b")}
    assert modes == {p: (top / p.replace("dst", "src", 1)).stat().st_mode & 0o777
                     for p in modes}
    assert modes["dst"] == 0o751


def test_a_destination_made_meanwhile_is_refused_as_already_there(tmp_path, monkeypatch):
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    root = make_root(top)
    real = ops.mkdir

    def mkdir(dir_fd: int, name: str, mode: int = 0o777) -> None:
        if name == "dst":
            real(dir_fd, name, 0o755)  # another program's, just before this one's
        real(dir_fd, name, mode)

    monkeypatch.setattr(ops, "mkdir", mkdir)
    with pytest.raises(AlreadyExists) as err:
        copy_file(root, "src", root, "dst")
    assert err.value.message == "destination 'dst' already exists"


def test_a_subfolder_that_cannot_be_made_is_where_the_copy_stopped(tmp_path, monkeypatch):
    top = tmp_path / "r"
    root = _two_parts(top)
    before = sorted(os.listdir(top))
    real = ops.mkdir

    def mkdir(dir_fd: int, name: str, mode: int = 0o777) -> None:
        if name == "sub":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(dir_fd, name, mode)

    monkeypatch.setattr(ops, "mkdir", mkdir)
    with pytest.raises(LoomError) as err:
        copy_file(root, "src", root, "dst")
    assert err.value.message == (
        "cannot copy 'src' to 'dst': stopped at 'sub': no space left on device; "
        "what it had made (1 file(s)) was removed, nothing is left at 'dst'")
    assert sorted(os.listdir(top)) == before


def test_a_refusal_of_one_file_stops_the_copy_with_its_own_words(tmp_path, monkeypatch):
    top = tmp_path / "r"
    root = _two_parts(top)

    def changed(root: Root, s: Parent, d: Parent, **kw: Any) -> None:
        raise OSRefusal(f"'{s.rel}' changed while it was copied")

    monkeypatch.setattr(copy_tree, "copy_one", changed)
    with pytest.raises(OSRefusal) as err:
        copy_file(root, "src", root, "dst")
    assert err.value.message == (
        "cannot copy 'src' to 'dst': stopped at 'p0.bin': 'src/p0.bin' changed while it was "
        "copied; what it had made (0 file(s)) was removed, nothing is left at 'dst'")
    assert not (top / "dst").exists()


def test_a_file_another_program_made_in_the_copy_is_never_overwritten_nor_removed(
        tmp_path, monkeypatch):
    top = tmp_path / "r"
    root = _two_parts(top)
    real = copy_tree.copy_one

    def theirs_first(root: Root, s: Parent, d: Parent, **kw: Any) -> None:
        if d.name == "p1.bin":
            (top / "dst" / "sub" / "p1.bin").write_text("theirs\n")
        real(root, s, d, **kw)

    monkeypatch.setattr(copy_tree, "copy_one", theirs_first)
    with pytest.raises(LoomError) as err:
        copy_file(root, "src", root, "dst")
    assert err.value.message.startswith(
        "cannot copy 'src' to 'dst': stopped at 'sub/p1.bin': destination 'dst/sub/p1.bin' "
        "already exists")
    assert err.value.message.endswith(
        "; what it had made could not all be removed: 'dst' holds what is left")
    assert (top / "dst" / "sub" / "p1.bin").read_text() == "theirs\n"
    assert sorted(p.name for p in (top / "dst").iterdir()) == ["sub"]


@pytest.mark.parametrize("meanwhile", ["sub moved out", "dst replaced"])
def test_what_the_copy_made_and_no_longer_finds_is_not_removed_and_it_says_so(
        tmp_path, monkeypatch, meanwhile):
    """A folder moved out of the copy, or the copy's top replaced by another folder: the
    removal cannot finish and says so; what is elsewhere now, or is another's, stays."""
    top = tmp_path / "r"
    root = _two_parts(top)

    def moved_then_no_space(root: Root, s: Parent, d: Parent, **kw: Any) -> None:
        if meanwhile == "sub moved out":
            os.rename(top / "dst" / "sub", top / "moved")
        else:
            os.rename(top / "dst", top / "moved")
            (top / "dst").mkdir()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    (top / "src" / "p0.bin").unlink()  # the one file is in sub
    monkeypatch.setattr(copy_tree, "copy_one", moved_then_no_space)
    with pytest.raises(LoomError) as err:
        copy_file(root, "src", root, "dst")
    assert err.value.message.endswith(
        "; what it had made could not all be removed: 'dst' holds what is left")
    assert (top / "moved").is_dir()
    assert (top / "dst").exists() is (meanwhile == "dst replaced")


def test_a_folder_copy_waiting_for_its_destination_s_key_can_be_cancelled(tmp_path):
    """The new top's name is held by another change: the copy waits for it through its
    cancel check, and a cancel there leaves nothing made."""
    import threading

    from app.fs.change.locks import changing
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    root = make_root(tmp_path)
    failed: list[BaseException] = []
    made_at_cancel: list[bool] = []

    class Cancelling(CancelAfter):
        def check(self) -> None:
            if self.left == 0:
                made_at_cancel.append((tmp_path / "dst").exists())
            super().check()

    def run() -> None:
        try:  # the walk's one check passes, the first poll of the wait cancels
            copy_file(root, "src", root, "dst", control=Cancelling(1))
        except BaseException as exc:
            failed.append(exc)

    with root.open_parent("dst", op="t", perm="write") as held, changing(held):
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(timeout=30)
        assert not t.is_alive() and [type(x) for x in failed] == [Cancelled]
    t.join(timeout=60)
    assert made_at_cancel == [False]  # cancelled while waiting, before the top was made
    assert not (tmp_path / "dst").exists()
