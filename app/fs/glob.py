"""Glob patterns for `search_files` and `search_text`'s `file_glob`.

The seed's semantics, one deliberate departure from `glob`: a pattern
without `/` matches the base name at any depth (`*.py` finds every Python
file, so an agent never wrongly concludes there is none); with a `/` it is
matched against the whole path relative to the search's `path` (`pkg/*.py`
is strict). `**` crosses directories (`a/**/b`, `**/x`, `a/**`), `*` and `?`
stay within one segment, `[...]` and `[!...]` are classes. Matching is
case-sensitive. Empty, absolute, `..` and unclosed `[` patterns are refused
with a message that says why. Compiled patterns are memoised.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from app.errors import BadArgument

MAX_PATTERN = 1024
_LITERAL_SUFFIX = re.compile(r"^\*([^*?\[\]/]+)$")


@dataclass(frozen=True)
class Glob:
    pattern: str
    basename: bool  # no `/`: matched against the entry's name alone
    regex: re.Pattern[str]
    match_name: Callable[[str], object]  # for basename patterns: the fastest test that is exact

    def matches(self, rel: str, name: str) -> bool:
        """`rel` is the path relative to the search's start, `name` its last segment."""
        if self.basename:
            return bool(self.match_name(name))
        return self.regex.fullmatch(rel) is not None


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
    body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    return (f"[^/{body}]" if negate else f"[{body}]"), close + 1


def _segment(pattern: str, seg: str) -> str:
    out = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            if seg.startswith("**", i):  # `**` inside a segment still crosses directories
                out.append(".*")
                i += 2
            else:
                out.append("[^/]*")
                i += 1
            while i < len(seg) and seg[i] == "*":
                i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            part, i = _class(pattern, seg, i)
            out.append(part)
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _validate(pattern: str) -> list[str]:
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


@functools.lru_cache(maxsize=512)
def compile_glob(pattern: str) -> Glob:
    segs = _validate(pattern)
    parts: list[str] = []
    last = len(segs) - 1
    for k, seg in enumerate(segs):
        if seg == "**":
            parts.append(".*" if k == last else "(?:.*/)?")
            continue
        parts.append(_segment(pattern, seg) + ("" if k == last else "/"))
    regex = re.compile("".join(parts), re.DOTALL)
    basename = len(segs) == 1
    match_name: Callable[[str], object] = regex.fullmatch
    literal = _LITERAL_SUFFIX.match(segs[0]) if basename else None
    if literal:
        suffix = literal.group(1)

        def match_name(name: str) -> bool:
            return name.endswith(suffix)

    return Glob(pattern, basename, regex, match_name)
