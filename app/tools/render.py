"""The text item a model reads: one function per result type.

Structured content (complete, valid against the output schema) is for
programs; the text item is for the model, and JSON is a poor fit there: a file
inside a JSON string arrives with its quotes and backslashes escaped (which
invites a wrong `old_text` in the next edit), and every listing entry repeats
its keys. So each result is rendered the way a person would print it:

- files: `12<TAB>line` per line (`cat -n`), verbatim;
- listings: a header naming the folder, then one line per entry (`name size`,
  `name/` for a folder, `name@` for a symlink), `ls -R`-style group lines
  when a recursive listing moves to another folder;
- searches: one line per hit (`path size`; `path` then `  12: preview`);
- the last line, in brackets, says how to continue and what was cut.

A result type without a renderer here (or `text_format = "json"` in the
config) gets the compact JSON, as before. `search`/`fetch` never come here:
OpenAI's published shape is one text item holding exactly the JSON.

This module picks the renderer and keeps every string but a file's text on one
line (`one_line`); the renderers are in `render_files` and `render_git`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from app.fs.change.copy import CopyResult
from app.fs.change.edit import EditResult
from app.fs.change.move import MoveResult
from app.fs.change.patch import PatchResult
from app.fs.change.trash import DeleteResult
from app.fs.change.write import DirectoryResult, WriteResult
from app.fs.code.outline import OutlineResult
from app.fs.history.diff import DiffResult
from app.fs.history.log import LogResult
from app.fs.history.show import ShowResult
from app.fs.reading.listing import ListResult, StatResult
from app.fs.reading.media import MediaInfo
from app.fs.reading.read import ReadManyResult, ReadTextResult
from app.fs.search.results import SearchFilesResult, SearchTextResult
from app.tools import render_files as files
from app.tools import render_git as git
from app.tools.render_files import Data
from app.tools.roots import ListRootsResult, ReloadResult

# Values shown as they are: a file's lines and a diff are the point of the answer.
VERBATIM = frozenset({"content", "diff", "message"})
# What would start a new line (or overwrite one) in a reader's view: a file named
# "a\n[more: ...]" must stay one entry, not forge a line of the answer.
_BREAKS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F)}
_BREAKS |= {0x0A: "\\n", 0x0D: "\\r", 0x85: "\\x85", 0x2028: "\\u2028",
            0x2029: "\\u2029"}
CUT_MARK = "\n[... text cut at max_output_chars; the structured result is complete]"


# By result class (the models the tools declare), never by a class's name: another
# model that happens to share a name must not be printed by this one's renderer.
RENDERERS: dict[type[BaseModel], Callable[[Data], str]] = {
    ListResult: files.list_directory,
    StatResult: files.stat_path,
    ReadTextResult: files.read_text_file,
    ReadManyResult: files.read_multiple_files,
    MediaInfo: files.read_media_file,
    SearchFilesResult: files.search_files,
    SearchTextResult: files.search_text,
    OutlineResult: files.outline,
    EditResult: files.edit_file,
    PatchResult: files.apply_patch,
    WriteResult: files.write_file,
    DirectoryResult: files.create_directory,
    MoveResult: files.move_file,
    CopyResult: files.copy_file,
    DeleteResult: files.delete,
    ListRootsResult: files.list_roots,
    ReloadResult: files.reload_config,
    LogResult: git.git_log,
    ShowResult: git.git_show,
    DiffResult: git.git_diff,
}


def one_line(value: Any) -> Any:
    """`value` with every string that is not a file's text kept to one line (escaped)."""
    if isinstance(value, str):
        return value.translate(_BREAKS) if not value.isprintable() else value
    if isinstance(value, list):
        return [one_line(x) for x in value]
    if isinstance(value, dict):
        return {k: v if k in VERBATIM else one_line(v) for k, v in value.items()}
    return value


def render(kind: type[BaseModel], data: Data, cap: int | None = None) -> str | None:
    """The readable text for `data`, a result of class `kind`, or None when that class
    has no renderer."""
    fn = RENDERERS.get(kind)
    if fn is None:
        return None
    text = fn(one_line(data))
    if cap is not None and len(text) > cap:
        text = text[: max(0, cap - len(CUT_MARK))] + CUT_MARK
    return text
