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

from app.tools.render_files import (
    Data,
    create_directory,
    delete,
    edit_file,
    list_directory,
    list_roots,
    move_file,
    read_media_file,
    read_multiple_files,
    read_text_file,
    reload_config,
    search_files,
    search_text,
    stat_path,
    write_file,
)
from app.tools.render_git import git_diff, git_log, git_show

# Values shown as they are: a file's lines and a diff are the point of the answer.
VERBATIM = frozenset({"content", "diff", "message"})
# What would start a new line (or overwrite one) in a reader's view: a file named
# "a\n[more: ...]" must stay one entry, not forge a line of the answer.
_BREAKS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F)}
_BREAKS |= {0x0A: "\\n", 0x0D: "\\r", 0x85: "\\x85", 0x2028: "\\u2028",
            0x2029: "\\u2029"}
CUT_MARK = "\n[... text cut at max_output_chars; the structured result is complete]"


# By result type name (the tools' return models), so this module imports no tool.
RENDERERS: dict[str, Callable[[Data], str]] = {
    "ListResult": list_directory,
    "StatResult": stat_path,
    "ReadTextResult": read_text_file,
    "ReadManyResult": read_multiple_files,
    "MediaInfo": read_media_file,
    "SearchFilesResult": search_files,
    "SearchTextResult": search_text,
    "EditResult": edit_file,
    "WriteResult": write_file,
    "DirectoryResult": create_directory,
    "MoveResult": move_file,
    "DeleteResult": delete,
    "ListRootsResult": list_roots,
    "ReloadResult": reload_config,
    "LogResult": git_log,
    "ShowResult": git_show,
    "DiffResult": git_diff,
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


def render(kind: str, data: Data, cap: int | None = None) -> str | None:
    """The readable text for a result of type `kind`, or None when there is no renderer."""
    fn = RENDERERS.get(kind)
    if fn is None:
        return None
    text = fn(one_line(data))
    if cap is not None and len(text) > cap:
        text = text[: max(0, cap - len(CUT_MARK))] + CUT_MARK
    return text
