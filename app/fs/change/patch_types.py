"""The parsed form of a patch, shared by its two readers (`patch_parse`, `patch_unified`)
and the applier: a `Patch` of `FilePatch` sections, each of `Hunk`s; and the bounds."""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import BadArgument

MAX_PATCH_BYTES = 4 << 20  # 4 MiB of UTF-8 (at least 1 MiB must be accepted)
MAX_FILES = 250  # file sections in one patch (each holds a few descriptors while applied)
MAX_HUNKS = 10_000  # hunks in one patch, all files together

ADD, DELETE, UPDATE = "add", "delete", "update"

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD_FILE, DELETE_FILE, UPDATE_FILE = "*** Add File:", "*** Delete File:", "*** Update File:"
MOVE_TO, END_OF_FILE = "*** Move to:", "*** End of File"
FENCE = "```"


@dataclass(frozen=True)
class Hunk:
    """One hunk: its old lines (context and removed, in order) and its new lines (context
    and added), without their newlines; `old_eol`/`new_eol` false when that side's last line
    has none (unified `\\ No newline at end of file`)."""

    line: int  # where it starts in the patch, 1-based
    old: tuple[str, ...]
    new: tuple[str, ...]
    old_eol: bool = True
    new_eol: bool = True
    scopes: tuple[str, ...] = ()  # V4A `@@ scope` lines, outermost first
    old_start: int | None = None  # unified: the header's 1-based starts (0: an empty side)
    new_start: int | None = None
    at_end: bool = False  # V4A `*** End of File`: the hunk ends where the file ends

    @property
    def old_text(self) -> str:
        return _text(self.old, self.old_eol)

    @property
    def new_text(self) -> str:
        return _text(self.new, self.new_eol)


@dataclass(frozen=True)
class FilePatch:
    """What one file section does. `add`: `content` is the new file; `delete`: the hunks,
    when given (unified), are the content expected there; `update`: the hunks in order, and
    `move_to` the new path (no hunk: a rename)."""

    op: str  # ADD | DELETE | UPDATE
    path: str
    line: int  # the patch line of the section's header
    hunks: tuple[Hunk, ...] = ()
    move_to: str | None = None

    @property
    def content(self) -> str:
        return "".join(h.new_text for h in self.hunks)


@dataclass(frozen=True)
class Patch:
    format: str  # "v4a" | "unified"
    files: tuple[FilePatch, ...]


def _text(lines: tuple[str, ...], eol: bool) -> str:
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if eol else "")


def bad(line: int, why: str) -> BadArgument:
    return BadArgument(f"patch line {line}: {why}")
