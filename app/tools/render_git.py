"""The text of the history tools' results: `git log`, `git show`, `git diff`.

Dispatched by `app.tools.render`; a file at a commit reads like `read_text_file`.
"""

from __future__ import annotations

from app.tools.render_files import Data, footer, numbered, read_header

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
    return "\n".join(lines + footer(data, more))


def git_show(data: Data) -> str:
    got = data.get("file")
    if got is not None:
        head = f"{data['root']}: {got['path']} at {data['id'][:12]} ({data['message']})"
        more = f"start_line={got['next_start_line']}" if got.get("has_more") else None
        return "\n".join([head, read_header(got), *numbered(got["content"]),
                          *footer(got, more)])
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
    return "\n".join(lines + footer(data, _more(data)))


def _more(data: Data) -> str | None:
    if not data.get("has_more"):
        return None
    if data.get("next_cursor"):
        return f"cursor={data['next_cursor']}"
    return f"offset={data['next_offset']}"


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
    return "\n".join(lines + footer(data, _more(data)))
