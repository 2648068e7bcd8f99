"""Slipped edits made from real source files: the generator of benchmarks/edit_robustness.py.

An `Edit` is one file as it is written before the call (`before`), the `old_text` and
`new_text` an agent sends, and the file as intended after it (`after`), or `None` for an
ambiguous edit, which must be refused. Each edit is made from a block of 3 to 8 lines
inside one function of a real Python file (`blocks`: an `ast` walk of the file; a block
starts and ends on a non-blank line, holds no tab, no trailing space and no line of only
spaces, and occurs once in its file, even compared line by line with each line stripped
and typographic look-alikes folded, so no matching level can find it twice).
`new_text` is the block changed: a comment line inserted after its first line, at the
indentation of the line after it, and a comment appended to its last line.

Slip classes (`SLIPS`; `old_text` is the block as the slip copies it, `new_text` the
changed block as it would be written into the file unless said otherwise):
- `exact`: the control, the block as it is.
- `dedented`, `indented`: every line shifted left (by the block's least indentation or by
  4) or right (by 2, 4 or 8); `new_text` shifted alike, and intended re-indented like the
  file.
- `tabs`: each 4 spaces of indentation a tab (the file indents with spaces); `new_text`
  alike, intended in the file's spaces.
- `trailing-added`: spaces or a tab after some lines of `old_text`.
- `trailing-removed`: the file has trailing spaces on some of the block's lines,
  `old_text` has none (one line but the last at least has them, or `old_text` would be a
  plain substring of the file); the intended edit replaces those whole lines.
- `crlf-file`: the file's lines end in CRLF, `old_text`/`new_text` in LF; intended in CRLF.
- `crlf-text`: the file is LF, `old_text`/`new_text` in CRLF; intended in LF.
- `curly-quotes`: `'` and `"` as `’` and `“`/`”` (blocks with a quote).
- `dashes-ellipsis`: `...` as `…`, `--` as `—`, `-` as `–` (blocks with one of them).
- `unicode-spaces`: some spaces inside lines as U+00A0, U+202F or U+2009.
- `blank-line`: an empty line too many at the start or the end of `old_text` (the file
  has a non-blank line there).
- `line-numbers`: every line as this server's `read_text_file` shows it,
  `"<number> | <text>"` (`app/fs/reading/read.py`), with its true number.

Ambiguous classes (`AMBIGUOUS`; `after` is None):
- `twice-exact`: a verbatim copy of the block appended to the file.
- `twice-indented`: a copy 4 columns deeper appended; `old_text` dedented to column 0, so
  it matches neither copy exactly and both with each line stripped.

`generate` makes `per_class` edits of each class from the given files, seeded, and raises
`TooFew` naming a class that could not make as many: a class that silently makes nothing
would report a rate over no edits.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SLIPS = (
    "exact", "dedented", "indented", "tabs", "trailing-added", "trailing-removed",
    "crlf-file", "crlf-text", "curly-quotes", "dashes-ellipsis", "unicode-spaces",
    "blank-line", "line-numbers",
)
AMBIGUOUS = ("twice-exact", "twice-indented")
CLASSES = SLIPS + AMBIGUOUS

MIN_LINES, MAX_LINES = 3, 8
MAX_FILE_BYTES = 256 << 10  # the files stay small next to any root's max_read_bytes
ATTEMPTS_PER_EDIT = 400  # random picks tried per edit wanted before a class gives up
TAB_WIDTH = 4
UNICODE_SPACES = ("\u00a0", "\u202f", "\u2009")
READ_PREFIX = "{number} | {text}"  # app/fs/reading/read.py: f"{line.number} | {text}"
_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       "\u2013": "-", "\u2014": "-", "\u2026": "...", "\u00a0": " ",
                       "\u202f": " ", "\u2009": " "})
_ODD = re.compile(r"[\t\r\x0b\x0c]")


class TooFew(Exception):
    """A class could not make the number of edits asked for from these files."""


@dataclass(frozen=True)
class Edit:
    slip: str
    source: str  # where the block came from: "<label>/<relative path>:<first line>"
    before: bytes  # the file as written before the call (UTF-8)
    old_text: str
    new_text: str
    after: bytes | None  # the file as intended after the call; None: must be refused


@dataclass(frozen=True)
class Source:
    label: str  # "stdlib" or the package's name
    top: Path
    path: Path

    @property
    def name(self) -> str:
        return f"{self.label}/{self.path.relative_to(self.top).as_posix()}"


@dataclass(frozen=True)
class Block:
    """Lines `first`..`first + len(lines) - 1` (0-based) of `text`'s `lines`."""

    source: Source
    lines: tuple[str, ...]  # every line of the file, without its "\n"
    first: int
    size: int

    @property
    def body(self) -> list[str]:
        return list(self.lines[self.first : self.first + self.size])

    def with_lines(self, middle: Sequence[str], *extra: str) -> str:
        """The file with the block's lines replaced by `middle`, then `extra` lines."""
        out = [*self.lines[: self.first], *middle, *self.lines[self.first + self.size :], *extra]
        return "\n".join(out) + "\n"


def sources(label: str, top: Path) -> list[Source]:
    """The `.py` files under `top`, sorted, but for those of a `site-packages` below it
    (their test folders too: real code all the same)."""
    return [Source(label, top, p) for p in sorted(top.rglob("*.py"))
            if p.is_file() and not p.is_symlink()
            and "site-packages" not in p.relative_to(top).parts]


@lru_cache(maxsize=512)
def _parsed(path: Path) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]] | None:
    """The file's lines and its functions' line spans (0-based, inclusive), or None."""
    try:
        raw = path.read_bytes()
        if len(raw) > MAX_FILE_BYTES:
            return None
        text = raw.decode("utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    if "\r" in text or "\t" in text or not text.endswith("\n"):
        return None
    spans = tuple((n.lineno - 1, (n.end_lineno or n.lineno) - 1) for n in ast.walk(tree)
                  if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return tuple(text[:-1].split("\n")), spans


def _norm(line: str) -> str:
    return line.translate(_FOLD).strip()


def _count(lines: Sequence[str], window: Sequence[str]) -> int:
    """How many places `window` fills in `lines`, each line compared stripped and folded."""
    want = [_norm(x) for x in window]
    have = [_norm(x) for x in lines]
    n = len(want)
    return sum(1 for i in range(len(have) - n + 1) if have[i : i + n] == want)


def _clean(line: str) -> bool:
    return not _ODD.search(line) and line == line.rstrip() and (line == "" or line.strip() != "")


def pick_block(rng: random.Random, files: Sequence[Source]) -> Block | None:
    """A random unique block of one function of one of `files`, or None for a bad pick."""
    source = rng.choice(files)
    parsed = _parsed(source.path)
    if parsed is None or not parsed[1]:
        return None
    lines, spans = parsed
    lo, hi = rng.choice(spans)
    size = rng.randint(MIN_LINES, MAX_LINES)
    if hi - lo + 1 < size:
        return None
    first = rng.randint(lo, hi - size + 1)
    body = lines[first : first + size]
    if not body[0].strip() or not body[-1].strip() or not all(_clean(x) for x in body):
        return None
    text = "\n".join(lines) + "\n"
    if text.count("\n".join(body)) != 1 or _count(lines, body) != 1:
        return None
    return Block(source, lines, first, size)


# -- how a block is changed and slipped -----------------------------------------------


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def changed(body: Sequence[str], mark: int) -> list[str]:
    """The block as the edit means it: a comment after its first line, one at its end."""
    below = next((x for x in body[1:] if x.strip()), body[0])
    return [body[0], " " * indent_of(below) + f"# edited {mark}", *body[1:-1],
            body[-1] + f"  # changed {mark}"]


def shift(body: Sequence[str], by: int) -> list[str]:
    """Every non-blank line moved `by` columns (left when negative)."""
    if by < 0:
        assert all(indent_of(x) >= -by for x in body if x), "shifted past column 0"
        return [x[-by:] if x else x for x in body]
    return [" " * by + x if x else x for x in body]


def tabbed(body: Sequence[str]) -> list[str]:
    """Each TAB_WIDTH spaces of indentation a tab."""
    return ["\t" * (indent_of(x) // TAB_WIDTH) + x.lstrip(" ") for x in body]


def curly(line: str) -> str:
    out, opened = [], False
    for ch in line:
        if ch == "'":
            out.append("\u2019")
        elif ch == '"':
            out.append("\u201d" if opened else "\u201c")
            opened = not opened
        else:
            out.append(ch)
    return "".join(out)


def dashed(line: str) -> str:
    return line.replace("...", "\u2026").replace("--", "\u2014").replace("-", "\u2013")


def inner_spaces(line: str) -> list[int]:
    """Offsets of the spaces after a line's indentation."""
    start = indent_of(line)
    return [i for i, ch in enumerate(line) if ch == " " and i >= start]


def numbered(body: Sequence[str], first: int) -> list[str]:
    return [READ_PREFIX.format(number=first + 1 + i, text=x) for i, x in enumerate(body)]


# -- the classes ------------------------------------------------------------------------

Made = tuple[str, str, str, str | None]  # before, old_text, new_text, after (text, "\n")
Maker = Callable[[random.Random, Block, int], Made | None]


def _plain(block: Block, old: Sequence[str], new: Sequence[str] | None = None) -> Made:
    """The file as it is; `old` sent, the changed block written (or `new` sent for it)."""
    body = block.body
    want = changed(body, block.first)
    sent = want if new is None else new
    return (block.with_lines(body), "\n".join(old), "\n".join(sent), block.with_lines(want))


def _exact(rng: random.Random, b: Block, _: int) -> Made | None:
    return _plain(b, b.body)


def _dedented(rng: random.Random, b: Block, _: int) -> Made | None:
    least = min(indent_of(x) for x in b.body if x)
    if least == 0:
        return None
    by = least if least < TAB_WIDTH or rng.random() < 0.5 else TAB_WIDTH
    return _plain(b, shift(b.body, -by), shift(changed(b.body, b.first), -by))


def _indented(rng: random.Random, b: Block, _: int) -> Made | None:
    by = rng.choice((2, 4, 8))
    return _plain(b, shift(b.body, by), shift(changed(b.body, b.first), by))


def _tabs(rng: random.Random, b: Block, _: int) -> Made | None:
    indents = [indent_of(x) for x in b.body if x]
    if max(indents) < TAB_WIDTH or any(i % TAB_WIDTH for i in indents):
        return None
    return _plain(b, tabbed(b.body), tabbed(changed(b.body, b.first)))


def _trailing_added(rng: random.Random, b: Block, _: int) -> Made | None:
    body = b.body
    which = rng.sample(range(len(body)), rng.randint(1, len(body)))
    old = [x + rng.choice((" ", "  ", "\t", "   ")) if i in which else x
           for i, x in enumerate(body)]
    return _plain(b, old)


def _trailing_removed(rng: random.Random, b: Block, _: int) -> Made | None:
    body = b.body
    which = set(rng.sample(range(len(body)), rng.randint(1, len(body))))
    # Spaces on the last line alone would leave `old_text` a substring of the file: exact.
    which.add(rng.randrange(len(body) - 1))
    on_disk = [x + rng.choice((" ", "  ", "    ")) if i in which else x
               for i, x in enumerate(body)]
    want = changed(body, b.first)
    return (b.with_lines(on_disk), "\n".join(body), "\n".join(want), b.with_lines(want))


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _crlf_file(rng: random.Random, b: Block, _: int) -> Made | None:
    before, old, new, after = _plain(b, b.body)
    assert after is not None
    return _crlf(before), old, new, _crlf(after)


def _crlf_text(rng: random.Random, b: Block, _: int) -> Made | None:
    before, old, new, after = _plain(b, b.body)
    return before, _crlf(old), _crlf(new), after


def _curly_quotes(rng: random.Random, b: Block, _: int) -> Made | None:
    if not any("'" in x or '"' in x for x in b.body):
        return None
    return _plain(b, [curly(x) for x in b.body])


def _dashes(rng: random.Random, b: Block, _: int) -> Made | None:
    if not any("-" in x or "..." in x for x in b.body):
        return None
    return _plain(b, [dashed(x) for x in b.body])


def _unicode_spaces(rng: random.Random, b: Block, _: int) -> Made | None:
    spots = [(i, j) for i, x in enumerate(b.body) for j in inner_spaces(x)]
    if not spots:
        return None
    old = [list(x) for x in b.body]
    for i, j in rng.sample(spots, rng.randint(1, min(len(spots), 4))):
        old[i][j] = rng.choice(UNICODE_SPACES)
    return _plain(b, ["".join(x) for x in old])


def _blank_line(rng: random.Random, b: Block, _: int) -> Made | None:
    at_end = rng.random() < 0.5
    beside = b.first + b.size if at_end else b.first - 1
    if not 0 <= beside < len(b.lines) or not b.lines[beside].strip():
        return None
    # "\n\n" before the block: an empty line after the line before it; "\n\n" after it alike.
    old = [*b.body, ""] if at_end else ["", *b.body]
    before, _old, new, after = _plain(b, b.body)
    text = "\n".join(old)
    return before, (text + "\n" if at_end else "\n" + text), new, after


def _line_numbers(rng: random.Random, b: Block, _: int) -> Made | None:
    return _plain(b, numbered(b.body, b.first))


def _twice_exact(rng: random.Random, b: Block, _: int) -> Made | None:
    body = b.body
    return b.with_lines(body, "", *body), "\n".join(body), "\n".join(changed(body, 0)), None


def _twice_indented(rng: random.Random, b: Block, _: int) -> Made | None:
    body = b.body
    least = min(indent_of(x) for x in body if x)
    if least == 0:
        return None
    before = b.with_lines(body, "", "if True:", *shift(body, TAB_WIDTH))
    old = shift(body, -least)
    return before, "\n".join(old), "\n".join(shift(changed(body, 0), -least)), None


MAKERS: dict[str, Maker] = {
    "exact": _exact, "dedented": _dedented, "indented": _indented, "tabs": _tabs,
    "trailing-added": _trailing_added, "trailing-removed": _trailing_removed,
    "crlf-file": _crlf_file, "crlf-text": _crlf_text, "curly-quotes": _curly_quotes,
    "dashes-ellipsis": _dashes, "unicode-spaces": _unicode_spaces, "blank-line": _blank_line,
    "line-numbers": _line_numbers, "twice-exact": _twice_exact,
    "twice-indented": _twice_indented,
}
assert tuple(MAKERS) == CLASSES


def generate(files: Sequence[Source], per_class: int, seed: int = 1,
             classes: Iterable[str] = CLASSES) -> dict[str, list[Edit]]:
    """`per_class` edits of each class, each of a block no other edit of its class uses."""
    if not files:
        raise TooFew("no source files to make edits from")
    out: dict[str, list[Edit]] = {}
    for k, slip in enumerate(classes):
        rng = random.Random(seed * 1000 + k)
        made: list[Edit] = []
        used: set[tuple[Path, int]] = set()
        for _ in range(per_class * ATTEMPTS_PER_EDIT):
            if len(made) == per_class:
                break
            block = pick_block(rng, files)
            if block is None or (block.source.path, block.first) in used:
                continue
            got = MAKERS[slip](rng, block, k)
            if got is None:
                continue
            used.add((block.source.path, block.first))
            before, old, new, after = got
            made.append(Edit(slip, f"{block.source.name}:{block.first + 1}",
                             before.encode(), old, new,
                             None if after is None else after.encode()))
        if len(made) < per_class:
            raise TooFew(f"slip class {slip!r} made {len(made)} of {per_class} edits from "
                         f"{len(files)} files")
        out[slip] = made
    return out


# -- judging what a server did ----------------------------------------------------------

OUTCOMES = ("correct", "wrong", "refused", "other")


def judge(edit: Edit, failed: bool, now: bytes) -> str:
    """`correct`: no error and the file is as intended; `refused`: an error and the file as
    it was; `wrong`: the file changed, not as intended (for an ambiguous edit: changed at
    all); `other`: an answer at odds with the file (success and no change, or an error
    and the intended change)."""
    if now == edit.before:
        return "refused" if failed else "other"
    if edit.after is not None and now == edit.after:
        return "other" if failed else "correct"
    return "wrong"


def how_wrong(edit: Edit, now: bytes) -> str:
    """What a wrong result got wrong, roughly: for the notes under the table."""
    if edit.after is None:
        return "edited one of two places"
    if now.replace(b"\r\n", b"\n") == edit.after.replace(b"\r\n", b"\n"):
        return "line endings of the file changed"
    got, want = now.decode(errors="replace"), edit.after.decode(errors="replace")
    got_lines, want_lines = got.split("\n"), want.split("\n")
    if [x.rstrip() for x in got_lines] == [x.rstrip() for x in want_lines]:
        return "right place, trailing whitespace differs"
    if [x.strip() for x in got_lines] == [x.strip() for x in want_lines]:
        return "right place, indentation differs"
    if got.count("\n") != want.count("\n"):
        return "line count differs (lines joined or added)"
    return "text differs"
