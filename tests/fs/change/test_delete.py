"""delete through the MCP SDK client: into the trash, collision-free, never the
root or the trash, never through a link; the trash stays out of every view."""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import datetime, timezone

import pytest

from app.fs.change import trash
from app.security.walk import Walker
from tests.fs.conftest import call, populated_ws, refusal

STAMP = re.compile(r"^\.mcp-trash/\d{8}T\d{6}Z(-\d+)?/")

DELETE_REFUSALS = [
    # permission per root and role: only workspace roots delete
    ({"root": "src", "path": "main.py"},
     "root 'src' (role sourcecode) grants [read, write], not delete"),
    ({"root": "ref", "path": "doc.md"}, "root 'ref' (role reference) grants [read], not delete"),
    # the root and the trash
    ({"path": ""}, "invalid path: the root itself cannot be changed"),
    ({"path": "."}, "invalid path: the root itself cannot be changed"),
    ({"path": "dir/.."}, "invalid path: the root itself cannot be changed"),
    ({"path": ".mcp-trash"}, "matches deny pattern '.mcp-trash'"),
    ({"path": ".MCP-Trash"}, "matches deny pattern '.mcp-trash'"),
    ({"path": ".mcp-trash/20260101T000000Z"}, "matches deny pattern '.mcp-trash'"),
    # confinement
    ({"path": "../outside/secret.txt"}, "path escapes the root"),
    ({"path": "link_out/secret.txt"}, "path escapes the root"),
    ({"path": "../src/main.py"}, "path escapes the root"),
    # denied names
    ({"path": ".env"}, "matches deny pattern '.env'"),
    ({"path": ".git"}, "matches deny pattern '.git'"),
    ({"path": ".git/config"}, "matches deny pattern '.git'"),
    ({"path": "gitlink/config"}, "matches deny pattern '.git'"),
    # malformed, missing
    ({"path": "/etc/passwd"}, "invalid path: absolute"),
    ({"path": "missing.txt"}, "no such file or directory: 'missing.txt'"),
    ({"path": "notes.txt/x"}, "not a directory"),
]


@pytest.mark.parametrize(("args", "message"), DELETE_REFUSALS)
async def test_delete_refusal_names_the_rule_and_changes_nothing(disk, server, args, message):
    is_error, _ = await call(server, "delete", path="dir/a.txt")  # the trash exists already
    assert not is_error
    assert message in await refusal(disk, server, "delete", **args)


async def test_delete_moves_a_file_into_the_trash(disk, server):
    data = (disk.ws / "notes.txt").read_bytes()
    is_error, res = await call(server, "delete", path="notes.txt")
    assert not is_error, res
    assert res["path"] == "notes.txt"
    assert STAMP.match(res["trashed_to"]) and res["trashed_to"].endswith("/notes.txt")
    assert not (disk.ws / "notes.txt").exists()
    assert (disk.ws / res["trashed_to"]).read_bytes() == data


async def test_delete_a_directory_keeps_its_tree_in_the_trash(disk, server):
    is_error, res = await call(server, "delete", path="dir/sub")
    assert not is_error, res
    assert STAMP.match(res["trashed_to"]) and res["trashed_to"].count("/") == 2  # flat
    assert res["trashed_to"].endswith("/sub")
    assert (disk.ws / res["trashed_to"] / "b.txt").read_text() == "beta\n"
    assert (disk.ws / "dir" / "a.txt").exists()


async def test_deleting_a_symlink_trashes_the_link_not_its_target(disk, server):
    outside = disk.snapshot()
    outside = {k: v for k, v in outside.items() if k.startswith("outside")}
    is_error, res = await call(server, "delete", path="link_out")
    assert not is_error, res
    moved = disk.ws / res["trashed_to"]
    assert moved.is_symlink() and os.readlink(moved) == str(disk.outside)
    assert {k: v for k, v in disk.snapshot().items() if k.startswith("outside")} == outside
    is_error, res = await call(server, "delete", path="link_file")
    assert not is_error
    assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"


async def test_trash_path_is_where_the_entry_really_lived(disk, server):
    is_error, res = await call(server, "delete", path="link_in/a.txt")
    assert not is_error, res
    assert res["path"] == "link_in/a.txt"
    assert res["trashed_to"].endswith("/a.txt") and res["trashed_to"].count("/") == 2
    assert (disk.ws / res["trashed_to"]).read_text() == "alpha\n"
    record = json.loads(((disk.ws / res["trashed_to"]).parent / ".mcp-trash").read_text())
    assert (record["path"], record["op"]) == ("dir/a.txt", "delete")  # where it really lived


async def test_same_name_deleted_twice_both_survive(disk, server):
    async with server.session() as s:
        first = await call(s, "delete", path="notes.txt")
        await call(s, "write_file", path="notes.txt", content="second\n")
        second = await call(s, "delete", path="notes.txt")
    assert not first[0] and not second[0]
    a, b = first[1]["trashed_to"], second[1]["trashed_to"]
    assert a != b
    assert (disk.ws / a).read_text() == "one\ntwo\nthree\n"
    assert (disk.ws / b).read_text() == "second\n"


def test_deletes_in_the_same_second_never_collide(tmp_path):
    """Twelve threads delete same-named files at the very same (pinned) second."""
    disk, root = populated_ws(tmp_path)
    now = datetime(2026, 11, 30, 7, 15, 0, tzinfo=timezone.utc)
    n = 12
    for i in range(n):
        (disk.ws / f"d{i}").mkdir()
        (disk.ws / f"d{i}" / "same.txt").write_text(f"copy {i}\n")
    (disk.ws / "same.txt").write_text("top\n")
    results: list[str] = []
    barrier = threading.Barrier(n + 1)

    def worker(path: str) -> None:
        barrier.wait()
        results.append(trash.delete(root, path, now=now).trashed_to)

    threads = [threading.Thread(target=worker, args=(f"d{i}/same.txt",)) for i in range(n)]
    threads.append(threading.Thread(target=worker, args=("same.txt",)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == n + 1 and len(set(results)) == n + 1
    stamps = {r.split("/")[1] for r in results}
    assert stamps == {"20261130T071500Z"} | {f"20261130T071500Z-{k}" for k in range(1, n + 1)}
    contents = sorted((disk.ws / r).read_text() for r in results)
    assert contents == sorted([f"copy {i}\n" for i in range(n)] + ["top\n"])


async def test_trash_is_invisible_to_walks_listings_and_searches(disk, server):
    async with server.session() as s:
        for path in ("notes.txt", "dir/sub"):
            assert not (await call(s, "delete", path=path))[0]
        assert (disk.ws / ".mcp-trash").is_dir()
        assert list((disk.ws / ".mcp-trash").rglob("b.txt"))  # it is there, on the host
        root = server.registry.current.root("ws")
        seen = [e.path for e in Walker(root, ())]
        assert "dir/a.txt" in seen  # the walk does see the rest
        assert not any(".mcp-trash" in p or p.endswith("b.txt") for p in seen)
        views = [
            ("list_directory", {"path": "", "recursive": True, "max_depth": 10}, "dir/a.txt"),
            ("list_directory", {"path": ""}, "link_in"),
            ("search_files", {"pattern": "**"}, "dir/a.txt"),
            ("search_files", {"pattern": "*.txt"}, "dir/a.txt"),
            ("search_text", {"query": "beta"}, None),
            ("search_text", {"query": "alpha"}, "dir/a.txt"),
        ]
        for tool, args, expected in views:
            is_error, res = await call(s, tool, **args)
            assert not is_error, (tool, res)
            text = str(res)
            assert ".mcp-trash" not in text and "b.txt" not in text, (tool, text)
            if expected:  # the view works: it shows what is really there
                assert expected in text, (tool, text)
        for tool, args in (
            ("list_directory", {"path": ".mcp-trash"}),
            ("stat_path", {"path": ".mcp-trash"}),
            ("read_text_file", {"path": res_path(disk)}),
            ("create_directory", {"path": ".mcp-trash/x"}),
        ):
            is_error, text = await call(s, tool, **args)
            assert is_error and "matches deny pattern '.mcp-trash'" in text, (tool, text)


def res_path(disk) -> str:
    """The trashed b.txt, as a path relative to the root."""
    found = next((disk.ws / ".mcp-trash").rglob("b.txt"))
    return found.relative_to(disk.ws).as_posix()


async def test_a_planted_trash_link_is_refused_not_followed(disk, server):
    (disk.ws / ".mcp-trash").symlink_to(disk.outside)
    assert "the trash cannot be used" in await refusal(disk, server, "delete", path="notes.txt")
