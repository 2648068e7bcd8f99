"""write_file and create_directory through the MCP SDK client, against the real app.

Every refusal is checked twice: the error text is the contract's, and the
tree (roots and the folder outside them) is byte-for-byte what it was.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from tests.fs.conftest import MAX_READ, call, refusal, temp_leftovers, umask
from tests.kit import roots_toml
from tests.live import live_server

WRITE_TOOLS = {"write_file", "edit_file", "create_directory", "move_file"}

# -- write_file: refusals ---------------------------------------------------------

WRITE_REFUSALS = [
    # permission comes first, per root and role
    ({"root": "ref", "path": "new.txt"}, "root 'ref' (role reference) grants [read], not write"),
    ({"root": "ref", "path": "../ws/x.txt"}, "grants [read], not write"),
    ({"root": "nope", "path": "x.txt"}, "unknown root 'nope'; known roots: ws, src, ref"),
    # confinement
    ({"path": "../outside/x.txt"}, "path escapes the root"),
    ({"path": "dir/../../outside/x.txt"}, "path escapes the root"),
    ({"path": "link_out/x.txt"}, "path escapes the root"),
    ({"path": "link_out/new/x.txt"}, "path escapes the root"),
    ({"root": "src", "path": "../ws/notes.txt", "overwrite": True}, "path escapes the root"),
    # malformed requests, refused before the disk
    ({"path": "/etc/passwd"}, "invalid path: absolute paths are not accepted"),
    ({"path": "dir\\x.txt"}, "invalid path: contains a backslash"),
    ({"path": "C:/x.txt"}, "invalid path: drive letters"),
    ({"path": "a\x00b"}, "invalid path: contains a NUL byte"),
    ({"path": "a\nb"}, "invalid path: contains a control character"),
    ({"path": "x" * 256}, "invalid path: a component is longer than 255 bytes"),
    ({"path": ""}, "invalid path: the root itself cannot be changed"),
    # denied names, on any component, folded
    ({"path": ".env", "overwrite": True}, "matches deny pattern '.env'"),
    ({"path": ".ENV", "overwrite": True}, "matches deny pattern '.env'"),
    ({"path": ".env.local"}, "matches deny pattern '.env.*'"),
    ({"path": ".git/config", "overwrite": True}, "matches deny pattern '.git'"),
    ({"path": ".git/hooks/pre-commit"}, "matches deny pattern '.git'"),
    ({"path": "dir/.git/x"}, "matches deny pattern '.git'"),
    ({"path": ".mcp-trash/x.txt"}, "matches deny pattern '.mcp-trash'"),
    ({"path": ".mcp-tmp-0123"}, "matches deny pattern '.mcp-tmp-*'"),
    ({"path": "node_modules/x.js"}, "matches deny pattern 'node_modules'"),
    ({"path": "server.pem"}, "matches deny pattern '*.pem'"),
    ({"path": "secret_link", "overwrite": True}, "is a symbolic link"),
    ({"path": "gitlink/config", "overwrite": True}, "matches deny pattern '.git'"),
    ({"path": "gitlink/new"}, "matches deny pattern '.git'"),
    # what is at the name
    ({"path": "notes.txt"}, "'notes.txt' already exists; pass overwrite=true to replace it"),
    ({"path": "dir/a.txt"}, "'dir/a.txt' already exists"),
    ({"path": "link_file", "overwrite": True}, "is a symbolic link"),
    ({"path": "link_out", "overwrite": True}, "is a symbolic link"),
    ({"path": "dir", "overwrite": True}, "not a regular file: 'dir' is a directory"),
    ({"path": "fifo", "overwrite": True}, "not a regular file"),
    ({"path": "notes.txt/x.txt"}, "not a directory"),
    # size: bounded by the root's max_read_bytes, and the error says so
    ({"path": "big.txt", "content": "x" * (MAX_READ + 1)},
     f"content is {MAX_READ + 1} bytes; root 'ws' accepts at most {MAX_READ} bytes"),
    ({"path": "big.txt", "content": "é" * (MAX_READ // 2 + 1)}, "(its max_read_bytes)"),
    # lost-update guard
    ({"path": "notes.txt", "overwrite": True, "expected_sha256": "0" * 64},
     "file changed since it was read"),
    ({"path": "missing.txt", "expected_sha256": "0" * 64}, "file changed since it was read"),
    ({"path": "no/such/dir/x.txt", "expected_sha256": "0" * 64}, "file changed since it was read"),
]


@pytest.mark.parametrize(("args", "message"), WRITE_REFUSALS)
async def test_write_file_refusal_names_the_rule_and_changes_nothing(disk, server, args, message):
    text = await refusal(disk, server, "write_file", **{"content": "new\n", **args})
    assert message in text
    assert str(disk.base) not in text


async def test_stale_hash_is_refused_even_with_overwrite_and_the_right_size(disk, server):
    old = (disk.ws / "notes.txt").read_bytes()
    digest = hashlib.sha256(old).hexdigest()
    (disk.ws / "notes.txt").write_text("ONE\ntwo\nthree\n")  # a human edits: same size
    is_error, text = await call(server, "write_file", path="notes.txt", content="agent\n",
                                overwrite=True, expected_sha256=digest)
    assert is_error and text == "file changed since it was read"
    assert (disk.ws / "notes.txt").read_text() == "ONE\ntwo\nthree\n"


# -- write_file: what it does --------------------------------------------------------


async def test_write_file_creates_file_and_parents_and_returns_its_hash(disk, server):
    content = "héllo\nwörld\n"
    is_error, res = await call(server, "write_file", path="new/deep/f.txt", content=content)
    assert not is_error, res
    data = content.encode()
    assert res == {"path": "new/deep/f.txt", "created": True, "size": len(data),
                   "sha256": hashlib.sha256(data).hexdigest(), "kept_version": None, "note": None}
    assert (disk.ws / "new" / "deep" / "f.txt").read_bytes() == data
    assert temp_leftovers(disk.ws) == []


async def test_new_file_gets_the_umask_mode(disk, server):
    # The server runs in this process (a thread): a distinctive umask, not the usual 022,
    # so a hard-coded 0o644 (or any fixed mode) cannot pass.
    with umask(0o027):
        is_error, res = await call(server, "write_file", path="m.txt", content="x")
        assert not is_error, res
        is_error, res = await call(server, "write_file", path="d/n.txt", content="x")
        assert not is_error, res
    assert stat.S_IMODE((disk.ws / "m.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((disk.ws / "d" / "n.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((disk.ws / "d").stat().st_mode) == 0o750  # a created parent too


async def test_overwrite_replaces_content_keeps_mode_and_inode_changes(disk, server):
    target = disk.ws / "notes.txt"
    target.chmod(0o640)
    ino = target.stat().st_ino
    is_error, res = await call(server, "write_file", path="notes.txt", content="new\n",
                               overwrite=True)
    assert not is_error, res
    assert res["created"] is False
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != ino  # replaced by rename, not rewritten in place
    assert temp_leftovers(disk.ws) == []


async def test_setuid_bit_is_not_carried_over_to_the_new_content(disk, server):
    target = disk.ws / "notes.txt"
    target.chmod(0o4755)
    is_error, res = await call(server, "write_file", path="notes.txt", content="x",
                               overwrite=True)
    assert not is_error, res
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


async def test_matching_hash_allows_the_overwrite(disk, server):
    digest = hashlib.sha256((disk.ws / "notes.txt").read_bytes()).hexdigest()
    is_error, res = await call(server, "write_file", path="notes.txt", content="v2\n",
                               overwrite=True, expected_sha256=digest.upper())
    assert not is_error, res
    # the returned hash chains into the next guarded write
    is_error, res = await call(server, "write_file", path="notes.txt", content="v3\n",
                               overwrite=True, expected_sha256=res["sha256"])
    assert not is_error, res
    assert (disk.ws / "notes.txt").read_text() == "v3\n"


async def test_write_through_an_in_root_directory_link_lands_inside(disk, server):
    is_error, res = await call(server, "write_file", path="link_in/new.txt", content="in\n")
    assert not is_error, res
    assert res["path"] == "link_in/new.txt"
    assert (disk.ws / "dir" / "new.txt").read_text() == "in\n"


async def test_sourcecode_root_writes(disk, server):
    is_error, res = await call(server, "write_file", root="src", path="pkg/new.py",
                               content="Y = 2\n")
    assert not is_error, res
    assert (disk.src / "pkg" / "new.py").read_text() == "Y = 2\n"


async def test_content_at_exactly_the_limit_is_accepted(disk, server):
    is_error, res = await call(server, "write_file", path="full.txt", content="x" * MAX_READ)
    assert not is_error, res
    assert (disk.ws / "full.txt").stat().st_size == MAX_READ


async def test_malformed_hash_is_refused_at_the_edge(disk, server):
    before = disk.snapshot()
    is_error, text = await call(server, "write_file", path="notes.txt", content="x",
                                overwrite=True, expected_sha256="not-a-hash")
    assert is_error and "expected_sha256" in text
    assert disk.snapshot() == before


# -- create_directory ------------------------------------------------------------------

MKDIR_REFUSALS = [
    ({"root": "ref", "path": "d"}, "root 'ref' (role reference) grants [read], not write"),
    ({"path": "../outside/d"}, "path escapes the root"),
    ({"path": "link_out"}, "path escapes the root"),
    ({"path": "link_out/d"}, "path escapes the root"),
    ({"path": ".git/d"}, "matches deny pattern '.git'"),
    ({"path": "a/.venv/b"}, "matches deny pattern '.venv'"),
    ({"path": ".mcp-trash"}, "matches deny pattern '.mcp-trash'"),
    ({"path": "notes.txt"}, "'notes.txt' already exists and is not a directory"),
    ({"path": "notes.txt/d"}, "not a directory"),
    ({"path": "link_file"}, "not a directory"),
    ({"path": "/tmp/d"}, "invalid path: absolute"),
]


@pytest.mark.parametrize(("args", "message"), MKDIR_REFUSALS)
async def test_create_directory_refusal_changes_nothing(disk, server, args, message):
    assert message in await refusal(disk, server, "create_directory", **args)


async def test_create_directory_is_mkdir_p_and_idempotent(disk, server):
    is_error, res = await call(server, "create_directory", path="x/y/z")
    assert not is_error, res
    assert res == {"path": "x/y/z", "created": True}
    assert (disk.ws / "x" / "y" / "z").is_dir()
    assert await call(server, "create_directory", path="x/y/z") == (
        False, {"path": "x/y/z", "created": False})
    assert await call(server, "create_directory", path="link_in") == (
        False, {"path": "link_in", "created": False})
    assert await call(server, "create_directory", path="") == (
        False, {"path": "", "created": False})


# -- the tool surface follows the permissions -----------------------------------------------


@pytest.mark.parametrize(
    ("role", "permissions", "present", "absent"),
    [
        ("reference", None, set(), WRITE_TOOLS | {"delete"}),
        ("sourcecode", None, WRITE_TOOLS, {"delete"}),
        ("sourcecode", ["read"], set(), WRITE_TOOLS | {"delete"}),
        ("workspace", None, WRITE_TOOLS | {"delete"}, set()),
        ("workspace", ["read", "write"], WRITE_TOOLS, {"delete"}),
    ],
)
async def test_write_tools_exist_only_where_some_root_grants_them(
    write_config, tmp_path: Path, role, permissions, present, absent
):
    (tmp_path / "r").mkdir()
    options = {"permissions": permissions} if permissions else {}
    cfg = write_config(roots_toml(("r", tmp_path / "r", role, options), audit_log=None))
    with live_server(cfg) as srv:
        async with srv.session() as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
    assert present <= set(tools)
    assert not (absent & set(tools))
    for name in present:  # annotations are honest: these tools change the disk
        ann = tools[name].annotations
        assert ann is not None
        assert ann.read_only_hint is False and ann.open_world_hint is False
        assert tools[name].description and tools[name].output_schema
    if "create_directory" in present:
        ann = tools["create_directory"].annotations
        assert ann is not None
        assert ann.destructive_hint is False and ann.idempotent_hint is True
    for name in present - {"create_directory"}:
        ann = tools[name].annotations
        assert ann is not None
        assert ann.destructive_hint is True


# -- the lost-update guard, end to end with the read tools' hashes ---------------------------


async def test_hash_from_the_read_tools_guards_writes_and_edits(disk, server):
    async with server.session() as s:
        _, read = await call(s, "read_text_file", path="notes.txt")
        _, st = await call(s, "stat_path", path="notes.txt")
        assert read["sha256"] == st["sha256"]
        # Unchanged since read: the edit goes through, and its hash chains on.
        is_error, res = await call(s, "edit_file", path="notes.txt",
                                   edits=[{"old_text": "two", "new_text": "2"}],
                                   expected_sha256=read["sha256"])
        assert not is_error, res
        _, st = await call(s, "stat_path", path="notes.txt")
        assert st["sha256"] == res["sha256"]
        # A human edits the file meanwhile: the agent's stale hash is refused, twice.
        (disk.ws / "notes.txt").write_text("one\n2\nthree (human)\n")
        before = disk.snapshot()
        for tool, args in (
            ("write_file", {"content": "agent\n", "overwrite": True}),
            ("edit_file", {"edits": [{"old_text": "one", "new_text": "1"}]}),
        ):
            is_error, text = await call(s, tool, path="notes.txt",
                                        expected_sha256=res["sha256"], **args)
            assert is_error and text == "file changed since it was read", (tool, text)
        assert disk.snapshot() == before


async def test_the_short_hash_a_read_shows_guards_writes_and_edits(disk, server):
    """The text of a read shows the sha256's first 16 hex digits; expected_sha256 takes
    them as it takes the whole hash, and refuses a stale one alike."""
    async with server.session() as s:
        res = await s.call_tool("read_text_file", {"path": "notes.txt"})
        header = res.content[0].text.split("\n")[0]
        shown = header.rsplit("sha256 ", 1)[1].rstrip(")")
        assert len(shown) == 16 and res.structured_content["sha256"].startswith(shown)
        is_error, edited = await call(s, "edit_file", path="notes.txt",
                                      edits=[{"old_text": "two", "new_text": "2"}],
                                      expected_sha256=shown)
        assert not is_error, edited
        stat = await s.call_tool("stat_path", {"path": "notes.txt"})
        assert stat.content[0].text.endswith(f"sha256 {edited['sha256'][:16]}")
        is_error, res = await call(s, "write_file", path="notes.txt", content="v2\n",
                                   overwrite=True, expected_sha256=edited["sha256"][:20].upper())
        assert not is_error, res
        before = disk.snapshot()
        for stale in (shown, edited["sha256"][:16]):  # both name contents no longer there
            is_error, text = await call(s, "write_file", path="notes.txt", content="x\n",
                                        overwrite=True, expected_sha256=stale)
            assert is_error and text == "file changed since it was read", text
        assert disk.snapshot() == before


async def test_temp_files_are_invisible_to_listings_and_searches(disk, server):
    (disk.ws / ".mcp-tmp-deadbeef").write_text("partial content\n")
    (disk.ws / "dir" / ".mcp-tmp-cafe").write_text("partial content\n")
    async with server.session() as s:
        for tool, args in (
            ("list_directory", {"path": "", "recursive": True, "max_depth": 5}),
            ("search_files", {"pattern": "**"}),
            ("search_text", {"query": "partial"}),
        ):
            is_error, res = await call(s, tool, **args)
            assert not is_error, res
            assert ".mcp-tmp" not in str(res), (tool, res)
        is_error, text = await call(s, "read_text_file", path="dir/.mcp-tmp-cafe")
        assert is_error and "matches deny pattern '.mcp-tmp-*'" in text
