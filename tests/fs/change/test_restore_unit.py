"""app.fs.change.restore in-process (test_restore.py runs it through the console script):
what `--trash` lists, each refusal of `--restore` in its words, the folders made on the
way back, and what is tidied after it (the stamp folder, its record, the older layout's
folders that only held the item)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from app.fs.change import restore
from app.fs.change.restore import TrashError, list_trash
from app.security.deny import DenyRules
from app.security.paths import MAX_DEPTH

STAMP = "20200101T000000Z"


def _root(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    (top / ".mcp-trash").mkdir(parents=True)
    (top / "notes.txt").write_text("here\n")
    return top


def _item(top: Path, stamp: str, path: str, body: str = "kept\n", *, nested: bool = False,
          record: bool = True) -> str:
    """A stamp folder holding `path`'s item (flat: under its last name, with a record
    naming it; `nested`: at its whole path, as older servers kept it): its id."""
    folder = top / ".mcp-trash" / stamp
    inner = path if nested else path.rsplit("/", 1)[-1]
    (folder / inner).parent.mkdir(parents=True, exist_ok=True)
    (folder / inner).write_text(body)
    if record:
        fields = {"kind": "delete", "path": path} | ({} if nested else {"name": inner})
        (folder / ".mcp-trash").write_text(json.dumps(fields) + "\n")
    return f"{stamp}/{inner}"


def _stamps(top: Path) -> list[str]:
    return sorted(p.name for p in (top / ".mcp-trash").iterdir() if p.name[0].isdigit())


# -- --trash ----------------------------------------------------------------------------


def test_the_listing_is_every_item_oldest_first_with_what_trimming_dropped(tmp_path):
    top = _root(tmp_path)
    _item(top, "20200103T000000Z", "c.txt")
    _item(top, "20200101T000000Z-2", "b.txt")
    _item(top, "20200101T000000Z", "dir/a.txt")
    (top / ".mcp-trash" / "20200102T000000Z").mkdir()  # made, never filled: no item
    (top / ".mcp-trash" / "by-hand").mkdir()  # not a stamp
    (top / ".mcp-trash" / "dropped.json").write_text('{"versions": 2, "bytes": 9}\n')
    listing = list_trash(str(top))
    assert [(i.id, i.path) for i in listing.items] == [
        ("20200101T000000Z/a.txt", "dir/a.txt"),
        ("20200101T000000Z-2/b.txt", "b.txt"),
        ("20200103T000000Z/c.txt", "c.txt"),
    ]
    assert listing.dropped == {"versions": 2, "bytes": 9}


def test_a_root_without_a_trash_has_nothing_to_list_or_restore(tmp_path):
    top = _root(tmp_path)
    (top / ".mcp-trash").rmdir()
    with pytest.raises(FileNotFoundError):
        list_trash(str(top))
    with pytest.raises(FileNotFoundError):
        restore.restore(str(top), f"{STAMP}/x")


def test_a_trash_that_is_a_link_is_not_followed(tmp_path):
    top = _root(tmp_path)
    (top / ".mcp-trash").rmdir()
    (tmp_path / "elsewhere").mkdir()
    _item(tmp_path / "elsewhere", STAMP, "x")
    (top / ".mcp-trash").symlink_to(tmp_path / "elsewhere" / ".mcp-trash")
    with pytest.raises(OSError) as exc:
        list_trash(str(top))
    assert exc.value.errno in (errno.ELOOP, errno.ENOTDIR)


# -- --restore: what it puts back, and where -----------------------------------------------


def test_an_item_goes_back_to_its_path_with_the_folders_on_the_way_made(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "a/b/c.txt", "C\n")
    assert restore.restore(str(top), item_id) == "a/b/c.txt"
    assert (top / "a" / "b" / "c.txt").read_text() == "C\n"
    assert _stamps(top) == [] and list_trash(str(top)).items == []
    mask = os.umask(0)
    os.umask(mask)
    for made in (top / "a", top / "a" / "b"):  # as mkdir makes them: 0o777 less the umask
        assert stat.S_IMODE(made.stat().st_mode) == 0o777 & ~mask
    # a server's account of the trash lists it again: the counter moved
    assert (top / ".mcp-trash" / "generation").read_text() == "1\n"


def test_an_item_goes_where_to_says_and_its_own_path_stays_as_it_is(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "notes.txt", "old\n")
    assert restore.restore(str(top), item_id, to="/back/n.txt/") == "back/n.txt"
    assert (top / "back" / "n.txt").read_text() == "old\n"
    assert (top / "notes.txt").read_text() == "here\n" and _stamps(top) == []


@pytest.mark.parametrize("to", [" ", "X", "XX/Y", "a b/ c ", "..x/x..", "-", "/X/"])
def test_any_plain_relative_path_is_a_place_to_restore_to(tmp_path, to):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    assert restore.restore(str(top), item_id, to=to) == to.strip("/")
    assert (top / to.strip("/")).read_text() == "kept\n"


def test_folders_already_there_are_entered_not_made_again(tmp_path):
    top = _root(tmp_path)
    (top / "a").mkdir()
    (top / "a" / "other").write_text("o\n")
    item_id = _item(top, STAMP, "a/c.txt")
    assert restore.restore(str(top), item_id) == "a/c.txt"
    assert sorted(p.name for p in (top / "a").iterdir()) == ["c.txt", "other"]


@pytest.mark.parametrize(("to", "message"), [
    (None, "'notes.txt' exists; nothing was restored; restore it elsewhere with --to PATH"),
    ("dir/taken", "'dir/taken' exists; nothing was restored"),  # --to: no hint to use it
])
def test_an_existing_entry_is_never_replaced(tmp_path, to, message):
    top = _root(tmp_path)
    (top / "dir").mkdir()
    (top / "dir" / "taken").write_text("taken\n")
    item_id = _item(top, STAMP, "notes.txt", "old\n")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id, to=to)
    assert str(exc.value) == message
    assert (top / "notes.txt").read_text() == "here\n"
    assert (top / "dir" / "taken").read_text() == "taken\n"
    assert [i.id for i in list_trash(str(top)).items] == [item_id]


# -- --restore's refusals ----------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "/", "a//b", "./a", "a/.", "a/../b", "..", "a/./b"])
def test_an_id_or_a_to_that_is_no_plain_relative_path_is_refused(tmp_path, bad):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), bad)
    assert str(exc.value) == f"ID '{bad}' is not a plain relative path"
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id, to=bad)
    assert str(exc.value) == f"--to '{bad}' is not a plain relative path"
    assert _stamps(top) == [STAMP]


@pytest.mark.parametrize("item_id", [
    "notes.txt",  # not a stamp
    "20200101T000000Z",  # the stamp folder, not its item
    "20200101T000000Z/other.txt",  # not the item the stamp holds
    "20200101T000000Z/x.txt/more",
    "20200102T000000Z/x.txt",  # no such stamp
])
def test_an_id_naming_no_item_is_refused(tmp_path, item_id):
    top = _root(tmp_path)
    _item(top, STAMP, "x.txt")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id)
    assert str(exc.value) == f"no item '{item_id}' in the trash (see --trash)"
    assert _stamps(top) == [STAMP] and not (top / "x.txt").exists()


def test_an_id_that_is_no_stamp_is_refused_before_the_trash_is_opened(tmp_path):
    top = _root(tmp_path)
    (top / ".mcp-trash").rmdir()
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), "notes.txt")
    assert str(exc.value) == "no item 'notes.txt' in the trash (see --trash)"


@pytest.mark.parametrize(("to", "rules", "message"), [
    (".git/x", None, "'.git/x' matches deny pattern '.git'; nothing was restored"),
    ("a/.MCP-Trash/x", None, "'a/.MCP-Trash/x' matches deny pattern '.mcp-trash'; "
                             "nothing was restored"),
    ("private/x", DenyRules(["private"]), "'private/x' matches deny pattern 'private'; "
                                          "nothing was restored"),
])
def test_a_place_the_deny_rules_hide_is_refused(tmp_path, to, rules, message):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id, to=to, rules=rules)
    assert str(exc.value) == message
    assert _stamps(top) == [STAMP] and sorted(os.listdir(top)) == [".mcp-trash", "notes.txt"]


def test_the_item_s_own_path_is_checked_against_the_deny_rules_too(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "private/x.txt")
    assert restore.restore(str(top), item_id, rules=DenyRules(["other"])) == "private/x.txt"
    item_id = _item(top, STAMP, "private/y.txt")
    with pytest.raises(TrashError, match="matches deny pattern 'private'"):
        restore.restore(str(top), item_id, rules=DenyRules(["private"]))


def test_a_place_deeper_than_the_server_makes_paths_is_refused(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    deepest = "/".join(["d"] * (MAX_DEPTH - 1) + ["x.txt"])
    assert restore.restore(str(top), item_id, to=deepest) == deepest
    item_id = _item(top, STAMP, "y.txt")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id, to=deepest + "/y.txt")
    assert str(exc.value) == (f"too deep: it would lie {MAX_DEPTH + 1} levels below the "
                              f"root; the server makes paths at most {MAX_DEPTH} levels "
                              "deep; nothing was restored")
    assert exc.value.__cause__ is None and exc.value.__suppress_context__


@pytest.mark.parametrize(("make", "to", "name"), [
    (lambda top, out: (top / "ln").symlink_to(out), "ln/x", "ln"),
    (lambda top, out: (top / "ok").mkdir() or (top / "ok" / "ln").symlink_to(out),
     "ok/ln/x", "ln"),
    (lambda top, out: None, "notes.txt/x", "notes.txt"),  # a file on the way
])
def test_a_link_or_a_file_on_the_way_back_is_refused_never_followed(tmp_path, make, to, name):
    top = _root(tmp_path)
    out = tmp_path / "outside"
    out.mkdir()
    make(top, out)
    item_id = _item(top, STAMP, "x.txt")
    with pytest.raises(TrashError) as exc:
        restore.restore(str(top), item_id, to=to)
    assert str(exc.value) == (f"'{name}' on the way is not a plain folder (links are not "
                              "followed)")
    assert exc.value.__cause__ is None and exc.value.__suppress_context__
    assert os.listdir(out) == [] and _stamps(top) == [STAMP]


def test_any_other_refusal_on_the_way_back_is_the_system_s(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    with pytest.raises(OSError) as exc:
        restore.restore(str(top), item_id, to="n" * 256 + "/x.txt")
    assert exc.value.errno == errno.ENAMETOOLONG and not isinstance(exc.value, TrashError)
    assert _stamps(top) == [STAMP]


# -- what is tidied after ----------------------------------------------------------------


def test_the_stamp_folder_and_its_record_go_once_the_item_is_back(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    restore.restore(str(top), item_id)
    assert sorted(os.listdir(top / ".mcp-trash")) == ["generation"]


def test_a_stamp_folder_holding_more_than_the_item_and_its_record_stays(tmp_path):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "x.txt")
    (top / ".mcp-trash" / STAMP / "by-hand").write_text("h\n")
    restore.restore(str(top), item_id)
    assert sorted(os.listdir(top / ".mcp-trash" / STAMP)) == [".mcp-trash", "by-hand"]


@pytest.mark.parametrize("record", [True, False])
def test_the_older_layout_s_folders_that_only_held_the_item_go_too(tmp_path, record):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "a/b/c.txt", nested=True, record=record)
    assert item_id == f"{STAMP}/a/b/c.txt"
    assert restore.restore(str(top), item_id) == "a/b/c.txt"
    assert (top / "a" / "b" / "c.txt").read_text() == "kept\n"
    assert sorted(os.listdir(top / ".mcp-trash")) == ["generation"]


@pytest.mark.parametrize(("left", "stays"), [
    ("a/b/other", ["a", "a/b", "a/b/other"]),  # the deepest folder is not empty
    ("a/other", ["a", "a/other"]),  # one above it is not
    ("other", ["other"]),  # both folders went: the record stays beside what is left
])
def test_the_older_layout_s_folders_stay_from_the_first_that_holds_something_else(
        tmp_path, left, stays):
    top = _root(tmp_path)
    item_id = _item(top, STAMP, "a/b/c.txt", nested=True)
    (top / ".mcp-trash" / STAMP / left).write_text("o\n")
    restore.restore(str(top), item_id)
    folder = top / ".mcp-trash" / STAMP
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == sorted(
        [".mcp-trash", *stays])
