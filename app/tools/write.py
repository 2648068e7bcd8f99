"""Write tools (permission `write`): write_file, edit_file, create_directory, move_file,
copy_file.

Registered only when some root grants write. Each handler only bounds its
arguments and hands the work to `app.fs`; see there for the guarantees.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field

from app.budget import BYTES_PER_CHAR
from app.fs.change import copy as copy_mod
from app.fs.change import edit as edit_mod
from app.fs.change import move as move_mod
from app.fs.change import write as write_mod
from app.fs.change.copy import CopyResult
from app.fs.change.edit import EditResult, TextEdit
from app.fs.change.move import MoveResult
from app.fs.change.write import DirectoryResult, WriteResult
from app.tools.base import Call, PathArg, RootArg, run, tool
from app.tools.metered import metered

OtherRoot = Annotated[
    str | None, Field(default=None, max_length=64, description="Overrides root for this side.")
]

# A hard ceiling at the edge; the real bound is the root's max_read_bytes, checked in app.fs.
MAX_CONTENT_CHARS = 1 << 28
MAX_EDITS = 200

Sha256Arg = Annotated[
    str | None,
    Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{64}$",
        description="sha256 from stat_path or read_text_file: refuse if the file changed since.",
    ),
]


class EditArg(TextEdit):
    model_config = ConfigDict(extra="forbid")  # a misspelled `oldText` is refused, not dropped

    old_text: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="Exact text; must occur once."
    )
    new_text: str = Field(max_length=MAX_CONTENT_CHARS, description="Replacement text.")


# Idempotent: the same call again leaves the disk as the first left it (the same
# content, or a refusal because the file now exists).
@tool(perm="write", title="Write file", read_only=False, destructive=True, idempotent=True)
async def write_file(
    ctx: Context,
    path: PathArg,
    content: Annotated[
        str, Field(max_length=MAX_CONTENT_CHARS, description="The whole new content (UTF-8).")
    ],
    root: RootArg = None,
    overwrite: Annotated[
        bool, Field(description="Replace an existing file; without it an existing file is kept.")
    ] = False,
    expected_sha256: Sha256Arg = None,
) -> Annotated[CallToolResult, WriteResult]:
    """Create a file with the given text (UTF-8), creating missing parent folders. An
    existing file is replaced only with overwrite=true; pass expected_sha256 (from
    stat_path or read_text_file) so a file someone else changed since you read it is not
    overwritten. The write is atomic: readers see the old or the new file, never a mix.
    Content is limited to the root's max_read_bytes. Returns the new sha256."""

    def work(call: Call) -> WriteResult:
        r = call.root(root)
        # Never more than the root's max_read_bytes is written (a larger content is refused).
        bound = min(BYTES_PER_CHAR * len(content), r.max_read_bytes)
        return metered(
            call, r, bound, op="write_file", rel=path,
            work=lambda: write_mod.write_file(
                r, path, content, overwrite=overwrite, expected_sha256=expected_sha256
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
        Field(min_length=1, max_length=MAX_EDITS, description="Replacements, applied in order."),
    ],
    root: RootArg = None,
    dry_run: Annotated[bool, Field(description="Return the diff without writing.")] = False,
    expected_sha256: Sha256Arg = None,
) -> Annotated[CallToolResult, EditResult]:
    """Replace exact text in a text file: each edit's old_text must occur exactly once in
    the text left by the edits before it (the error says 0 or how many times). All edits
    apply or none do. Returns a unified diff; dry_run=true shows it without writing. The
    file keeps its encoding and line endings. Pass expected_sha256 to refuse if the file
    changed since you read it."""

    def work(call: Call) -> EditResult:
        r = call.root(root)
        # A dry run writes nothing and is free; the new content is at most max_read_bytes.
        return metered(
            call, r, 0 if dry_run else r.max_read_bytes, op="edit_file", rel=path,
            work=lambda: edit_mod.edit_file(
                r, path, edits, max_output_chars=call.snapshot.limits.max_output_chars,
                dry_run=dry_run, expected_sha256=expected_sha256, control=call,
            ),
            used=lambda done: done.size if done.written else 0,
        )

    return await run(ctx, work)


@tool(
    perm="write", title="Create directory", read_only=False, destructive=False, idempotent=True
)
async def create_directory(
    ctx: Context, path: PathArg, root: RootArg = None
) -> Annotated[CallToolResult, DirectoryResult]:
    """Create a directory and any missing parents, like `mkdir -p`; an existing directory
    is not an error (created=false)."""

    def work(call: Call) -> DirectoryResult:
        return write_mod.create_directory(call.root(root), path)

    return await run(ctx, work)


# Not idempotent: a retry moves whatever has appeared at `source` since.
@tool(perm="write", title="Move or rename", read_only=False, destructive=True, idempotent=False)
async def move_file(
    ctx: Context,
    source: PathArg,
    destination: PathArg,
    root: RootArg = None,
    overwrite: Annotated[
        bool, Field(description="Replace an existing destination file (never a directory).")
    ] = False,
) -> Annotated[CallToolResult, MoveResult]:
    """Move or rename a file, directory or symlink within one root (both paths relative to
    it). The destination's folder must exist. An existing destination is replaced only
    with overwrite=true, and only if it is a file. A symlink moves as itself. The root
    itself cannot be moved."""

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
    overwrite: Annotated[bool, Field(description="Replace an existing destination file.")] = False,
) -> Annotated[CallToolResult, CopyResult]:
    """Copy a file or folder byte for byte, within a root or across roots; the
    destination's folder must exist and a folder is copied only to a new name."""

    def work(call: Call) -> CopyResult:
        src, dst = call.root(source_root or root), call.root(destination_root or root)
        names = src.name if src.name == dst.name else (src.name, dst.name)

        def pay(nbytes: int, rel: str) -> None:
            call.charge(names, nbytes, op="copy_file", rel=rel)

        return copy_mod.copy_file(src, source, dst, destination, overwrite=overwrite,
                                  control=call, pay=pay)

    return await run(ctx, work)
