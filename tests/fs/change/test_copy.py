"""copy_file through the MCP SDK client and directly: within a root and across roots,
files and folders, byte-exact, mode kept, no overwrite unless asked, links never
followed, deny rules on both sides, and every refusal changes nothing."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path

import pytest

from app.errors import LoomError
from app.fs.change import copy_tree
from app.fs.change.copy import copy_file
from app.registry import Registry
from tests.fs.conftest import Disk, call, make_disk, populate, refusal, temp_leftovers
from tests.kit import config_file, roots_toml

COPY_REFUSALS = [
    # permission: the destination needs write, the source read
    ({"root": "ref", "source": "doc.md", "destination": "doc2.md"},
     "root 'ref' (role reference) grants [read], not write"),
    ({"source_root": "ws", "source": "notes.txt", "destination_root": "ref",
      "destination": "n.txt"}, "root 'ref' (role reference) grants [read], not write"),
    # denied names at the source: never opened, in this root or from another one
    ({"source": ".env", "destination": "env.txt"}, "matches deny pattern '.env'"),
    ({"source": ".git/config", "destination": "c"}, "matches deny pattern '.git'"),
    ({"source": "gitlink/config", "destination": "c"}, "matches deny pattern '.git'"),
    ({"source_root": "ws", "source": ".env", "destination_root": "src",
      "destination": "env.txt"}, "matches deny pattern '.env'"),
    ({"source_root": "ws", "source": ".git", "destination_root": "src",
      "destination": "g"}, "matches deny pattern '.git'"),
    # denied names at the destination: never written, in this root or in another one
    ({"source": "notes.txt", "destination": ".env"}, "matches deny pattern '.env'"),
    ({"source": "notes.txt", "destination": "dir/x.key"}, "matches deny pattern '*.key'"),
    ({"source": "notes.txt", "destination": ".mcp-trash/n.txt"},
     "matches deny pattern '.mcp-trash'"),
    ({"source": "dir", "destination": ".git/dir"}, "matches deny pattern '.git'"),
    ({"source_root": "src", "source": "main.py", "destination_root": "ws",
      "destination": ".env"}, "matches deny pattern '.env'"),
    ({"source_root": "src", "source": "pkg", "destination_root": "ws",
      "destination": "gitlink/pkg"}, "matches deny pattern '.git'"),
    # confinement
    ({"source": "../outside/secret.txt", "destination": "s.txt"}, "path escapes the root"),
    ({"source": "link_out/secret.txt", "destination": "s.txt"}, "path escapes the root"),
    ({"source": "notes.txt", "destination": "link_out/n.txt"}, "path escapes the root"),
    # links are never followed, special files never read
    ({"source": "link_file", "destination": "n.txt"}, "is a symbolic link"),
    ({"source": "secret_link", "destination": "n.txt"}, "is a symbolic link"),
    ({"source": "link_in", "destination": "d2"}, "is a symbolic link"),
    ({"source": "fifo", "destination": "f2"}, "not a regular file"),
    # what is at the destination
    ({"source": "notes.txt", "destination": "dir/a.txt"},
     "destination 'dir/a.txt' already exists; pass overwrite=true to replace it"),
    ({"source": "notes.txt", "destination": "dir", "overwrite": True},
     "destination 'dir' already exists and is a directory"),
    ({"source": "notes.txt", "destination": "link_file", "overwrite": True},
     "is a symbolic link"),
    ({"source": "notes.txt", "destination": "fifo", "overwrite": True}, "not a regular file"),
    ({"source": "dir", "destination": "dir/sub/copy"}, "cannot copy 'dir' into itself"),
    ({"source": "dir/sub", "destination": "dir", "overwrite": True},
     "a folder is copied only to a new name"),
    ({"source": "notes.txt", "destination": "notes.txt", "overwrite": True},
     "source and destination are the same file"),
    ({"source": "notes.txt", "destination": "no/such/n.txt"},
     "destination folder 'no/such' does not exist"),
    ({"source": "missing.txt", "destination": "m.txt"},
     "no such file or directory: 'missing.txt'"),
    ({"root": "nope", "source": "a", "destination": "b"}, "unknown root 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), COPY_REFUSALS)
async def test_copy_refusal_names_the_rule_and_changes_nothing(disk, server, args, message):
    assert message in await refusal(disk, server, "copy_file", **args)


async def test_copy_a_file_keeps_bytes_and_mode(disk, server):
    os.chmod(disk.ws / "notes.txt", 0o640)
    is_error, res = await call(server, "copy_file", source="notes.txt", destination="dir/n.txt")
    assert not is_error, res
    assert res == {"source": "notes.txt", "destination": "dir/n.txt", "type": "file",
                   "files": 1, "bytes": 14, "truncated": False, "hidden": 0, "note": None,
                   "kept_version": None}
    assert (disk.ws / "dir" / "n.txt").read_bytes() == (disk.ws / "notes.txt").read_bytes()
    assert stat.S_IMODE((disk.ws / "dir" / "n.txt").stat().st_mode) == 0o640
    assert not temp_leftovers(disk.ws)


async def test_copy_across_roots_is_byte_identical_for_a_binary_file(disk, server):
    data = random.Random(7).randbytes(3 << 20) + b"\x00\r\n\xff\xfe"  # every byte value
    (disk.src / "blob.bin").write_bytes(data)
    is_error, res = await call(server, "copy_file", source_root="src", source="blob.bin",
                               destination_root="ws", destination="dir/blob.bin")
    assert not is_error, res
    assert res["bytes"] == len(data)
    assert (disk.ws / "dir" / "blob.bin").read_bytes() == data


async def test_overwrite_replaces_a_file_only_when_asked(disk, server):
    is_error, res = await call(server, "copy_file", source="notes.txt", destination="dir/a.txt",
                               overwrite=True)
    assert not is_error, res
    assert (disk.ws / "dir" / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"


async def test_copy_a_folder_skips_links_and_hidden_names(disk, server):
    (disk.ws / "dir" / "sub" / "l").symlink_to("../a.txt")
    (disk.ws / "dir" / ".env").write_text("SECRET=2\n")
    os.chmod(disk.ws / "dir" / "sub", 0o750)
    is_error, res = await call(server, "copy_file", source="dir", destination_root="src",
                               destination="copied")
    assert not is_error, res
    assert res["type"] == "dir" and res["files"] == 2 and res["truncated"] is False
    assert res["hidden"] == 1 and res["note"].startswith("incomplete: 1 entry that")
    assert "1 symbolic link(s) not copied" in res["note"] and ".env" not in res["note"]
    top = disk.src / "copied"
    assert sorted(str(p.relative_to(top)) for p in top.rglob("*")) == ["a.txt", "sub",
                                                                       "sub/b.txt"]
    assert stat.S_IMODE((top / "sub").stat().st_mode) == 0o750


# -- directly: rules that differ between the two roots ------------------------------


def _two_roots(tmp_path: Path) -> tuple[Disk, Registry]:
    disk = make_disk(tmp_path)
    populate(disk)
    (disk.src / "pkg" / "build.log").write_text("log\n")
    (disk.src / "conf").mkdir()
    (disk.src / "conf" / "prod.yaml").write_text("SECRET\n")
    cfg = config_file(tmp_path, roots_toml(
        ("ws", disk.ws, "workspace", {"deny": ["*.log", "keep/pkg"]}),
        ("src", disk.src, "sourcecode", {"deny": ["conf/prod.yaml"]}),
        audit_log=tmp_path / "state" / "audit.log",
    ))
    return disk, Registry(str(cfg), audit=False)


@pytest.mark.parametrize(("src", "source", "dst", "destination", "message"), [
    # a name inside the folder that the destination root denies: nothing is written
    ("src", "pkg", "ws", "pkg", "'pkg/build.log' would match deny pattern '*.log'"),
    # a whole-path rule of the destination naming the copy's own path
    ("src", "pkg", "ws", "keep/pkg", "matches deny pattern 'keep/pkg'"),
    # the source root's whole-path rule: the file is never read
    ("src", "conf/prod.yaml", "ws", "prod.yaml", "matches deny pattern 'conf/prod.yaml'"),
    ("src", "main.py", "ws", "x.log", "matches deny pattern '*.log'"),
])
def test_a_denied_name_on_either_side_changes_nothing(tmp_path, src, source, dst, destination,
                                                      message):
    disk, reg = _two_roots(tmp_path)
    (disk.ws / "keep").mkdir()
    before = disk.snapshot()
    with pytest.raises(LoomError) as err:
        copy_file(reg.current.root(src), source, reg.current.root(dst), destination)
    assert message in err.value.message
    assert disk.snapshot() == before


def test_a_folder_denied_by_a_whole_path_rule_is_left_out_and_never_read(tmp_path):
    disk, reg = _two_roots(tmp_path)
    out = copy_file(reg.current.root("src"), "conf", reg.current.root("ws"), "conf")
    assert out.files == 0
    assert os.listdir(disk.ws / "conf") == []


@pytest.mark.parametrize("after", [False, True], ids=["last", "a folder walked after it"])
def test_an_unreadable_folder_refuses_the_copy(tmp_path, monkeypatch, after):
    disk, reg = _two_roots(tmp_path)
    (disk.src / "pkg" / "deep").mkdir()
    if after:  # walked after `deep` (breadth first, by name): the walk stops there
        (disk.src / "pkg" / "zz").mkdir()
    real_open = os.open

    def refuse(path, flags, *a, **kw):  # as a folder the user may not read
        if path == "deep":
            raise PermissionError(13, "denied")
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr("app.security.walk.os.open", refuse)
    before = disk.snapshot()
    with pytest.raises(LoomError) as err:
        copy_file(reg.current.root("src"), "pkg", reg.current.root("ws"), "pkg2")
    assert err.value.message == (
        "cannot copy 'pkg': a folder inside it cannot be opened or listed, so the copy would be "
        "incomplete; nothing was copied")
    assert disk.snapshot() == before


def test_a_folder_copy_past_its_bound_says_where_it_stopped(tmp_path, monkeypatch):
    disk, reg = _two_roots(tmp_path)
    for i in range(5):
        (disk.ws / "dir" / f"f{i}.txt").write_text(f"{i}\n")
    monkeypatch.setattr(copy_tree, "MAX_COPY_FILES", 3)
    out = copy_file(reg.current.root("ws"), "dir", reg.current.root("ws"), "copy")
    assert out.truncated and out.files == 3
    assert "stopped at 3 files" in (out.note or "") and "copy the rest in parts" in out.note
    assert len([p for p in (disk.ws / "copy").rglob("*") if p.is_file()]) == 3


@pytest.mark.parametrize(("source", "hidden", "files"), [
    ("pkg", 1, 2),  # pkg/.env: denied by its name (mod.py and build.log are copied)
    ("conf", 1, 0),  # conf/prod.yaml: a whole-path rule of the source root
    ("plain", 0, 1),
])
def test_a_folder_copy_that_leaves_hidden_entries_out_says_it_is_incomplete(
        tmp_path, source, hidden, files):
    """Entries the source root hides are never read nor copied; the answer counts them
    (never naming them) and says the copy is incomplete, though it was not cut short."""
    disk, reg = _two_roots(tmp_path)
    (disk.src / "pkg" / ".env").write_text("SECRET=1\n")
    (disk.src / "plain").mkdir()
    (disk.src / "plain" / "a.txt").write_text("a\n")
    out = copy_file(reg.current.root("src"), source, reg.current.root("src"), f"{source}2")
    assert (out.hidden, out.files, out.truncated) == (hidden, files, False)
    if hidden:
        assert out.note is not None and out.note.startswith(
            f"incomplete: {hidden} entr{'y' if hidden == 1 else 'ies'} that the source root's "
            f"deny rules hide {'was' if hidden == 1 else 'were'} not copied")
        assert ".env" not in out.note and "prod.yaml" not in out.note
    else:
        assert out.note is None
