"""Glob syntax: validation, tokens, and the reference regex (`translate`).

The semantics (app/fs/filters/glob.py says them in full): a pattern is split at `/`
into segments; `**` as a segment crosses directories, a run of two or more
stars inside a segment crosses too, `*` and `?` stay within one segment,
`[...]` and `[!...]` are classes. Empty, absolute, `..` and unclosed `[`
patterns are refused with a message that says why.

`translate` turns a pattern into a Python regex. A backtracking regex is
exponential in the wildcards of some patterns, so it is used only for those
with at most one unbounded wildcard, and by tests as the oracle; every other
pattern goes to app/fs/filters/linear.py.
"""

from __future__ import annotations

import re

from app.errors import BadArgument

MAX_PATTERN = 1024
_STARS = re.compile(r"\*+")


def _bad(pattern: str, why: str) -> BadArgument:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return BadArgument(f"invalid glob '{shown}': {why}")


def _class(pattern: str, seg: str, i: int) -> tuple[str, int]:
    """Translate the class starting at seg[i] == '['; return (regex, index after it)."""
    j = i + 1
    negate = j < len(seg) and seg[j] in "!^"
    if negate:
        j += 1
    if j < len(seg) and seg[j] == "]":  # a leading ']' is a member, as in fnmatch
        j += 1
    close = seg.find("]", j)
    if close < 0:
        raise _bad(pattern, "unclosed '[' (a class needs its ']')")
    body = seg[i + 1 + negate : close]
    body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[").replace("]", "\\]")
    try:
        re.compile(f"[{body}]")
    except re.error:  # the only error left in a class body: a range such as `z-a`
        raise _bad(pattern, "a range in a class runs backwards (as in '[z-a]')") from None
    return (f"[^/{body}]" if negate else f"[{body}]"), close + 1


# Tokens of a segment: a literal character, a one-character regex (`?`, class), or a
# wildcard.
LIT = "l"
ONE = "c"
STAR = "*"  # within the segment
ANY = "**"  # crosses directories
Token = tuple[str, str]  # (LIT, the character) | (ONE, its regex) | (STAR | ANY, "")


def tokens(pattern: str, seg: str) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            run = _STARS.match(seg, i)
            assert run is not None
            out.append((ANY if run.end() - i >= 2 else STAR, ""))  # `**` in a segment crosses too
            i = run.end()
        elif c == "?":
            out.append((ONE, "[^/]"))
            i += 1
        elif c == "[":
            part, i = _class(pattern, seg, i)
            out.append((ONE, part))
        else:
            out.append((LIT, c))
            i += 1
    return out


def validate(pattern: str) -> list[str]:
    if not isinstance(pattern, str) or not pattern.strip():
        raise _bad(pattern if isinstance(pattern, str) else "?", "the pattern is empty")
    if len(pattern) > MAX_PATTERN:
        raise _bad(pattern, f"longer than {MAX_PATTERN} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in pattern):
        raise _bad(pattern, "contains a control character")
    if "\\" in pattern:
        raise _bad(pattern, "contains a backslash; use '/' between directories")
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:", pattern):
        # Not echoed: an absolute pattern may well be a host path.
        raise BadArgument(
            "invalid glob: absolute patterns are not accepted; patterns are relative to path"
        )
    segs = pattern.split("/")
    if ".." in segs:
        raise _bad(pattern, "'..' is not accepted in a pattern")
    if "" in segs:
        raise _bad(pattern, "empty segment (a doubled or trailing '/')")
    return [s for s in segs if s != "."] or ["*"]


def translate(pattern: str) -> str:
    """The pattern as a Python regex (for `fullmatch`, DOTALL): the semantics' reference.

    Backtracks on patterns with several wildcards: only used for those with at
    most one, and by tests as the oracle.
    """
    segs = validate(pattern)
    if len(segs) == 1:
        # A base name holds no '/': every run of stars is one segment star.
        return _regex([(STAR if k == ANY else k, r) for k, r in tokens(pattern, segs[0])])
    parts: list[str] = []
    last = len(segs) - 1
    for k, seg in enumerate(segs):
        if seg == "**":
            parts.append(".*" if k == last else "(?:.*/)?")
            continue
        parts.append(_regex(tokens(pattern, seg)) + ("" if k == last else "/"))
    return "".join(parts)


def _regex(toks: list[Token]) -> str:
    return "".join(one_regex(tok) for tok in toks)


def one_regex(tok: Token) -> str:
    kind, value = tok
    return {STAR: "[^/]*", ANY: ".*", LIT: re.escape(value)}.get(kind, value)
