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

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from app.errors import BadArgument, BinaryFile, FileChanged, LoomError, NotFound, TooLarge, os_error
from app.fs import textio
from app.fs.atomic import replace_file
from app.fs.hashing import sha256_bytes
from app.fs.paging import Control, NoControl
from app.fs.write import existing_target, read_current, unchanged_guard
from app.security.resolve import SecureRoot

SNIFF_BYTES = 4096

MAX_REGIONS = 10**6  # for sizing the note only
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


def apply_edits(text: str, edits: Sequence[TextEdit], rel: str) -> str:
    """Every edit in order, or an error naming the first that does not fit."""
    return apply_tracked(text, edits, rel)[0]


# A changed stretch of the edited text: [start, end) in the text after the edits,
# and the length of what it replaced in the text before them.
Span = tuple[int, int, int]


def apply_tracked(text: str, edits: Sequence[TextEdit], rel: str) -> tuple[str, list[Span]]:
    """The edited text and where it differs from `text` (sorted, disjoint spans)."""
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    total = len(edits)
    spans: list[Span] = []
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
        spans = _track(spans, first, first + len(old), len(new))
    return text, spans


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


CONTEXT = 3  # lines of context around a change, as `diff -u`
# Lines taken around each edit: more than CONTEXT, as the best alignment of the
# lines may start or end a little away from the edited characters.
REGION_CONTEXT = 2 * CONTEXT
# Lines(before) x lines(after) of one changed region that SequenceMatcher may
# cost (super-quadratic on repetitive lines: 1000 x 1000 took 55 ms, 2000 x 2000
# 385 ms), and of all regions of one call. A larger region is shown as its old
# lines removed and its new lines added: a correct diff, just not a minimal one.
PAIR_LIMIT = 250_000
CALL_PAIR_LIMIT = 2_000_000
COARSE_NOTE = "{n} changed region(s) too large to align line by line are shown whole (- then +)"


@dataclass
class _Hunks:
    """The hunks of a diff, made one at a time: each is (line count, lines)."""

    coarse: int = 0


def _back(text: str, pos: int, lines: int) -> int:
    """Start of the line holding `pos`, moved `lines` lines up."""
    pos = text.rfind("\n", 0, pos) + 1
    for _ in range(lines):
        if pos == 0:
            break
        pos = text.rfind("\n", 0, pos - 1) + 1
    return pos


def _forward(text: str, pos: int, lines: int) -> int:
    """End (after its newline) of the line holding `pos`, moved `lines` lines down."""
    for _ in range(lines + 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return pos


def _regions(before: str, spans: list[Span]) -> list[tuple[int, int, int, int]]:
    """(before start, before end, after start, after end) of each changed region with
    its context; regions whose context meets are one."""
    out: list[list[int]] = []
    shift = 0  # after offset - before offset, left of the current span
    for a_s, a_e, was in spans:
        b_s = a_s - shift
        b_e = b_s + was
        after_shift = shift + (a_e - a_s) - was
        r0 = _back(before, b_s, REGION_CONTEXT)
        r1 = _forward(before, max(b_s, b_e - 1), REGION_CONTEXT)
        if out and r0 <= out[-1][1]:
            out[-1][1], out[-1][3] = r1, r1 + after_shift
        else:
            out.append([r0, r1, r0 + shift, r1 + after_shift])
        shift = after_shift
    return [(a, b, c, d) for a, b, c, d in out]


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _range(start: int, length: int) -> str:
    """difflib's unified range: 1-based start, and the length unless it is 1."""
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def diff_hunks(
    before: str, after: str, spans: list[Span], control: Control, stats: _Hunks
) -> Iterator[tuple[int, Iterable[str]]]:
    """Unified-diff hunks of the changed regions only: the untouched rest of the file is
    never split into lines nor compared."""
    pairs_left = CALL_PAIR_LIMIT
    line_b = line_a = 0  # line numbers (0-based) at pos_b / pos_a
    pos_b = pos_a = 0
    for r0, r1, q0, q1 in _regions(before, spans):
        control.check()
        line_b += before.count("\n", pos_b, r0)
        line_a += after.count("\n", pos_a, q0)
        pos_b, pos_a = r0, q0
        n_b = before.count("\n", r0, r1) + (r1 > r0 and not before.endswith("\n", r0, r1))
        n_a = after.count("\n", q0, q1) + (q1 > q0 and not after.endswith("\n", q0, q1))
        if n_b * n_a <= min(PAIR_LIMIT, pairs_left):
            pairs_left -= n_b * n_a
            old, new = _lines(before[r0:r1]), _lines(after[q0:q1])
            matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
            for group in matcher.get_grouped_opcodes(CONTEXT):
                out = [
                    f"@@ -{_range(line_b + group[0][1], group[-1][2] - group[0][1])} "
                    f"+{_range(line_a + group[0][3], group[-1][4] - group[0][3])} @@\n"
                ]
                for tag, i1, i2, j1, j2 in group:
                    if tag == "equal":
                        out += [" " + x for x in old[i1:i2]]
                        continue
                    out += ["-" + x for x in old[i1:i2]]
                    out += ["+" + x for x in new[j1:j2]]
                yield len(out), out
        else:
            stats.coarse += 1
            header = f"@@ -{_range(line_b, n_b)} +{_range(line_a, n_a)} @@\n"
            yield 1 + n_b + n_a, _coarse(header, before, r0, r1, after, q0, q1, control)


def _coarse(
    header: str, before: str, r0: int, r1: int, after: str, q0: int, q1: int, control: Control
) -> Iterator[str]:
    yield header
    for sign, text, lo, hi in (("-", before, r0, r1), ("+", after, q0, q1)):
        pos = lo
        k = 0
        while pos < hi:
            nl = text.find("\n", pos, hi)
            end = hi if nl < 0 else nl + 1
            yield sign + text[pos:end]
            pos = end
            k += 1
            if k % 4096 == 0:
                control.check()


def bounded_diff(
    before: str, after: str, spans: list[Span], rel: str, budget: int, control: Control
) -> tuple[str, bool, int, int]:
    """A unified diff cut to `budget` characters of JSON text:
    (diff, cut, total lines, regions shown whole)."""
    kept: list[str] = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    used = sum(len(json.dumps(x, ensure_ascii=False)) - 2 for x in kept)
    cut = False
    total = 2
    stats = _Hunks()
    for count, lines in diff_hunks(before, after, spans, control, stats):
        total += count
        if cut:
            continue  # counted, never made
        for line in lines:
            if not line.endswith("\n"):  # lines end at "\n" only: a lone "\r" is text
                line += "\n\\ No newline at end of file\n"
            cost = len(json.dumps(line, ensure_ascii=False)) - 2
            if used + cost > budget:
                cut = True
                break
            kept.append(line)
            used += cost
    if total == 2:
        return "", False, 0, 0
    return "".join(kept), cut, total, stats.coarse


def edit_file(
    root: SecureRoot,
    path: str,
    edits: Sequence[TextEdit],
    *,
    max_output_chars: int,
    dry_run: bool = False,
    expected_sha256: str | None = None,
    control: Control | None = None,
) -> EditResult:
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
            control.check()
            after, spans = apply_tracked(before, edits, rel)
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
        # the longest the note can be, for the budget
        note="; ".join([*notes, CUT_NOTE, COARSE_NOTE.format(n=MAX_REGIONS)]),
    )
    # The diff gets what the rest of the result leaves of max_output_chars.
    budget = max(0, max_output_chars - len(result.model_dump_json()) - 32)
    diff, cut, total, coarse = bounded_diff(before, after, spans, rel, budget, control)
    if cut:
        notes.append(CUT_NOTE.format(total=total, how="would apply" if dry_run else "were applied"))
    if coarse:
        notes.append(COARSE_NOTE.format(n=coarse))
    return result.model_copy(
        update={"diff": diff, "diff_truncated": cut, "note": "; ".join(notes) or None}
    )
