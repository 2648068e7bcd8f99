"""`edit_file`: exact-text replacements, all or nothing, with a bounded diff.

Each `old_text` must occur exactly once in the text left by the edits before
it; the first that does not stops the call before anything is written. The
file keeps its encoding byte for byte outside the edited spans: UTF-8 (with
or without BOM), UTF-16/32 with a BOM, or GB18030, accepted only when
decoding and re-encoding gives back the very same bytes. A file whose lines
all end in CRLF gets CRLF in the edited text too. Binary files (a NUL in the
first 4 KiB, after BOM detection) are refused.

The whole file is read, so it must fit in the root's `max_read_bytes`; the
write is `app.fs.atomic.replace_file`, guarded so that a file changed by
someone else after we read it is never overwritten with our stale edit.
"""

from __future__ import annotations

import codecs
import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from app.errors import BadArgument, BinaryFile, FileChanged, LoomError, NotFound, TooLarge, os_error
from app.fs.atomic import replace_file
from app.fs.hashing import sha256_bytes
from app.fs.write import existing_target, read_current, unchanged_guard
from app.security.resolve import SecureRoot

SNIFF_BYTES = 4096

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # utf-32-le's BOM starts with utf-16-le's, so it is tried first.
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16-be"),
)
CUT_NOTE = "diff cut to fit max_output_chars ({total} lines in full); the edits {how} in full"
_LONE_LF = re.compile(r"(?<!\r)\n")


class TextEdit(BaseModel):
    old_text: str
    new_text: str


class EditResult(BaseModel):
    path: str
    dry_run: bool
    written: bool  # false for a dry run, or when the edits change nothing
    encoding: str
    sha256: str  # of the content on disk after the call (as it would be, for a dry run)
    diff: str  # unified diff, cut to max_output_chars when diff_truncated
    diff_truncated: bool
    note: str | None = None


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
    for bom, codec, label in _BOMS:
        if raw.startswith(bom):
            candidates = [Encoding(codec, bom, label)]
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


def apply_edits(text: str, edits: Sequence[TextEdit], rel: str) -> str:
    """Every edit in order, or an error naming the first that does not fit."""
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    total = len(edits)
    for i, edit in enumerate(edits, 1):
        old, new = edit.old_text, edit.new_text
        if crlf:  # the agent usually types "\n"; the file says "\r\n" throughout
            old, new = _LONE_LF.sub("\r\n", old), _LONE_LF.sub("\r\n", new)
        where = f"edit {i} of {total}" if total > 1 else "edit"
        first = text.find(old)
        if first < 0:
            later = " (edits apply in order, to the text left by the earlier ones)" if i > 1 else ""
            raise BadArgument(f"{where}: old_text not found in '{rel}' (0 occurrences){later}")
        if text.find(old, first + 1) >= 0:
            count = max(2, text.count(old))
            raise BadArgument(
                f"{where}: old_text occurs {count} times in '{rel}'; it must occur exactly "
                "once (include more surrounding lines to make it unique)"
            )
        text = text[:first] + new + text[first + len(old) :]
    return text


def bounded_diff(before: str, after: str, rel: str, budget: int) -> tuple[str, bool, int]:
    """A unified diff cut to `budget` characters of JSON text: (diff, cut, total lines)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
    )
    kept: list[str] = []
    used = 0
    cut = False
    total = 0
    for line in lines:
        total += 1
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        if cut:
            continue
        cost = len(json.dumps(line, ensure_ascii=False)) - 2
        if used + cost > budget:
            cut = True
            continue
        kept.append(line)
        used += cost
    return "".join(kept), cut, total


def edit_file(
    root: SecureRoot,
    path: str,
    edits: Sequence[TextEdit],
    *,
    max_output_chars: int,
    dry_run: bool = False,
    expected_sha256: str | None = None,
) -> EditResult:
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
    with parent:
        rel = parent.rel
        try:
            if existing_target(parent) is None:
                if expected_sha256:
                    raise FileChanged()
                raise NotFound(f"no such file or directory: '{rel}'")
            raw, seen = read_current(parent, root.max_read_bytes)
            if expected_sha256 and sha256_bytes(raw) != expected_sha256.lower():
                raise FileChanged()
            before, enc = decode(raw, rel)
            after = apply_edits(before, edits, rel)
            new_raw = enc.encode(after)
            if len(new_raw) > root.max_read_bytes:
                raise TooLarge(
                    f"the edited file would be {len(new_raw)} bytes, above root '{root.name}' "
                    f"max_read_bytes ({root.max_read_bytes}); nothing written"
                )
            written = not dry_run and new_raw != raw
            if written:
                replace_file(parent.fd, parent.name, new_raw, replace=True, like=seen,
                             guard=unchanged_guard(parent, seen))
        except LoomError:
            raise
        except OSError as exc:
            raise os_error(exc, rel) from None
    notes = []
    if dry_run:
        notes.append("dry run: nothing was written")
    elif new_raw == raw:
        notes.append("the edits leave the file as it was; nothing was written")
    result = EditResult(
        path=rel,
        dry_run=dry_run,
        written=written,
        encoding=enc.label,
        sha256=sha256_bytes(new_raw),
        diff="",
        diff_truncated=False,
        note="; ".join([*notes, CUT_NOTE]),  # the longest the note can be, for the budget
    )
    # The diff gets what the rest of the result leaves of max_output_chars.
    budget = max(0, max_output_chars - len(result.model_dump_json()) - 32)
    diff, cut, total = bounded_diff(before, after, rel, budget)
    if cut:
        notes.append(CUT_NOTE.format(total=total, how="would apply" if dry_run else "were applied"))
    return result.model_copy(
        update={"diff": diff, "diff_truncated": cut, "note": "; ".join(notes) or None}
    )
