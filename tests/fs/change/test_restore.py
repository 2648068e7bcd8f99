"""Every change recoverable, and the trash for a person: what delete, write_file with
overwrite, edit_file, move_file and copy_file replace goes to the trash; `--trash` lists
it and `--restore` puts it back (the console script, run as a person would)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.errors import LoomError
from app.fs.change import copy, edit, move, trash, versions, write
from app.fs.change.edit import TextEdit
from app.registry import Registry
from tests.fs.conftest import Disk, call, make_disk, populate
from tests.kit import config_file, roots_toml

EXE = str(Path(sys.executable).parent / "loom-fs-mcp")


def cli(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "--config", str(cfg), *args], capture_output=True, text=True,
                          timeout=30, check=False)


def listed(cfg: Path, root: str = "ws") -> list[list[str]]:
    out = cli(cfg, "--trash", root)
    assert out.returncode == 0, out.stderr
    return [line.split("  ") for line in out.stdout.splitlines() if line.count("  ") == 6]


def module_config(disk: Disk) -> Path:
    return disk.base / "cfg" / "roots.toml"  # the live server's (tests/fs/conftest.py)


# -- round trips: through the tool, back through the command line ----------------------


async def test_a_delete_through_the_tool_is_restored_by_the_cli(disk, server):
    os.chmod(disk.ws / "dir" / "a.txt", 0o640)
    before = (disk.ws / "dir" / "a.txt").read_bytes()
    is_error, res = await call(server, "delete", path="dir/a.txt")
    assert not is_error, res
    ((item_id, path, when, size, kind, op, client),) = listed(module_config(disk))
    assert op == "delete" and client.startswith("127.0.0.1:")  # who asked, as the audit says
    assert (".mcp-trash/" + item_id, path, size, kind) == (res["trashed_to"], "dir/a.txt",
                                                            str(len(before)), "delete")
    assert when.endswith("Z") and "T" in when
    out = cli(module_config(disk), "--restore", "ws", item_id)
    assert out.returncode == 0, out.stderr
    assert (disk.ws / "dir" / "a.txt").read_bytes() == before
    assert stat.S_IMODE((disk.ws / "dir" / "a.txt").stat().st_mode) == 0o640
    assert listed(module_config(disk)) == []
    # the stamp is gone; the trash's own files stay (generation: --restore changed it)
    assert sorted(os.listdir(disk.ws / ".mcp-trash")) == [".gitignore", "generation"]


async def test_a_deleted_folder_comes_back_whole(disk, server):
    is_error, _ = await call(server, "delete", path="dir")
    assert not is_error
    ((item_id, path, _, size, kind, *_),) = listed(module_config(disk))
    assert (path, size, kind) == ("dir", "11", "delete")  # alpha\n + beta\n
    assert cli(module_config(disk), "--restore", "ws", item_id).returncode == 0
    assert (disk.ws / "dir" / "sub" / "b.txt").read_text() == "beta\n"


@pytest.mark.parametrize("how", ["edit_file", "write_file", "move_file", "copy_file"])
async def test_a_replaced_version_is_kept_and_restored_by_the_cli(disk, server, how):
    target = disk.ws / "dir" / "a.txt"
    os.chmod(target, 0o604)
    before = target.read_bytes()
    args = {
        "edit_file": {"path": "dir/a.txt", "edits": [{"old_text": "alpha", "new_text": "A"}]},
        "write_file": {"path": "dir/a.txt", "content": "new\n", "overwrite": True},
        "move_file": {"source": "notes.txt", "destination": "dir/a.txt", "overwrite": True},
        "copy_file": {"source": "notes.txt", "destination": "dir/a.txt", "overwrite": True},
    }[how]
    is_error, res = await call(server, how, **args)
    assert not is_error, res
    assert target.read_bytes() != before
    ((item_id, path, _, size, kind, *_),) = listed(module_config(disk))
    assert (path, size, kind) == ("dir/a.txt", str(len(before)), "version")
    assert res["kept_version"] == ".mcp-trash/" + item_id
    # The file is there again: putting the version back needs --to, and changes nothing.
    now = target.read_bytes()
    refused = cli(module_config(disk), "--restore", "ws", item_id)
    assert refused.returncode == 1 and "exists; nothing was restored" in refused.stderr
    assert "--to PATH" in refused.stderr and target.read_bytes() == now
    out = cli(module_config(disk), "--restore", "ws", item_id, "--to", "back/a.txt")
    assert out.returncode == 0, out.stderr
    assert (disk.ws / "back" / "a.txt").read_bytes() == before
    assert stat.S_IMODE((disk.ws / "back" / "a.txt").stat().st_mode) == 0o604


async def test_the_answer_says_when_a_version_is_not_kept(disk, server):
    is_error, res = await call(server, "write_file", path="dir/a.txt", content="x",
                               overwrite=True)
    assert not is_error and res["kept_version"] and res["note"] is None
    is_error, res = await call(server, "write_file", path="new.txt", content="x")
    assert not is_error and res["kept_version"] is None  # nothing was replaced


# -- the command line's refusals ------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--restore", "nope", "x"], "unknown root 'nope'"),
    (["--trash", "nope"], "unknown root 'nope'"),
    (["--restore", "ws", "20990101T000000Z/x"], "no item '20990101T000000Z/x' in the trash"),
    (["--restore", "ws", "../x"], "is not a plain relative path"),
    (["--restore", "ws", "notes.txt"], "no item 'notes.txt' in the trash"),
])
async def test_cli_refusals_change_nothing(disk, server, args, message):
    await call(server, "delete", path="notes.txt")
    before = disk.snapshot()
    out = cli(module_config(disk), *args)
    assert out.returncode != 0 and message in out.stderr
    assert disk.snapshot() == before


async def test_restore_never_follows_a_link_on_the_way(disk, server):
    await call(server, "delete", path="notes.txt")
    ((item_id, *_),) = listed(module_config(disk))
    out = cli(module_config(disk), "--restore", "ws", item_id, "--to", "link_out/n.txt")
    assert out.returncode == 1 and "not a plain folder" in out.stderr
    assert os.listdir(disk.outside) == ["secret.txt"]


# -- directly: the per-root switches and the bound ------------------------------------


def _root(tmp_path: Path, **options: object):
    disk = make_disk(tmp_path)
    populate(disk)
    cfg = config_file(tmp_path, roots_toml(
        ("ws", disk.ws, "workspace", options),  # type: ignore[arg-type]
        audit_log=tmp_path / "state" / "audit.log",
    ))
    return disk, cfg, Registry(str(cfg), audit=False).current.root("ws")


def test_keep_versions_off_keeps_nothing(tmp_path):
    disk, _, root = _root(tmp_path, keep_versions=False)
    out = write.write_file(root, "notes.txt", "x", overwrite=True)
    assert out.kept_version is None and not (disk.ws / ".mcp-trash").exists()


def test_a_file_above_version_max_bytes_is_replaced_and_the_answer_says_so(tmp_path):
    _, _, root = _root(tmp_path, version_max_bytes=4)
    out = write.write_file(root, "notes.txt", "x", overwrite=True)
    assert out.kept_version is None
    assert out.note == ("the previous version (14 bytes) was not kept: above this root's "
                        "limit for a kept version (4 bytes)")


def test_versions_stay_within_trash_max_bytes_oldest_first_deletes_never(tmp_path):
    from app.fs.change.layout import on_disk
    from app.fs.change.restore import list_trash

    disk, _, probe = _root(tmp_path / "probe")  # what one small item takes on this disk
    trash.delete(probe, "dir/sub/b.txt")
    (one,) = list_trash(str(disk.ws)).items
    # The trash folder and its own files count too: .gitignore, generation, dropped.json.
    files = [on_disk((disk.ws / ".mcp-trash" / n).lstat()) for n in (".gitignore", "generation")]
    own = on_disk((disk.ws / ".mcp-trash").lstat()) + sum(files) + files[0]
    cap = 3 * one.disk + own + one.disk // 2
    _, cfg, root = _root(tmp_path / "ws", trash_max_bytes=cap)
    trash.delete(root, "dir/sub/b.txt")
    kept = [write.write_file(root, "f.txt", str(i) * 100, overwrite=True) for i in range(6)]
    rows = listed(cfg)
    assert [r[4] for r in rows].count("delete") == 1
    versions_left = [r for r in rows if r[4] == "version"]
    assert len(versions_left) == 2
    # small versions, each taking what the delete takes: the newest two fit beside the
    # delete, the three before them went, oldest first
    assert [".mcp-trash/" + r[0] for r in versions_left] == [k.kept_version for k in kept[-2:]]
    assert all(k.kept_version for k in kept[1:])
    footer = cli(cfg, "--trash", "ws").stdout.splitlines()
    assert footer[-3].startswith(f"3 item(s) take {3 * one.disk} bytes on disk, of "
                                 f"trash_max_bytes {cap} and "
                                 "trash_max_items 10000 (past either")
    assert footer[-2] == (f"versions: 2, {2 * one.disk} bytes on disk; "
                          f"deletes: 1, {one.disk} bytes on disk")
    assert footer[-1].startswith(f"3 older version(s), {3 * one.disk} bytes on disk, were "
                                 "removed to stay within the caps")


def test_a_version_that_cannot_be_kept_refuses_the_change(tmp_path, monkeypatch):
    disk, _, root = _root(tmp_path)

    def broken(*a, **kw):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(versions.os, "link", broken)
    before = disk.snapshot()
    with pytest.raises(LoomError, match="could not be kept in the trash"):
        edit.edit_file(root, "notes.txt", [TextEdit(old_text="one", new_text="1")],
                       max_output_chars=1000)
    after = disk.snapshot()
    after.pop("ws/.mcp-trash", None)
    after.pop("ws/.mcp-trash/.gitignore", None)
    assert after == before


def test_a_file_with_other_links_is_kept_as_a_copy(tmp_path):
    disk, _, root = _root(tmp_path)
    os.link(disk.ws / "notes.txt", disk.ws / "dir" / "other")
    out = copy.copy_file(root, "dir/a.txt", root, "notes.txt", overwrite=True)
    (disk.ws / "dir" / "other").write_text("changed in place\n")  # the other name lives on
    assert (disk.ws / out.kept_version).read_text() == "one\ntwo\nthree\n"
    res = move.move_file(root, "dir/sub/b.txt", "dir/a.txt", overwrite=True)
    assert (disk.ws / res.kept_version).read_text() == "alpha\n"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_trash_is_never_untracked_in_a_git_work_tree(tmp_path):
    disk, _, root = _root(tmp_path)
    shutil.rmtree(disk.ws / ".git")
    subprocess.run(["git", "init", "-q", str(disk.ws)], check=True, timeout=30)
    trash.delete(root, "notes.txt")
    write.write_file(root, "dir/a.txt", "x", overwrite=True)
    status = subprocess.run(["git", "-C", str(disk.ws), "status", "--porcelain",
                             "--untracked-files=all"], capture_output=True, text=True,
                            check=True, timeout=30).stdout
    assert ".mcp-trash" not in status and "dir/a.txt" in status


@pytest.mark.parametrize("record", [
    None,  # a stamp from before records
    '{"kind": "delete", "path": "dir/gone.txt"}',  # the nested layout, with its record
])
def test_a_stamp_of_an_older_layout_is_listed_and_restored(tmp_path, record):
    disk, cfg, _ = _root(tmp_path)
    old = disk.ws / ".mcp-trash" / "20200101T000000Z" / "dir" / "gone.txt"
    old.parent.mkdir(parents=True)
    old.write_text("old delete\n")
    if record is not None:
        (disk.ws / ".mcp-trash" / "20200101T000000Z" / ".mcp-trash").write_text(record + "\n")
    (disk.ws / ".mcp-trash" / "notes-by-hand").mkdir()  # not a stamp: not an item
    assert listed(cfg) == [["20200101T000000Z/dir/gone.txt", "dir/gone.txt",
                            "2020-01-01T00:00:00Z", "11", "delete", "-", "-"]]
    out = cli(cfg, "--restore", "ws", "20200101T000000Z/dir/gone.txt")
    assert out.returncode == 0, out.stderr
    assert (disk.ws / "dir" / "gone.txt").read_text() == "old delete\n"
    assert sorted(os.listdir(disk.ws / ".mcp-trash")) == ["generation", "notes-by-hand"]


def test_names_are_printed_with_control_characters_escaped(tmp_path):
    disk, cfg, _ = _root(tmp_path)
    # No request may name one, but a file on disk may have been made by anything.
    (disk.ws / ".mcp-trash" / "20200101T000000Z").mkdir(parents=True)
    (disk.ws / ".mcp-trash" / "20200101T000000Z" / "a\x1b[2Jb.txt").write_text("x")
    out = cli(cfg, "--trash", "ws").stdout
    assert "\x1b" not in out and "a\\x1b[2Jb.txt" in out


def test_a_record_edited_to_lead_out_is_not_followed(tmp_path):
    disk, cfg, _ = _root(tmp_path)
    stamp = disk.ws / ".mcp-trash" / "20200101T000000Z"
    stamp.mkdir(parents=True)
    (stamp / ".mcp-trash").write_text('{"kind": "delete", "path": "../../../outside/f"}\n')
    (stamp / "f").write_text("f\n")
    assert [row[1] for row in listed(cfg)] == ["f"]  # read as a stamp without a record
    assert cli(cfg, "--restore", "ws", "20200101T000000Z/f").returncode == 0
    assert (disk.ws / "f").read_text() == "f\n" and os.listdir(disk.outside) == ["secret.txt"]


def test_the_documented_defaults_are_the_shipped_ones():
    import re

    from app.config import RootConfig
    from app.security.policy import Recovery

    docs = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    shipped = RootConfig(name="x", path=".", role="workspace")
    for key in ("version_max_bytes", "trash_max_bytes", "trash_max_items"):
        m = re.search(rf"^{key} = (\d+)\s", docs, re.MULTILINE)
        assert m and int(m.group(1)) == getattr(shipped, key) == getattr(
            Recovery(keep_versions=True), key), key
    assert [Recovery.of_role(r).keep_versions for r in ("workspace", "sourcecode", "reference")
            ] == [True, True, False]



# -- --restore's refusals: the root's deny rules, the depth bound, what it echoes ------


DEEP = "/".join(["d"] * 64 + ["n.txt"])  # 65 levels: past MAX_DEPTH


@pytest.mark.parametrize(("to", "item", "message"), [
    # On main the check was `dest[0] == ".mcp-trash"`: this one restored into the trash.
    (".MCP-TRASH/x", None, "matches deny pattern '.mcp-trash'; nothing was restored"),
    (".mcp-trash/x", None, "matches deny pattern '.mcp-trash'; nothing was restored"),
    (".ｍｃｐ-trash/x", None, "matches deny pattern '.mcp-trash'; nothing was restored"),
    (".mcp-trash./x", None, "matches deny pattern '.mcp-trash'; nothing was restored"),
    ("dir/.Git/x", None, "matches deny pattern '.git'"),  # any component
    ("dir/server.PEM", None, "matches deny pattern '*.pem'"),
    ("private/x.txt", None, "matches deny pattern 'private'"),  # the root's own deny
    ("dir/.env", None, "matches deny pattern '.env'"),
    (DEEP, None, "too deep: it would lie 65 levels below the root"),
    (None, "20200101T000000Z/a\x1b[2Jb", "no item '20200101T000000Z/a\\x1b[2Jb' in the trash"),
    ("x\x07/y", None, "'x\\x07/y' exists; nothing was restored"),
])
def test_restore_refuses_what_the_root_denies_and_escapes_what_it_echoes(
        tmp_path, to, item, message):
    disk, cfg, root = _root(tmp_path, deny=["private"])
    (disk.ws / "x\x07").mkdir()
    (disk.ws / "x\x07" / "y").write_text("here")
    item_id = item or trash.delete(root, "notes.txt").trashed_to.split("/", 1)[1]
    if item:
        trash.delete(root, "notes.txt")  # a trash, without that item
    before = disk.snapshot()
    out = cli(cfg, "--restore", "ws", item_id, *(["--to", to] if to is not None else []))
    assert out.returncode == 1, out.stdout
    assert message in out.stderr and "\x1b" not in out.stderr and "\x07" not in out.stderr
    assert disk.snapshot() == before


def _record(ws: Path, kept: str) -> dict:
    return json.loads((ws / Path(kept).parent / ".mcp-trash").read_text())


def test_a_version_kept_as_a_copy_keeps_the_mode_times_and_size_of_the_file(tmp_path):
    disk, _, root = _root(tmp_path)
    os.chmod(disk.ws / "notes.txt", 0o640)
    os.utime(disk.ws / "notes.txt", ns=(1_000_000_000, 2_000_000_000))
    os.link(disk.ws / "notes.txt", disk.ws / "dir" / "other")  # two names: copied
    was = (disk.ws / "notes.txt").stat()
    out = copy.copy_file(root, "dir/a.txt", root, "notes.txt", overwrite=True)
    st = (disk.ws / out.kept_version).stat()
    assert st.st_ino != was.st_ino and st.st_nlink == 1
    assert (stat.S_IMODE(st.st_mode), st.st_mtime_ns) == (0o640, 2_000_000_000)
    assert _record(disk.ws, out.kept_version)["bytes"] == was.st_size


def test_a_file_changed_before_its_copy_is_kept_refuses_the_change(tmp_path):
    from app.errors import os_error
    disk, _, root = _root(tmp_path)
    os.link(disk.ws / "notes.txt", disk.ws / "dir" / "other")
    seen = (disk.ws / "dir" / "other").stat()  # what was looked at: then replaced
    (disk.ws / "notes.txt").unlink()
    (disk.ws / "notes.txt").write_text("someone else's\n")
    with root.open_parent("notes.txt", op="t", perm="write") as parent, \
            pytest.raises(LoomError) as e:
        versions.Keeper(root, parent, seen)()
    why = os_error(OSError(errno.ESTALE, "")).message
    assert e.value.message == (f"the previous version of 'notes.txt' could not be kept in the "
                               f"trash ({why}); nothing was changed")
    assert not [p for p in (disk.ws / ".mcp-trash").iterdir() if p.name[0].isdigit()]


def test_a_version_that_cannot_be_synced_leaves_no_stamp_folder(tmp_path, monkeypatch):
    disk, _, root = _root(tmp_path)

    def fail(self) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(trash.Slot, "sync", fail)
    with pytest.raises(LoomError):
        write.write_file(root, "notes.txt", "x", overwrite=True)
    monkeypatch.undo()
    assert (disk.ws / "notes.txt").read_text() != "x"
    assert not [p for p in (disk.ws / ".mcp-trash").iterdir() if p.name[0].isdigit()]


def test_a_version_of_a_link_is_the_link_never_its_target(tmp_path):
    disk, _, root = _root(tmp_path)
    os.symlink("notes.txt", disk.ws / "ln")
    st = (disk.ws / "notes.txt").stat()  # one name: linked
    with root.open_parent("ln", op="t", perm="write") as parent:
        kept = versions.keep(root, parent, st, op="write")
    assert (disk.ws / ".mcp-trash" / kept).is_symlink()


def test_a_file_of_exactly_version_max_bytes_is_kept(tmp_path):
    disk, _, root = _root(tmp_path, version_max_bytes=14)
    assert (disk.ws / "notes.txt").stat().st_size == 14
    out = write.write_file(root, "notes.txt", "x", overwrite=True)
    assert out.note is None and (disk.ws / out.kept_version).stat().st_size == 14
