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
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

Data = dict[str, Any]
# Values shown as they are: a file's lines and a diff are the point of the answer.
VERBATIM = frozenset({"content", "diff", "message"})
# What would start a new line (or overwrite one) in a reader's view: a file named
# "a\n[more: ...]" must stay one entry, not forge a line of the answer.
_BREAKS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F)}
_BREAKS |= {0x0A: "\\n", 0x0D: "\\r", 0x85: "\\x85", 0x2028: "\\u2028",
            0x2029: "\\u2029"}
CUT_MARK = "\n[... text cut at max_output_chars; the structured result is complete]"


def _footer(data: Data, more: str | None) -> list[str]:
    """The last line: how to continue, and what was cut or skipped."""
    parts = []
    note = data.get("note")
    if more and not (note and more in note):
        parts.append(f"more: call again with {more}")
    if note:
        parts.append(note)
    return [f"[{'; '.join(parts)}]"] if parts else []


def _where(root: str | None, path: str) -> str:
    return f"{root}:{path or '.'}" if root else (path or ".")


def _entry(name: str, kind: str, size: Any) -> str:
    if kind == "dir":
        return name + "/"
    if kind == "symlink":
        return name + "@"
    if kind == "file":
        return f"{name} {size}" if size is not None else name
    return f"{name} ({kind})"


def list_directory(data: Data) -> str:
    path = data.get("path", "")
    entries = data.get("entries", [])
    first, last = data["offset"] + 1, data["offset"] + len(entries)
    span = f"entries {first}-{last}" if entries else "no entries"
    lines = [f"{_where(data.get('root'), path)} ({span}; sizes in bytes, folders end in /, "
             "symlinks in @)"]
    group = path
    for e in entries:
        parent = posixpath.dirname(e["path"])
        if parent != group:
            group = parent
            lines.append(f"{parent}/:")
        indent = "  " if group != path else ""
        lines.append(indent + _entry(e["name"], e["type"], e.get("size")))
    if data.get("skipped_links"):
        lines.append(f"[{data['skipped_links']} symlink(s) not followed]")
    more = f"offset={data['next_offset']}" if data.get("has_more") else None
    return "\n".join(lines + _footer(data, more))


def stat_path(data: Data) -> str:
    bits = [data["type"]]
    if data.get("size") is not None:
        bits.append(f"{data['size']} bytes")
    if data.get("type") == "file":
        bits.append("text" if data.get("is_text") else "binary")
    bits.append(f"modified {data.get('modified')}")
    if data.get("created"):
        bits.append(f"created {data['created']}")
    bits.append(f"mode {data.get('mode')}")
    if data.get("sha256"):
        bits.append(f"sha256 {data['sha256']}")
    return f"{data['path']}: " + ", ".join(bits)


def _numbered(content: str) -> list[str]:
    """`content`'s `120 | text` lines as `120<TAB>text` (the text itself untouched)."""
    out = []
    for line in content.split("\n") if content else []:
        number, sep, text = line.partition(" | ")
        out.append(f"{number}\t{text}" if sep and number.isdigit() else line)
    return out


def _read_header(data: Data) -> str:
    if data.get("start_beyond_eof"):
        span = f"no lines: start_line {data['start_line']} is past the end"
    elif data.get("end_line") is None:
        span = "no lines"
    else:
        span = f"lines {data['start_line']}-{data['end_line']}"
    if data.get("total_lines") is not None:
        span += f" of {data['total_lines']}"
    extra = f", sha256 {data['sha256']}" if data.get("sha256") else ""
    return f"{data['path']} ({span}; {data['encoding']}{extra})"


def read_text_file(data: Data) -> str:
    more = f"start_line={data['next_start_line']}" if data.get("has_more") else None
    return "\n".join([_read_header(data), *_numbered(data["content"]), *_footer(data, more)])


def read_multiple_files(data: Data) -> str:
    lines: list[str] = []
    for item in data.get("results", []):
        got = item.get("file")
        if got is None:
            name = item.get("path") or "paths[{}]".format(item["index"])
            lines.append(f"== {name}: {item.get('error')}")
            continue
        lines.append("== " + _read_header(got))
        lines += _numbered(got["content"])
        if got.get("has_more"):
            lines.append(f"[more: read_text_file with start_line={got['next_start_line']}]")
    return "\n".join(lines + _footer(data, None))


def read_media_file(data: Data) -> str:
    return f"{data['path']}: {data['mime_type']}, {data['size']} bytes, sha256 {data['sha256']}"


def _search_footer(data: Data, counts: list[str]) -> list[str]:
    more = f"offset={data['next_offset']}" if data.get("has_more") else None
    out = _footer(data, more)
    if data.get("truncated") and not data.get("note"):
        out.append("[the search stopped before the end of the tree]")
    if counts:
        out.append(f"[{', '.join(counts)}]")
    return out


def search_files(data: Data) -> str:
    matches = data.get("matches", [])
    lines = [f"{len(matches)} match(es), paths relative to the root"
             f"{' from ' + str(data['offset'] + 1) if data.get('offset') else ''}:"]
    lines += [_entry(m["path"], m["type"], m.get("size")) for m in matches]
    skipped = [f"{data['skipped_links']} symlink(s) not followed"] if data.get(
        "skipped_links") else []
    return "\n".join(lines + _search_footer(data, skipped))


def search_text(data: Data) -> str:
    lines: list[str] = []
    if "files" in data:  # output_mode="files_with_matches"
        lines.append(f"{len(data['files'])} file(s) with matches:")
        lines += list(data["files"])
    elif "counts" in data:  # output_mode="count"
        lines.append(f"matches per file ({len(data['counts'])} file(s)):")
        lines += [f"{c['path']}: {c['count']}" for c in data["counts"]]
    else:
        matches = data.get("matches", [])
        lines.append(f"{len(matches)} matching line(s), grouped by file:")
        current = None
        for m in matches:
            if m["path"] != current:
                current = m["path"]
                lines.append(current)
            first = m["line"] - len(m.get("before") or [])
            for i, text in enumerate(m.get("before") or []):
                lines.append(f"  {first + i}- {text}")
            lines.append(f"  {m['line']}: {m['preview']}")
            for i, text in enumerate(m.get("after") or []):
                lines.append(f"  {m['line'] + 1 + i}- {text}")
    skipped = []
    if data.get("skipped_too_large"):
        skipped.append(f"{data['skipped_too_large']} too large")
    if data.get("skipped_binary"):
        skipped.append(f"{data['skipped_binary']} binary")
    if data.get("skipped_links"):
        skipped.append(f"{data['skipped_links']} symlink(s)")
    counts = [f"files skipped: {', '.join(skipped)}"] if skipped else []
    return "\n".join(lines + _search_footer(data, counts))


def edit_file(data: Data) -> str:
    if data.get("dry_run"):
        head = f"dry run on {data['path']}:"
    elif data.get("written"):
        sha = f" (sha256 {data['sha256']})" if data.get("sha256") else ""
        head = f"edited {data['path']}{sha}:"
    else:
        head = f"{data['path']} unchanged: the edits change nothing"
    return "\n".join([head, data.get("diff", "").rstrip("\n"), *_footer(data, None)])


def write_file(data: Data) -> str:
    did = "created" if data.get("created") else "replaced"
    return f"{did} {data['path']}: {data['size']} bytes, sha256 {data['sha256']}"


def create_directory(data: Data) -> str:
    return (f"created {data['path']}/" if data.get("created")
            else f"{data['path']}/ already exists (nothing changed)")


def move_file(data: Data) -> str:
    replaced = " (replaced the file that was there)" if data.get("replaced") else ""
    return f"moved {data['type']} {data['source']} -> {data['destination']}{replaced}"


def delete(data: Data) -> str:
    return (f"deleted {data['path']}: moved to the trash as {data['trashed_to']} "
            "(the owner can restore it; you cannot reach it)")


def _root_line(r: Data) -> str:
    default = ", default" if r.get("default") else ""
    return (f"{r['name']}: {r['role']}, {'/'.join(r['permissions'])}{default}, "
            f"reads files up to {r['max_read_bytes']} bytes")


def list_roots(data: Data) -> str:
    return "\n".join(_root_line(r) for r in data.get("roots", []))


def reload_config(data: Data) -> str:
    lines = [f"config reloaded (generation {data['generation']}); roots:"]
    lines += ["  " + _root_line(r) for r in data.get("roots", [])]
    lines.append("tools: " + ", ".join(data.get("tools", [])))
    return "\n".join(lines)


_CHANGE = {"added": "A", "deleted": "D", "modified": "M", "renamed": "R",
           "type_changed": "T"}


def _change_line(f: Data) -> str:
    mark = _CHANGE.get(f["change"], "?")
    return f"{mark} {f['old_path']} -> {f['path']}" if f.get("old_path") else f"{mark} {f['path']}"


def git_log(data: Data) -> str:
    commits = data.get("commits", [])
    where = f" -- {data['path']}" if data.get("path") else ""
    first = data["offset"] + 1
    span = f"commits {first}-{first + len(commits) - 1}" if commits else "no commits"
    lines = [f"{data['root']}: git log {data['commit'][:12]}{where} ({span}, newest first)"]
    lines += [f"{c['id'][:12]} {c['date'][:10]} {c['author']}  {c['subject']}" for c in commits]
    more = f"cursor={data['next_cursor']}" if data.get("next_cursor") else None
    return "\n".join(lines + _footer(data, more))


def git_show(data: Data) -> str:
    got = data.get("file")
    if got is not None:
        head = f"{data['root']}: {got['path']} at {data['id'][:12]} ({data['message']})"
        more = f"start_line={got['next_start_line']}" if got.get("has_more") else None
        return "\n".join([head, _read_header(got), *_numbered(got["content"]),
                          *_footer(got, more)])
    lines = [f"commit {data['id']}", f"Author: {data['author']}", f"Date:   {data['date']}"]
    if len(data.get("parents", [])) > 1:
        lines.append("Merge:  " + " ".join(p[:12] for p in data["parents"]))
    lines.append("")
    lines += ["    " + line for line in data["message"].rstrip("\n").split("\n")]
    lines.append("")
    files = data.get("files", [])
    lines.append(f"files changed ({data['offset'] + 1}-{data['offset'] + len(files)}):"
                 if files else "no files changed (that may be shown)")
    lines += [_change_line(f) for f in files]
    more = f"offset={data['next_offset']}" if data.get("has_more") else None
    return "\n".join(lines + _footer(data, more))


def git_diff(data: Data) -> str:
    target = data["target"][:12] if data.get("target") else "working tree"
    where = f" -- {data['path']}" if data.get("path") else ""
    lines = [f"{data['root']}: git diff {data['base'][:12]}..{target}{where}"]
    for f in data.get("files", []):
        counts = f" (+{f['added']} -{f['removed']})" if f.get("added") is not None else ""
        lines.append(f"=== {_change_line(f)}{counts}" + (f": {f['note']}" if f.get("note") else ""))
        if f.get("diff"):
            lines.append(f["diff"])
    if not data.get("files"):
        lines.append("no differences (that may be shown)")
    more = f"offset={data['next_offset']}" if data.get("has_more") else None
    return "\n".join(lines + _footer(data, more))


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
