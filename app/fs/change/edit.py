"""`edit_file`: replacements placed by `app.fs.change.match`, all or nothing, with a
bounded diff.

Each `old_text` must be found at exactly one place (at the first matching level
that finds it) in the text left by the edits before it; the first that is not stops
the call before anything is written, its refusal showing the closest block
(`app.fs.change.closest`). The
file keeps its encoding byte for byte outside the edited spans: UTF-8 (with
or without BOM), UTF-16/32 with a BOM, or GB18030, accepted only when
decoding and re-encoding gives back the very same bytes. A file whose lines
all end in CRLF gets CRLF in the edited text too. Binary files (a NUL in the
first 4 KiB, after BOM detection) are refused.

The whole file is read, so it must fit in the root's `max_read_bytes`; the
write is `app.fs.change.atomic.replace_file`, guarded so that a file changed by
someone else after we read it is never overwritten with our stale edit. The
entry's keys (`app.fs.change.locks`) are held from the read to the rename: two edits
of one file through this server never interleave, so of several sent with one
`expected_sha256` exactly one is applied. The
answer's diff is `app.fs.change.edit_diff`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from pydantic import BaseModel

from app.errors import BadArgument, BinaryFile, FileChanged, LoomError, NotFound, TooLarge, os_error
from app.fs.change.atomic import replace_file
from app.fs.change.closest import closest
from app.fs.change.edit_diff import COARSE_NOTE, Span, bounded_diff
from app.fs.change.locks import changing
from app.fs.change.match import Matcher, NoPlace, all_crlf
from app.fs.change.versions import Keeper
from app.fs.change.write import existing_target, read_current, unchanged_guard
from app.fs.control import Control, NoControl, Pay
from app.fs.hashing import matches, sha256_bytes
from app.fs.text import textio
from app.security.resolve import Parent, Root

SNIFF_BYTES = 4096

MAX_REGIONS = 10**6  # for sizing the note only
CUT_NOTE = "diff cut to fit max_output_chars ({total} lines in full); the edits {how} in full"


class TextEdit(BaseModel):
    old_text: str
    new_text: str


# Where one edit (or hunk) matched: its first line, in the text it applied to, and the
# level that found it (`app.fs.change.match.LEVELS`).
Level = Literal["exact", "line_endings", "trailing_space", "indentation", "punctuation",
                "line_numbers"]


class Matched(BaseModel):
    """Where an edit matched: its first line and how."""

    line: int
    match: Level


class EditResult(BaseModel):
    path: str
    dry_run: bool = False
    written: bool  # false for a dry run, or when the edits change nothing
    encoding: str = "utf-8"
    size: int  # bytes of the file after the call (as it would be, for a dry run)
    sha256: str  # of the content on disk after the call (as it would be, for a dry run)
    diff: str  # unified diff, cut to max_output_chars when diff_truncated
    diff_truncated: bool = False
    note: str | None = None
    kept_version: str | None = None  # where the replaced content went (under the root)
    matches: list[Matched] = []  # per edit, in order


@dataclass(frozen=True)
class Encoding:
    codec: str
    bom: bytes
    label: str

    def encode(self, text: str) -> bytes:
        try:
            return self.bom + text.encode(self.codec)
        except UnicodeEncodeError:
            raise BadArgument(
                f"the edited text cannot be encoded as {self.label}, the file's encoding"
            ) from None


def decode(raw: bytes, rel: str) -> tuple[str, Encoding]:
    """The text of a file and how to write it back identically."""
    for bom, label, _unit in textio.BOMS:
        if raw.startswith(bom):
            candidates = [Encoding(textio.codec_of(label), bom, label)]
            break
    else:
        if b"\x00" in raw[:SNIFF_BYTES]:
            raise BinaryFile(f"'{rel}' looks binary (a NUL byte near the start); not edited")
        candidates = [Encoding("utf-8", b"", "utf-8"), Encoding("gb18030", b"", "gb18030")]
    for enc in candidates:
        try:
            text = raw[len(enc.bom) :].decode(enc.codec)
        except UnicodeDecodeError:
            continue
        # Only an encoding that gives back the very same bytes keeps the rest of the file intact.
        if enc.bom + text.encode(enc.codec, errors="surrogatepass") == raw:
            return text, enc
    raise BinaryFile(
        f"'{rel}' is not text in a supported encoding (UTF-8, UTF-16/32 with BOM, GB18030); "
        "not edited"
    )


def apply_tracked(text: str, edits: Sequence[TextEdit], rel: str,
                  control: Control | None = None) -> tuple[str, list[Span], list[Matched]]:
    """The edited text, where it differs from `text` (sorted, disjoint spans) and where
    and how each edit matched (`app.fs.change.match`)."""
    total = len(edits)
    spans: list[Span] = []
    found: list[Matched] = []
    crlf = all_crlf(text)  # the file as read decides, not what the edits leave
    for i, edit in enumerate(edits, 1):
        where = f"edit {i} of {total}" if total > 1 else "edit"
        matcher = Matcher(text, rel, control, crlf)
        try:
            place = matcher.place(edit.old_text, edit.new_text)
        except NoPlace as exc:
            later = " (edits apply in order, to the text left by the earlier ones)" if i > 1 else ""
            near = closest(matcher, edit.old_text)
            raise BadArgument(f"{where}: {exc}{later}" + (f"; {near}" if near else "")) from None
        except BadArgument as exc:
            raise BadArgument(f"{where}: {exc}") from None
        text = text[: place.lo] + place.new + text[place.hi :]
        spans = _track(spans, place.lo, place.hi, len(place.new))
        found.append(Matched(line=place.line, match=cast(Level, place.level)))
    return text, spans, found


def _track(spans: list[Span], lo: int, hi: int, new_len: int) -> list[Span]:
    """`spans` after text[lo:hi] (current coordinates) was replaced by new_len characters."""
    delta = new_len - (hi - lo)
    out: list[Span] = []
    u_lo, u_hi, grown = lo, hi, 0  # the union of what this edit touches, and its growth
    for s, e, was in spans:
        if e < lo:
            out.append((s, e, was))
        elif s > hi:
            out.append((s + delta, e + delta, was))
        else:
            u_lo, u_hi, grown = min(u_lo, s), max(u_hi, e), grown + (e - s) - was
    out.append((u_lo, u_hi + delta, (u_hi - u_lo) - grown))
    out.sort()
    return out


@dataclass(frozen=True)
class _Edited:
    rel: str
    raw: bytes  # the file as read
    new_raw: bytes  # as edited (written unless a dry run or unchanged)
    before: str
    after: str
    spans: list[Span]
    encoding: str
    written: bool
    matches: list[Matched]
    kept: Keeper | None = None


def edit_file(
    root: Root,
    path: str,
    edits: Sequence[TextEdit],
    *,
    max_output_chars: int,
    dry_run: bool = False,
    expected_sha256: str | None = None,
    control: Control | None = None,
    pay: Pay | None = None,
) -> EditResult:
    """`pay` is the byte budget: the new content's size, paid once it is known and before
    a byte is written (a refusal raises, and nothing is written)."""
    control = control or NoControl()
    op = "edit_file"
    root.authorize(path, perm="write", op=op)
    if not edits:
        raise BadArgument("edits is empty; give at least one {old_text, new_text}")
    try:
        parent = root.open_parent(path, op=op, perm="write")
    except NotFound:
        if expected_sha256:  # the file the hash came from is gone
            raise FileChanged() from None
        raise
    # A dry run changes nothing, so it waits for no one.
    keys = contextlib.nullcontext() if dry_run else changing(parent, wait=control.check)
    with parent:
        try:
            with keys:
                done = _edit(root, parent, edits, dry_run, expected_sha256, control, pay)
        except LoomError:
            raise
        except OSError as exc:
            raise os_error(exc, parent.rel) from None
    return _result(done, dry_run, max_output_chars, control)


def _edit(
    root: Root,
    parent: Parent,
    edits: Sequence[TextEdit],
    dry_run: bool,
    expected_sha256: str | None,
    control: Control,
    pay: Pay | None = None,
) -> _Edited:
    """Read, check, edit and (unless a dry run or nothing changes) write the file."""
    rel = parent.rel
    if existing_target(parent) is None:
        if expected_sha256:
            raise FileChanged()
        raise NotFound(f"no such file or directory: '{rel}'")
    raw, seen = read_current(parent, root.max_read_bytes)
    if expected_sha256 and not matches(sha256_bytes(raw), expected_sha256):
        raise FileChanged()
    before, enc = decode(raw, rel)
    control.check()
    after, spans, found = apply_tracked(before, edits, rel, control)
    new_raw = enc.encode(after)
    if len(new_raw) > root.max_read_bytes:
        raise TooLarge(
            f"the edited file would be {len(new_raw)} bytes, above root '{root.name}' "
            f"max_read_bytes ({root.max_read_bytes}); nothing written"
        )
    written = not dry_run and new_raw != raw
    if written and pay is not None:
        pay(len(new_raw), rel)
    keeper = Keeper(root, parent, seen, op="edit") if written else None
    if keeper is not None:
        replace_file(parent.fd, parent.name, new_raw, replace=True, like=seen,
                     guard=keeper.guarded(unchanged_guard(parent, seen)))
    return _Edited(rel, raw, new_raw, before, after, spans, enc.label, written, found, keeper)


def _result(done: _Edited, dry_run: bool, max_output_chars: int, control: Control) -> EditResult:
    """The answer, its diff cut to what the rest of it leaves of `max_output_chars`."""
    notes = []
    if dry_run:
        notes.append("dry run: nothing was written")
    elif done.new_raw == done.raw:
        notes.append("the edits leave the file as it was; nothing was written")
    kept = done.kept.kept if done.kept else None
    if done.kept and done.kept.note:
        notes.append(done.kept.note)
    result = EditResult(
        path=done.rel,
        dry_run=dry_run,
        written=done.written,
        encoding=done.encoding,
        size=len(done.new_raw),
        sha256=sha256_bytes(done.new_raw),
        diff="",
        diff_truncated=False,
        # the longest the note can be, for the budget
        note="; ".join([*notes, CUT_NOTE, COARSE_NOTE.format(n=MAX_REGIONS)]),
        kept_version=kept,
        matches=done.matches,
    )
    # The diff gets what the rest of the result leaves of max_output_chars.
    budget = max(0, max_output_chars - len(result.model_dump_json()) - 32)
    diff, cut, total, coarse = bounded_diff(
        done.before, done.after, done.spans, done.rel, budget, control
    )
    if cut:
        notes.append(CUT_NOTE.format(total=total, how="would apply" if dry_run else "were applied"))
    if coarse:
        notes.append(COARSE_NOTE.format(n=coarse))
    return result.model_copy(
        update={"diff": diff, "diff_truncated": cut, "note": "; ".join(notes) or None}
    )
