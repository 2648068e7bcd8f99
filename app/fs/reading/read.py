"""read_text_file and read_multiple_files: line windows and tails, bounded twice.

Bounded in bytes read: one call reads at most the root's `max_read_bytes` of
a file (a file that fits is read once, whole, and hashed; a larger one is
streamed and stops at the budget). Bounded in output: the content is cut, by
whole lines, to fit `max_output_chars`; a single line longer than that is cut
with a visible marker. Both cuts say where to continue (`has_more`,
`next_start_line`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from app.errors import BinaryFile, LoomError, TooLarge
from app.fs.control import Control
from app.fs.hashing import sha256_bytes
from app.fs.text import tail, textio
from app.fs.text.paging import RESERVE, cut_to, escaped_len, json_len
from app.security.paths import join, split_request
from app.security.resolve import OpenedFile, Root

OUTPUT_MARK = " [... line cut: longer than the output limit]"
READ_MARK = " [... line cut: the read limit (max_read_bytes) ends inside it]"
FRONT_MARK = "[... line cut: only its end is shown] "
MAX_FILES = 50
MIN_SHARE = 700  # below this a file's result would be mostly its own fields
# What a line costs beyond its bytes: its shown number, " | " and the separator
# at the least. Charged for every line kept, so a file of empty lines cannot
# make a window of millions of line objects (8 MiB of "\n" once cost 1.3 GB).
LINE_COST = 6


# Defaults say what a field left out of the structured content means (`app.tools.lean`).
class ReadTextResult(BaseModel):
    path: str
    encoding: str = "utf-8"
    start_line: int = 1
    end_line: int | None = None
    has_more: bool = False
    next_start_line: int | None = None
    eof_reached: bool = False
    start_beyond_eof: bool = False
    total_lines: int | None = None
    sha256: str | None = None
    content: str
    note: str | None = None


class ReadManyItem(BaseModel):
    index: int
    path: str | None = None  # the normalised request; None when the request itself was invalid
    error: str | None = None
    file: ReadTextResult | None = None


class ReadManyResult(BaseModel):
    results: list[ReadManyItem]
    returned: int
    errors: int = 0
    note: str | None = None


def _limit_note(budget: int, root: str) -> str:
    return f"{budget} bytes (max_read_bytes of root '{root}')"


def read_text(
    f: OpenedFile,
    root: Root,
    *,
    start: int = 1,
    end: int = 300,
    tail: int | None = None,
    cap: int,
) -> ReadTextResult:
    """A window (or tail) of an opened file, within the root's budget and `cap` chars."""
    budget = root.max_read_bytes
    src = textio.Source.open(f.fd, f.st.st_size, budget)
    head = src.read(0, textio.HEAD)
    sn = textio.sniff(head)
    if sn.binary:
        raise BinaryFile(
            f"'{f.rel}' is binary (a NUL byte in its first 4 KiB); "
            "read_media_file serves images and audio"
        )
    sha = sha256_bytes(src.data) if src.data is not None else None
    shell = ReadTextResult(
        path=f.rel, encoding="utf-16-le", start_line=-(10**9), end_line=10**9, has_more=False,
        next_start_line=10**9, eof_reached=False, start_beyond_eof=False, total_lines=10**9,
        sha256=sha, content="", note="x" * 200,
    )
    room = max(cap - json_len(shell) - RESERVE, 80)
    keep = textio.MAX_BYTES_PER_CHAR * (room + 8)
    samples: list[tuple[bytes, bool]] = (
        [(src.data[sn.base :], True)] if src.data is not None else [(head[sn.base :], False)]
    )
    if tail is not None:
        return _tail(src, sn, tail, keep, room, shell, samples, budget, root.name)

    scan = textio.Scan()
    lines, partial, more = _window(src, sn, start, end, keep, scan)
    note = None
    if not lines:
        if scan.eof:
            return shell.model_copy(update=dict(
                encoding=textio.decide(sn, samples), start_line=start, end_line=None,
                next_start_line=None, eof_reached=True, start_beyond_eof=True,
                total_lines=scan.lines_seen, note=None))
        if partial is None or not partial.data:
            raise TooLarge(
                f"line {start} of '{f.rel}' is beyond the first {_limit_note(budget, root.name)} "
                "that one call may read; read the end of the file with tail=N"
            )
        lines, partial = [partial], None
    if src.data is None:
        samples += [(x.data, x.complete and not x.cut) for x in lines]
    enc = textio.decide(sn, samples)
    shown = _fit_window(lines, enc, room)
    last = lines[len(shown) - 1]
    if len(shown) < len(lines):
        has_more, next_line = True, lines[len(shown)].number
    else:
        has_more = more or partial is not None or src.exhausted or not last.complete
        next_line = last.number + 1
    if src.exhausted and not more:
        note = (
            f"stopped at the read limit of {_limit_note(budget, root.name)}; "
            "later lines cannot be served from the start of the file: use tail=N for its end"
        )
    eof = not has_more and scan.eof
    return shell.model_copy(update=dict(
        encoding=enc, start_line=start, end_line=last.number, has_more=has_more,
        next_start_line=next_line if has_more else None, eof_reached=eof,
        total_lines=scan.lines_seen if eof else None, content="\n".join(shown), note=note))


def _window(
    src: textio.Source, sn: textio.Sniff, start: int, end: int, keep: int, scan: textio.Scan
) -> tuple[list[textio.RawLine], textio.RawLine | None, bool]:
    """Lines start..end as read forward, at most `keep` bytes of them: (the complete
    lines, a line the read budget cut, whether a line past the window or the room exists)."""
    lines: list[textio.RawLine] = []
    partial: textio.RawLine | None = None
    more = False
    kept = 0
    gen = textio.forward(src, sn, start, keep, scan)
    for line in gen:
        if not line.complete:
            partial = line
            break
        if line.number > end or kept > keep:  # a line past the window, or no room left
            more = True
            break
        lines.append(line)
        kept += len(line.data) + LINE_COST
    gen.close()
    return lines, partial, more


def _fit_window(lines: list[textio.RawLine], enc: str, room: int) -> list[str]:
    """The numbered lines that fit in `room` escaped characters; at least the first, cut
    with the mark of the limit that cut it."""
    shown: list[str] = []
    used = 0
    for line in lines:
        text = textio.decode(line.data, enc, complete=line.complete and not line.cut)
        # Which limit cut it: the output when more was kept than fits, else the read budget.
        mark = OUTPUT_MARK if line.cut or line.complete else READ_MARK
        entry = f"{line.number} | {text}"
        if (line.cut or not line.complete) and not shown:
            shown.append(cut_to(entry, room - len(mark)) + mark)
            break
        taken = _take(shown, entry, used, room, mark)
        if taken is None:
            break
        used = taken
    return shown


def _take(shown: list[str], entry: str, used: int, room: int, mark: str) -> int | None:
    """Add `entry` to `shown` when it fits in `room` after `used` characters: the new
    `used`, or None when it does not (a first entry is shown anyway, cut, with `mark`)."""
    size = escaped_len(entry) + (2 if shown else 0)
    if used + size > room:
        if not shown:
            shown.append(cut_to(entry, room - len(mark)) + mark)
        return None
    shown.append(entry)
    return used + size


def _tail(
    src: textio.Source,
    sn: textio.Sniff,
    want: int,
    keep: int,
    room: int,
    shell: ReadTextResult,
    samples: list[tuple[bytes, bool]],
    budget: int,
    root_name: str,
) -> ReadTextResult:
    # Each shown line costs at least LINE_COST of the room: no more can be shown.
    t = tail.tail(src, sn, min(want, room // LINE_COST + 1), keep)
    if not t.lines and t.total is None:
        raise TooLarge(
            f"the end of '{shell.path}' is not within the {_limit_note(budget, root_name)} "
            "left to this call"
        )
    if src.data is None:
        samples += [(x.data, True) for x in t.lines if not x.cut]
    enc = textio.decide(sn, samples)
    if not t.lines:
        return shell.model_copy(update=dict(
            encoding=enc, start_line=1, end_line=None, next_start_line=None, eof_reached=True,
            total_lines=0, note=None))
    shown: list[str] = []
    used = 0
    for line in reversed(t.lines):
        text = textio.decode(line.data, enc)
        entry = f"{line.number} | {text}"
        if line.cut:  # the scan never saw its start: show its end
            entry = f"{line.number} | {FRONT_MARK}{_cut_front(text, room - 60)}"
        taken = _take(shown, entry, used, room, OUTPUT_MARK)
        if taken is None:
            break
        used = taken
    shown.reverse()
    first = t.lines[len(t.lines) - len(shown)]
    notes = []
    if t.total is None:
        notes.append(
            "line numbers count from the end (-1 is the last line): the file is larger than "
            f"the {_limit_note(budget, root_name)}, so its line count is unknown"
        )
    if len(shown) < want and (t.total is None or len(shown) < t.total):
        notes.append(f"only the last {len(shown)} lines fit in this result")
    return shell.model_copy(update=dict(
        encoding=enc, start_line=first.number, end_line=t.lines[-1].number,
        next_start_line=None, eof_reached=True, total_lines=t.total,
        content="\n".join(shown), note="; ".join(notes) or None))


def _cut_front(text: str, limit: int) -> str:
    """The longest suffix of `text` that fits in `limit` escaped characters."""
    return cut_to(text[::-1], limit)[::-1]


def read_text_file(
    root: Root, path: str, *, start: int, end: int, tail: int | None, cap: int
) -> ReadTextResult:
    with root.open_file(path, op="read_text_file") as f:
        return read_text(f, root, start=start, end=end, tail=tail, cap=cap)


def read_multiple_files(
    root: Root, paths: Sequence[str], *, cap: int, control: Control
) -> ReadManyResult:
    """Each file from its first line, sharing the output fairly: what a small file
    leaves unused goes to the files after it."""
    items: list[ReadManyItem] = []
    unread = 0
    remaining = cap - json_len(ReadManyResult(results=[], returned=0, errors=0, note="x" * 200))
    for i, path in enumerate(paths):
        control.check()
        share = remaining // (len(paths) - i)
        try:
            shown = join(split_request(path))
        except LoomError:
            shown = None
        if share < MIN_SHARE:
            unread = len(paths) - i
            break
        try:
            with root.open_file(path, op="read_multiple_files") as f:
                got = read_text(f, root, start=1, end=10**9, cap=share)
            item = ReadManyItem(index=i, path=f.rel, file=got)
        except LoomError as exc:
            item = ReadManyItem(index=i, path=shown, error=exc.message)
        remaining -= json_len(item) + 1
        items.append(item)
    errors = sum(1 for x in items if x.error is not None)
    cut = [x.path for x in items if x.file is not None and x.file.has_more]
    notes = []
    if cut:
        notes.append(
            f"{len(cut)} file(s) did not fit whole in this result; continue each with "
            "read_text_file from its next_start_line"
        )
    if unread:
        notes.append(
            f"{unread} file(s) from index {len(items)} on were not read: no room left in this "
            "result (max_output_chars); read them with read_text_file"
        )
    return ReadManyResult(
        results=items, returned=len(items) - errors, errors=errors, note="; ".join(notes) or None
    )
