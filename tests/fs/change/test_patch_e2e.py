"""apply_patch through the MCP SDK client against a live server: the answer's structured
content and its text, a dry run, and refusals that leave every root as it was."""

from __future__ import annotations

from mcp.types import TextContent

from tests.fs.conftest import Disk, call, refusal
from tests.live import LiveServer, call_tool

PATCH = """\
*** Begin Patch
*** Add File: made/new.txt
+fresh
*** Update File: notes.txt
@@
 one
-two
+2
*** Update File: dir/a.txt
*** Move to: dir/sub/a2.txt
*** Delete File: dir/sub/b.txt
*** End Patch
"""


async def test_a_patch_through_the_sdk_client(disk: Disk, server: LiveServer) -> None:
    is_error, got = await call(server, "apply_patch", patch=PATCH)
    assert not is_error, got
    assert [(f["path"], f["change"], f["moved_from"]) for f in got["files"]] == [
        ("made/new.txt", "added", None), ("notes.txt", "modified", None),
        ("dir/sub/a2.txt", "moved", "dir/a.txt"), ("dir/sub/b.txt", "deleted", None)]
    assert got["files"][1]["matches"] == [{"line": 1, "match": "exact"}]
    assert got["dry_run"] is False and "-two\n+2\n" in got["diff"]
    assert (disk.ws / "made/new.txt").read_text() == "fresh\n"
    assert (disk.ws / "notes.txt").read_text() == "one\n2\nthree\n"
    assert (disk.ws / "dir/sub/a2.txt").read_text() == "alpha\n"
    assert not (disk.ws / "dir/a.txt").exists() and not (disk.ws / "dir/sub/b.txt").exists()
    kept = got["files"][1]["kept_version"]
    assert (disk.ws / kept).read_text() == "one\ntwo\nthree\n"


async def test_the_text_a_model_reads(disk: Disk, server: LiveServer) -> None:
    res = await call_tool(server, "apply_patch", {"patch": PATCH, "dry_run": True})
    text = next(c.text for c in res.content if isinstance(c, TextContent))
    assert text.splitlines()[:5] == [
        "dry run, would patch 4 file(s):",
        "  added made/new.txt",
        "  modified notes.txt: line 1 (exact)",
        "  moved dir/sub/a2.txt (from dir/a.txt)",
        "  deleted dir/sub/b.txt",
    ]
    assert "diff --git a/notes.txt b/notes.txt" in text
    assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"


async def test_refusals_leave_the_roots_as_they_were(disk: Disk, server: LiveServer) -> None:
    bad_hunk = PATCH.replace("-two", "-TWO")
    assert "'notes.txt' hunk 1 of 1 (patch line 5): its old lines not found" in await refusal(
        disk, server, "apply_patch", patch=bad_hunk)
    assert "grants [read], not write" in await refusal(
        disk, server, "apply_patch", patch=PATCH, root="ref")
    assert "grants [read, write], not delete" in await refusal(
        disk, server, "apply_patch", root="src",
        patch="*** Begin Patch\n*** Delete File: main.py\n*** End Patch\n")
    assert "matches deny pattern '.env.*'" in await refusal(
        disk, server, "apply_patch", patch=PATCH.replace("made/new.txt", ".env.new"))
    assert "patch line 2:" in await refusal(
        disk, server, "apply_patch", patch="*** Begin Patch\n*** Explode File: x\n*** End Patch\n")
