"""Write tools (permission `write`): write_file, edit_file, apply_patch, create_directory,
move_file, copy_file.

Registered only when some root grants write. Each handler only bounds its
arguments and hands the work to `app.fs`; see there for the guarantees.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import AfterValidator, ConfigDict, Field

from app.budget import BYTES_PER_CHAR
from app.fs.change import copy as copy_mod
from app.fs.change import edit as edit_mod
from app.fs.change import move as move_mod
from app.fs.change import patch as patch_mod
from app.fs.change import write as write_mod
from app.fs.change.copy import CopyResult
from app.fs.change.edit import EditResult, TextEdit
from app.fs.change.move import MoveResult
from app.fs.change.patch import PatchResult
from app.fs.change.patch_types import MAX_PATCH_BYTES
from app.fs.change.write import DirectoryResult, WriteResult
from app.fs.control import Pay
from app.fs.hashing import SHORT, is_hash_or_prefix
from app.messages import shown
from app.tools.base import Call, PathArg, RootArg, run, tool
from app.tools.metered import metered, paid_change

OtherRoot = Annotated[str | None, Field(default=None, max_length=64)]  # default: root

# A hard ceiling at the edge; the real bound is the root's max_read_bytes, checked in app.fs.
MAX_CONTENT_CHARS = 1 << 28
MAX_EDITS = 200



def _hash_or_prefix(value: str | None) -> str | None:
    if value is not None and not is_hash_or_prefix(value):
        raise ValueError(
            f"must be the file's sha256 or its first {SHORT} or more hex digits "
            f"(got {shown(value)})"
        )
    return value


# The sha256 a read or a write answered, whole or short (`app.fs.hashing.matches`). No
# description: the name and the sha256 in every read's answer say what it is for.
Sha256Arg = Annotated[str | None, Field(default=None, max_length=64),
                      AfterValidator(_hash_or_prefix)]


class EditArg(TextEdit):
    model_config = ConfigDict(extra="forbid")  # a misspelled `oldText` is refused, not dropped

    old_text: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    new_text: str = Field(max_length=MAX_CONTENT_CHARS)


# Idempotent: the same call again leaves the disk as the first left it (the same
# content, or a refusal because the file now exists).
@tool(perm="write", title="Write file", read_only=False, destructive=True, idempotent=True)
async def write_file(
    ctx: Context,
    path: PathArg,
    content: Annotated[str, Field(max_length=MAX_CONTENT_CHARS)],
    root: RootArg = None,
    overwrite: bool = False,
    expected_sha256: Sha256Arg = None,
) -> Annotated[CallToolResult, WriteResult]:
    """Write a whole text file, creating missing folders; replacing a file needs
    overwrite=true."""

    def work(call: Call) -> WriteResult:
        r = call.root(root)
        # Never more than the root's max_read_bytes is written (a larger content is refused).
        bound = min(BYTES_PER_CHAR * len(content), r.max_read_bytes)
        return metered(
            call, r, bound, op="write_file", rel=path,
            work=lambda: write_mod.write_file(
                r, path, content, overwrite=overwrite, expected_sha256=expected_sha256,
                control=call,
            ),
            used=lambda done: done.size,
        )

    return await run(ctx, work)


# Not idempotent: applied twice, an edit whose new_text still holds its old_text changes
# the file again.
@tool(perm="write", title="Edit file", read_only=False, destructive=True, idempotent=False)
async def edit_file(
    ctx: Context,
    path: PathArg,
    edits: Annotated[
        list[EditArg],
        Field(min_length=1, max_length=MAX_EDITS),
    ],
    root: RootArg = None,
    dry_run: bool = False,
    expected_sha256: Sha256Arg = None,
) -> Annotated[CallToolResult, EditResult]:
    """Replace text in a file. Each old_text must match one place: exact, else ignoring
    line ends, whitespace, look-alike punctuation or read line numbers."""

    def work(call: Call) -> EditResult:
        r = call.root(root)

        def edit(pay: Pay | None) -> EditResult:
            return edit_mod.edit_file(
                r, path, edits, max_output_chars=call.snapshot.limits.max_output_chars,
                dry_run=dry_run, expected_sha256=expected_sha256, control=call, pay=pay,
            )

        def without_diff(done: EditResult, spent: str) -> EditResult:
            note = "; ".join(filter(None, [done.note, f"the diff was left out: {spent}; "
                                                      "the edit was written"]))
            return done.model_copy(update={"diff": "", "diff_truncated": True, "note": note})

        return paid_change(call, r, op="edit_file", rel=path, dry_run=dry_run, change=edit,
                           diff=lambda got: got.diff, left_out=without_diff)

    return await run(ctx, work)


# Not idempotent: applied twice, a patch that adds a file is refused, one that only edits may
# apply again where its context still matches.
@tool(perm="write", title="Apply patch", read_only=False, destructive=True, idempotent=False)
async def apply_patch(
    ctx: Context,
    patch: Annotated[str, Field(min_length=1, max_length=MAX_PATCH_BYTES)],
    root: RootArg = None,
    dry_run: bool = False,
) -> Annotated[CallToolResult, PatchResult]:
    """Apply a V4A (*** Begin Patch) or unified-diff patch to files; all or nothing."""

    def work(call: Call) -> PatchResult:
        r = call.root(root)
        cap = call.snapshot.limits.max_output_chars

        def apply(pay: Pay | None) -> PatchResult:
            done, steps = patch_mod.apply_patch(r, patch, dry_run=dry_run, control=call, pay=pay)
            return patch_mod.with_diff(done, steps, cap, call)

        def without_diff(done: PatchResult, spent: str) -> PatchResult:
            return done.model_copy(update={"diff": f"[the diff was left out: {spent}; the "
                                                   "patch was applied]\n"})

        return paid_change(call, r, op="apply_patch", rel="", dry_run=dry_run, change=apply,
                           diff=lambda got: got.diff, left_out=without_diff)

    return await run(ctx, work)


@tool(
    perm="write", title="Create directory", read_only=False, destructive=False, idempotent=True
)
async def create_directory(
    ctx: Context, path: PathArg, root: RootArg = None
) -> Annotated[CallToolResult, DirectoryResult]:
    """Create a folder and any missing parents, like mkdir -p."""

    def work(call: Call) -> DirectoryResult:
        return write_mod.create_directory(call.root(root), path, control=call)

    return await run(ctx, work)


# Not idempotent: a retry moves whatever has appeared at `source` since.
@tool(perm="write", title="Move or rename", read_only=False, destructive=True, idempotent=False)
async def move_file(
    ctx: Context,
    source: PathArg,
    destination: PathArg,
    root: RootArg = None,
    overwrite: bool = False,
) -> Annotated[CallToolResult, MoveResult]:
    """Move or rename a file or folder within a root; replacing a file needs
    overwrite=true."""

    def work(call: Call) -> MoveResult:
        return move_mod.move_file(call.root(root), source, destination, overwrite=overwrite)

    return await run(ctx, work)


# Not idempotent: a retry with overwrite=true copies whatever the source holds by then.
@tool(perm="write", title="Copy", read_only=False, destructive=True, idempotent=False)
async def copy_file(
    ctx: Context,
    source: PathArg,
    destination: PathArg,
    root: RootArg = None,
    source_root: OtherRoot = None,
    destination_root: OtherRoot = None,
    overwrite: bool = False,
) -> Annotated[CallToolResult, CopyResult]:
    """Copy a file or folder byte for byte, within or across roots (source_root,
    destination_root); replacing a file needs overwrite=true."""

    def work(call: Call) -> CopyResult:
        src, dst = call.root(source_root or root), call.root(destination_root or root)
        names = src.name if src.name == dst.name else (src.name, dst.name)

        def pay(nbytes: int, rel: str) -> None:
            call.charge(names, nbytes, op="copy_file", rel=rel)

        return copy_mod.copy_file(src, source, dst, destination, overwrite=overwrite,
                                  control=call, pay=pay)

    return await run(ctx, work)
