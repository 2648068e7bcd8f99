"""The text of the file, listing, search, write and admin results (`app.tools.render`).

Shared with `render_git`: `footer` (the bracketed last line), `read_header`,
`numbered` (a file's lines after their numbers) and `short` (a sha256 as shown).
"""

from __future__ import annotations

import posixpath
from typing import Any

from app.fs.hashing import short

Data = dict[str, Any]


def footer(data: Data, more: str | None) -> list[str]:
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


def _span(data: Data, count: int) -> str:
    """`22 entries` for a whole answer, `entries 101-200` for a page of a longer one."""
    if not count:
        return "no entries"
    if data.get("offset") or data.get("has_more"):
        return f"entries {data['offset'] + 1}-{data['offset'] + count}"
    return f"{count} entries" if count > 1 else "1 entry"


def list_directory(data: Data) -> str:
    path = data.get("path", "")
    entries = data.get("entries", [])
    lines = [f"{_where(data.get('root'), path)} ({_span(data, len(entries))}; sizes in bytes)"]
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
    return "\n".join(lines + footer(data, more))


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
        bits.append(f"sha256 {short(data['sha256'])}")
    return f"{data['path']}: " + ", ".join(bits)


def numbered(content: str) -> list[str]:
    """`content`'s `120 | text` lines as `120 text`, numbers right-aligned to the widest
    (the text itself untouched). One space costs fewer tokens than a tab or a bar: 1.22x
    the bare text for a file of Python, against 1.29x and 1.31x (docs/measured.md)."""
    split = [line.partition(" | ") for line in content.split("\n")] if content else []
    width = max((len(n) for n, sep, _ in split if sep and n.lstrip("-").isdigit()), default=0)
    return [f"{n:>{width}} {text}" if sep and n.lstrip("-").isdigit() else n + sep + text
            for n, sep, text in split]


def read_header(data: Data) -> str:
    """`path (lines 1-20 of 120; sha256 0f343b0931126a20)`: what the model uses, no more
    (the encoding only when it is not UTF-8; the sha256 short, as expected_sha256 takes it)."""
    if data.get("start_beyond_eof"):
        span = f"no lines: start_line {data['start_line']} is past the end"
    elif data.get("end_line") is None:
        span = "no lines"
    else:
        span = f"lines {data['start_line']}-{data['end_line']}"
    if data.get("total_lines") is not None:
        span += f" of {data['total_lines']}"
    if data.get("encoding") not in (None, "utf-8"):
        span += f", {data['encoding']}"
    extra = f"; sha256 {short(data['sha256'])}" if data.get("sha256") else ""
    return f"{data['path']} ({span}{extra})"


def read_text_file(data: Data) -> str:
    more = f"start_line={data['next_start_line']}" if data.get("has_more") else None
    return "\n".join([read_header(data), *numbered(data["content"]), *footer(data, more)])


def read_multiple_files(data: Data) -> str:
    lines: list[str] = []
    for item in data.get("results", []):
        got = item.get("file")
        if got is None:
            name = item.get("path") or "paths[{}]".format(item["index"])
            lines.append(f"== {name}: {item.get('error')}")
            continue
        lines.append("== " + read_header(got))
        lines += numbered(got["content"])
        if got.get("has_more"):
            lines.append(f"[more: read_text_file with start_line={got['next_start_line']}]")
    return "\n".join(lines + footer(data, None))


def read_media_file(data: Data) -> str:
    return (f"{data['path']}: {data['mime_type']}, {data['size']} bytes, "
            f"sha256 {short(data['sha256'])}")


def _searchfooter(data: Data, counts: list[str]) -> list[str]:
    more = None
    if data.get("next_cursor"):
        more = f"cursor={data['next_cursor']}"
    elif data.get("has_more"):
        more = f"offset={data['next_offset']}"
    out = footer(data, more)
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
    return "\n".join(lines + _searchfooter(data, skipped))


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
    return "\n".join(lines + _searchfooter(data, counts))


def edit_file(data: Data) -> str:
    if data.get("dry_run"):
        head = f"dry run on {data['path']}:"
    elif data.get("written"):
        sha = f" (sha256 {short(data['sha256'])})" if data.get("sha256") else ""
        head = f"edited {data['path']}{sha}:"
    else:
        head = f"{data['path']} unchanged: the edits change nothing"
    return "\n".join([head, *matched(data.get("matches") or []),
                      data.get("diff", "").rstrip("\n"), *footer(data, None)])


def matched(items: list[Data]) -> list[str]:
    """`matched: line 12 (exact), line 40 (indentation)`: where each edit or hunk landed."""
    if not items:
        return []
    return ["matched: " + ", ".join(f"line {m['line']} ({m['match']})" for m in items)]


def apply_patch(data: Data) -> str:
    """`patched 2 file(s):` (or `dry run, would patch`), a line per file (what changed, how
    each hunk matched), then the diff."""
    files = data.get("files", [])
    head = (f"dry run, would patch {len(files)} file(s):" if data.get("dry_run")
            else f"patched {len(files)} file(s):")
    lines = [head]
    for f in files:
        moved = f" (from {f['moved_from']})" if f.get("moved_from") else ""
        hunks = ", ".join(f"line {m['line']} ({m['match']})" for m in f.get("matches", []))
        lines.append(f"  {f['change']} {f['path']}{moved}" + (f": {hunks}" if hunks else ""))
    return "\n".join([*lines, data.get("diff", "").rstrip("\n")])


def write_file(data: Data) -> str:
    did = "created" if data.get("created") else "replaced"
    return f"{did} {data['path']}: {data['size']} bytes, sha256 {short(data['sha256'])}"


def create_directory(data: Data) -> str:
    return (f"created {data['path']}/" if data.get("created")
            else f"{data['path']}/ already exists (nothing changed)")


def move_file(data: Data) -> str:
    replaced = " (replaced the file that was there)" if data.get("replaced") else ""
    return f"moved {data['type']} {data['source']} -> {data['destination']}{replaced}"


def copy_file(data: Data) -> str:
    what = f"{data['files']} file(s)" if data["type"] == "dir" else "file"
    line = f"copied {what} {data['source']} -> {data['destination']}: {data['bytes']} bytes"
    return "\n".join([line, *footer(data, None)])


def delete(data: Data) -> str:
    return (f"deleted {data['path']}: moved to the trash as {data['trashed_to']} "
            "(the owner can restore it; you cannot reach it)")


def _budget_text(b: Data) -> str:
    return (f"{b['available_bytes']} of {b['burst_bytes']} bytes available, "
            f"refilling at {b['bytes_per_minute']} per minute")


def _root_line(r: Data) -> str:
    default = ", default" if r.get("default") else ""
    own = f"; its byte budget: {_budget_text(r['budget'])}" if r.get("budget") else ""
    return (f"{r['name']}: {r['role']}, {'/'.join(r['permissions'])}{default}, "
            f"reads files up to {r['max_read_bytes']} bytes{own}")


# What a byte budget counts (docs/configuration.md#budget), said once where there is one.
BUDGET_COUNTS = ("a byte budget counts file content returned (reads, fetch, search_text's "
                 "lines, diffs) and bytes written; names, sizes and counts are free")


def list_roots(data: Data) -> str:
    roots = data.get("roots", [])
    lines = [_root_line(r) for r in roots]
    if data.get("budget"):
        lines.append(f"byte budget (the server's): {_budget_text(data['budget'])}")
    if data.get("client_budget"):
        lines.append(f"byte budget (this client's): {_budget_text(data['client_budget'])}")
    if data.get("budget") or data.get("client_budget") or any(r.get("budget") for r in roots):
        lines.append(BUDGET_COUNTS)
    return "\n".join(lines)


def reload_config(data: Data) -> str:
    lines = [f"config reloaded (generation {data['generation']}); roots:"]
    lines += ["  " + _root_line(r) for r in data.get("roots", [])]
    lines.append("tools: " + ", ".join(data.get("tools", [])))
    return "\n".join(lines)


def _symbol_lines(symbols: list[Data], indent: str, out: list[str]) -> None:
    """One line per symbol, `12-40 class Foo(Base):`, children indented under it: the
    declaration's line when it names the symbol, else its kind and name."""
    for s in symbols:
        sig, name = s.get("signature") or "", s["name"]
        shown = sig if sig and name in sig else f"{s['kind']} {name}"
        out.append(f"{indent}{s['start_line']}-{s['end_line']} {shown}")
        _symbol_lines(s.get("children") or [], indent + "  ", out)


def outline(data: Data) -> str:
    more = "cursor=<next_cursor>" if data.get("next_cursor") else None
    lines: list[str] = []
    if data.get("files") is not None:
        files = data["files"]
        lines.append(f"{data.get('path') or '.'}/: {len(files)} source file(s), top-level "
                     "symbols (start-end lines)")
        for f in files:
            note = f" [{f['note']}]" if f.get("note") else ""
            lines.append(f"{f['path']} ({f.get('language')}){note}")
            _symbol_lines(f.get("symbols") or [], "  ", lines)
    else:
        lang = data.get("language")
        syms = data.get("symbols") or []
        lines.append(f"{data['path']} ({lang or 'unknown language'}; "
                     f"{len(syms)} top-level symbol(s), start-end lines)")
        _symbol_lines(syms, "", lines)
    return "\n".join(lines + footer(data, more))
