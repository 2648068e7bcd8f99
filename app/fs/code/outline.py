"""`outline`: a source file's symbols, or a folder's map of code; and one symbol's lines.

A file is read as a read reads it (through the `Root`, refused when binary, or larger than
the root's `max_read_bytes` or `MAX_PARSE_BYTES`) and parsed in the worker
(`app.fs.code.parse`); a file in no known language answers `language: null` and a note. A
folder is walked as the searches walk (`app.fs.search.walk`: deny rules, ignore files, links
never followed, breadth-first in name order); each source file gives its top-level symbols,
`limit` files a page, `next_cursor` the next one. A file's symbols are paged the same way by
top-level symbol. Every page fits `max_output_chars`; what it leaves out is said.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, create_model

from app.errors import BadArgument, BinaryFile, LoomError, NotADirectory, NotARegularFile, TooLarge
from app.fs.code import parse as parse_mod
from app.fs.code.languages import language_of
from app.fs.code.symbols import MAX_DEPTH
from app.fs.control import Control
from app.fs.filters.glob import compile_glob
from app.fs.reading.listing import unreadable_note
from app.fs.reading.read import ReadTextResult, read_text
from app.fs.search.options import WalkOptions
from app.fs.search.walk import candidates, open_walk
from app.fs.text import textio
from app.fs.text.paging import RESERVE, json_len
from app.security import ops
from app.security.resolve import OpenedFile, Root

MAX_PARSE_BYTES = 8 * 1024 * 1024
DEFAULT_DEPTH = 2
DEFAULT_LIMIT = 100
FOLDER_DEADLINE_S = 30.0  # a folder page stops here (its cursor continues), whatever it holds
MAX_CURSOR = 8192
MAX_CANDIDATES = 20


class Symbol(BaseModel):
    """A symbol at the deepest level an outline reaches: no children."""

    name: str
    kind: str
    start_line: int
    end_line: int
    signature: str | None = None


def _nested(levels: int) -> type[Symbol]:
    """A symbol whose children nest `levels` deep: one class per level, not a recursive
    schema (published output schemas are self-contained, no `$ref`)."""
    model: type[Symbol] = Symbol
    for level in range(levels - 1, 0, -1):
        model = create_model(
            f"Symbol{level}", __base__=Symbol, children=(list[model], []),  # type: ignore[valid-type]
        )
    return model


Outlined: Any = _nested(MAX_DEPTH)  # a top-level symbol: children to MAX_DEPTH levels


class FileOutline(BaseModel):
    path: str
    language: str | None = None
    symbols: list[Outlined] = []
    note: str | None = None


class OutlineResult(BaseModel):
    path: str
    language: str | None = None
    symbols: list[Outlined] = []
    files: list[FileOutline] | None = None  # on a folder: one per source file of the page
    has_more: bool = False
    next_cursor: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Parsed:
    language: str | None
    symbols: list[dict[str, Any]]
    note: str | None


# -- one file ------------------------------------------------------------------------------


def source_of(data: bytes, rel: str) -> bytes:
    """The file's text as UTF-8 for the parser (line numbers unchanged); binary refused."""
    sn = textio.sniff(data[: textio.HEAD])
    if sn.binary:
        raise BinaryFile(f"'{rel}' is binary (a NUL byte in its first 4 KiB)")
    if sn.bom_encoding and sn.bom_encoding != "utf-8-sig" and sn.unit > 1:
        return data[sn.base :].decode(textio.codec_of(sn.bom_encoding), "replace").encode()
    return data[sn.base :]


def read_whole(fd: int, size: int, rel: str, root: Root) -> bytes:
    limit = min(root.max_read_bytes, MAX_PARSE_BYTES)
    too_large = TooLarge(
        f"'{rel}' is {size} bytes; an outline parses files of at most {limit} bytes "
        f"(max_read_bytes of root '{root.name}', or the parser's own cap): read it by lines"
    )
    if size > limit:
        raise too_large
    src = textio.Source.open(fd, size, limit)
    if src.data is None:
        raise too_large
    return src.data


# Why a parse has no symbols, by how it stopped (`{lang}`: the file's language).
STOP_NOTES = {
    parse_mod.STOPPED_TIME: f"the parse stopped at its deadline ({parse_mod.DEADLINE_S:g} s): "
                            "no symbols; read it by lines",
    parse_mod.STOPPED_BUSY: "no parser came free before the deadline (other calls are "
                            "parsing): no symbols; try again",
    parse_mod.STOPPED_GRAMMAR: "the {lang} grammar could not be loaded on this server: no "
                               "symbols; read it by lines",
    parse_mod.STOPPED_DEPTH: "the file nests deeper than the outline follows: no symbols; "
                             "read it by lines",
    parse_mod.STOPPED_MEMORY: f"the parse stopped at its memory limit "
                              f"({parse_mod.MEMORY_LIMIT >> 20} MiB): no symbols; read it by "
                              "lines",
}


def parse_file(fd: int, size: int, rel: str, root: Root, depth: int) -> Parsed:
    """The symbols of the open file `rel`, or a note saying why there are none."""
    lang = language_of(rel)
    data = read_whole(fd, size, rel, root)  # refused as a read refuses, whatever its language
    if lang is None:
        return Parsed(None, [], "not a language the outline knows: read it by lines")
    got = parse_mod.parse(lang, source_of(data, rel), depth)
    notes = []
    if got.stopped is not None:  # a stop not named below is the worker ending: its memory
        why = STOP_NOTES.get(got.stopped, STOP_NOTES[parse_mod.STOPPED_MEMORY])
        notes.append(why.format(lang=lang))
    if got.truncated:
        notes.append("the file has more symbols than an outline lists; later ones are left out")
    if got.errors and got.stopped is None:
        notes.append("the file has syntax errors: symbols near them may be missing")
    return Parsed(lang, got.symbols, "; ".join(notes) or None)


def outline_file(f: OpenedFile, root: Root, depth: int, start: int, limit: int, cap: int
                 ) -> OutlineResult:
    parsed = parse_file(f.fd, f.st.st_size, f.rel, root, depth)
    syms = parsed.symbols[start:]
    room = cap - json_len(OutlineResult(path=f.rel, language=parsed.language,
                                        note=parsed.note, next_cursor="x" * 120)) - RESERVE
    shown: list[dict[str, Any]] = []
    used = 0
    for s in syms[:limit]:
        size = json_len(s) + 1
        if used + size > room and shown:
            break
        if used + size > room:  # one symbol too large alone: without its children
            s = {k: v for k, v in s.items() if k != "children"}
            size = json_len(s) + 1
        shown.append(s)
        used += size
    more = len(shown) < len(syms)
    notes = [parsed.note] if parsed.note else []
    nxt = None
    if more:
        n = start + len(shown)
        nxt = make_cursor(root.name, f.rel, depth, n)
        notes.append(f"{len(syms) - len(shown)} top-level symbol(s) from #{n + 1} on are on "
                     "the next page (next_cursor)")
    return OutlineResult(path=f.rel, language=parsed.language,
                         symbols=[Outlined.model_validate(s) for s in shown], has_more=more,
                         next_cursor=nxt, note="; ".join(notes) or None)


# -- cursors ---------------------------------------------------------------------------------


def make_cursor(root: str, path: str, depth: int, at: int | str) -> str:
    raw = json.dumps([root, path, depth, at], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str, root: str, path: str, depth: int) -> int | str:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        r, p, d, at = json.loads(raw)
    except (ValueError, TypeError):
        raise BadArgument("cursor is not a next_cursor outline gave") from None
    if (r, p, d) != (root, path, depth) or not isinstance(at, (int, str)):
        raise BadArgument("cursor belongs to another outline call (its root, path or depth)")
    return at


# -- a folder --------------------------------------------------------------------------------


def outline_folder(root: Root, path: str, depth: int, cursor: str | None, limit: int,
                   cap: int, control: Control) -> OutlineResult:
    walk = open_walk(root, WalkOptions(path=path, limit=limit, cap=cap), "outline")
    shown_path = walk.name_of("/".join(walk.walker.start)).rstrip("/")
    after = None
    if cursor:
        at = read_cursor(cursor, root.name, shown_path, depth)
        if not isinstance(at, str):
            raise BadArgument("cursor belongs to a file's outline, not a folder's")
        after = (tuple(at.split("/")), True)
    files: list[FileOutline] = []
    room = cap - json_len(OutlineResult(path=shown_path, files=[], note="x" * 300,
                                        next_cursor="x" * 200)) - RESERVE
    used = 0
    nxt: str | None = None
    why = None
    stop_at = time.monotonic() + FOLDER_DEADLINE_S
    for walk_path, item in _files(root, walk, after, control):
        if len(files) == limit:
            nxt, why = walk_path, None
            break
        if time.monotonic() > stop_at:
            nxt, why = walk_path, f"the page stopped at its {FOLDER_DEADLINE_S:g} s deadline"
            break
        size = json_len(item) + 1
        if used + size > room and files:
            nxt, why = walk_path, "no room left in this result (max_output_chars)"
            break
        if size > room:  # one file's symbols alone fill the page: as many as fit
            item = _cut_file(item, room)
            size = json_len(item) + 1
        files.append(item)
        used += size
    notes = [n for n in (unreadable_note(walk.walker), walk.filt.note()) if n]
    if nxt is not None:
        notes.append(f"more files from '{walk.name_of(nxt)}' on: continue with next_cursor"
                     + (f" ({why})" if why else ""))
    return OutlineResult(
        path=shown_path, files=files, has_more=nxt is not None,
        next_cursor=make_cursor(root.name, shown_path, depth, nxt) if nxt else None,
        note="; ".join(notes) or None)


def _files(root: Root, walk: Any, after: tuple[tuple[str, ...], bool] | None,
           control: Control) -> Iterator[tuple[str, FileOutline]]:
    """Each source file below the walk's start, in walk order, with its top-level symbols
    (or a note why it has none)."""
    glob = compile_glob("*")
    with contextlib.closing(candidates(walk, glob, after)) as folders:
        for folder in folders:
            for name in folder.names:
                lang = language_of(name)
                if lang is None:
                    continue
                control.check()
                walk_path = folder.prefix + name
                shown = walk.name_of(walk_path)
                yield walk_path, _one(folder.fd, name, shown, lang, root)


def _cut_file(item: FileOutline, room: int) -> FileOutline:
    kept: list[Any] = []
    used = json_len(item.model_copy(update={"symbols": [], "note": "x" * 160}))
    for s in item.symbols:
        used += json_len(s) + 1
        if used > room:
            break
        kept.append(s)
    left = len(item.symbols) - len(kept)
    note = f"{left} symbol(s) past max_output_chars left out: outline the file itself"
    return item.model_copy(update={
        "symbols": kept, "note": "; ".join(n for n in (item.note, note) if n)})


def _one(dir_fd: int, name: str, shown: str, lang: str, root: Root) -> FileOutline:
    try:
        fd = ops.open_file(dir_fd, name)
    except OSError:
        return FileOutline(path=shown, language=lang, note="could not be opened")
    try:
        parsed = parse_file(fd, os.fstat(fd).st_size, shown, root, 1)
    except LoomError as exc:
        return FileOutline(path=shown, language=lang, note=exc.message)
    finally:
        os.close(fd)
    return FileOutline(path=shown, language=lang, note=parsed.note,
                       symbols=[Outlined.model_validate(s) for s in parsed.symbols])


# -- the entry points --------------------------------------------------------------------------


def outline(root: Root, path: str, *, depth: int, cursor: str | None, limit: int, cap: int,
            control: Control) -> OutlineResult:
    """A file's symbols to `depth`, or, on a folder, each source file's top-level ones."""
    try:
        f_cm = root.open_file(path, op="outline")
    except NotARegularFile as exc:
        try:
            return outline_folder(root, path, depth, cursor, limit, cap, control)
        except NotADirectory:
            raise exc from None
    with f_cm as f:
        start = 0
        if cursor:
            at = read_cursor(cursor, root.name, f.rel, depth)
            if not isinstance(at, int) or at < 0:
                raise BadArgument("cursor belongs to a folder's outline, not a file's")
            start = at
        return outline_file(f, root, depth, start, limit, cap)


@dataclass(frozen=True)
class Found:
    qualified: str
    kind: str
    start_line: int
    end_line: int


def flatten(symbols: list[dict[str, Any]], prefix: str = "") -> Iterator[Found]:
    for s in symbols:
        q = f"{prefix}{s['name']}"
        yield Found(q, s["kind"], s["start_line"], s["end_line"])
        yield from flatten(s.get("children", []), q + ".")


def find_symbol(f: OpenedFile, root: Root, name: str) -> Found:
    """The one symbol of the open file whose dotted name is `name` (`Class.method`), or a
    refusal listing the candidates: the symbols of that name, or, when none has it, those
    whose last part is its last part, else the file's top-level symbols."""
    wanted = name.strip()
    parts = wanted.split(".")
    parsed = parse_file(f.fd, f.st.st_size, f.rel, root, min(max(len(parts) + 1, 3),
                                                              MAX_DEPTH))
    if parsed.language is None or (parsed.note and not parsed.symbols):
        raise BadArgument(f"'{f.rel}' has no symbols to read by name: {parsed.note}")
    every = list(flatten(parsed.symbols))
    exact = [s for s in every if s.qualified == wanted]
    if len(exact) == 1:
        return exact[0]
    if exact:
        raise BadArgument(f"symbol '{wanted}' is ambiguous in '{f.rel}': {_listed(exact)}; "
                          "read one by its lines (start_line, end_line)")
    last = parts[-1]
    tail = [s for s in every if s.qualified.rsplit(".", 1)[-1] == last]
    if len(tail) == 1 and len(parts) == 1:
        return tail[0]  # `method` alone names the one method of that name
    near = tail or [s for s in every if "." not in s.qualified]
    what = "ambiguous" if tail and len(parts) == 1 else "not found"
    raise BadArgument(f"symbol '{wanted}' {what} in '{f.rel}'; "
                      f"candidates: {_listed(near) or 'none'}")


def _listed(found: list[Found]) -> str:
    shown = ", ".join(f"{s.kind} {s.qualified} (lines {s.start_line}-{s.end_line})"
                      for s in found[:MAX_CANDIDATES])
    more = len(found) - MAX_CANDIDATES
    return shown + (f", and {more} more" if more > 0 else "")



def read_symbol(root: Root, path: str, symbol: str, *, start: int, end: int | None, cap: int
                ) -> ReadTextResult:
    """Exactly the lines of `symbol` (as `find_symbol` finds it), in read_text_file's shape;
    `start`/`end` (file line numbers) narrow the window inside the symbol, and a symbol
    longer than one answer pages like any read (`next_start_line`, still inside it)."""
    with root.open_file(path, op="read_text_file") as f:
        found = find_symbol(f, root, symbol)
        lo = max(start, found.start_line)
        hi = found.end_line if end is None else min(end, found.end_line)
        if lo > hi:
            raise BadArgument(
                f"lines {start}..{end} are outside {found.kind} '{found.qualified}' "
                f"(lines {found.start_line}-{found.end_line})")
        got = read_text(f, root, start=lo, end=hi, cap=cap)
    said = f"{found.kind} {found.qualified}, lines {found.start_line}-{found.end_line}"
    update: dict[str, Any] = {"note": "; ".join(n for n in (said, got.note) if n)}
    if got.end_line is not None and got.end_line >= hi:  # the window is whole
        more = hi < found.end_line
        update |= {"has_more": more, "next_start_line": hi + 1 if more else None}
    return got.model_copy(update=update)


def signatures(result: OutlineResult) -> Iterator[str | None]:
    """Every signature an outline answers: file text, paid from the byte budget."""
    def walk(symbols: list[Any]) -> Iterator[str | None]:
        for s in symbols:
            yield s.signature
            yield from walk(getattr(s, "children", []))
    yield from walk(result.symbols)
    for f in result.files or ():
        yield from walk(f.symbols)
