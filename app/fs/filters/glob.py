"""Glob patterns for `search_files` and `search_text`'s `file_glob`.

The seed's semantics, one deliberate departure from `glob`: a pattern
without `/` matches the base name at any depth (`*.py` finds every Python
file, so an agent never wrongly concludes there is none); with a `/` it is
matched against the whole path relative to the search's `path` (`pkg/*.py`
is strict). `**` crosses directories (`a/**/b`, `**/x`, `a/**`), `*` and `?`
stay within one segment, `[...]` and `[!...]` are classes. Matching is
case-sensitive. Empty, absolute, `..` and unclosed `[` patterns are refused
with a message that says why. Compiled patterns are memoised.

Cost: a client's pattern must never make a match expensive. A pattern with
at most one unbounded wildcard becomes a regex (app/fs/filters/syntax.py: at
most one split per position to try, O(name x pattern)); any other pattern
is matched without backtracking by app/fs/filters/linear.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from app.fs.filters.linear import linear_match
from app.fs.filters.syntax import ANY, STAR, tokens, translate, validate

_LITERAL_SUFFIX = re.compile(r"^\*([^*?\[\]/]+)$")


@dataclass(frozen=True)
class Glob:
    pattern: str
    basename: bool  # no `/`: matched against the entry's name alone
    match_name: Callable[[str], object]  # basename patterns: name -> truthy when it matches
    match_path: Callable[[str], object]  # `/` patterns: relative path -> truthy

    def matches(self, rel: str, name: str) -> bool:
        """`rel` is the path relative to the search's start, `name` its last segment."""
        if self.basename:
            return bool(self.match_name(name))
        return bool(self.match_path(rel))


def _wildcards(pattern: str, segs: list[str]) -> int:
    return sum(
        1 if seg == "**" and len(segs) > 1
        else sum(1 for k, _ in tokens(pattern, seg) if k in (STAR, ANY))
        for seg in segs
    )


@functools.lru_cache(maxsize=512)
def compile_glob(pattern: str) -> Glob:
    segs = validate(pattern)
    basename = len(segs) == 1
    match: Callable[[str], object]
    if _wildcards(pattern, segs) <= 1:
        # At most one split per position to try: a C regex is the fastest exact test.
        match = re.compile(translate(pattern), re.DOTALL).fullmatch
    elif len(segs) == 2 and segs[0] == "**" and "**" not in segs[1]:
        # `**/x` is `x` on the last segment (the common form gets the base name's speed).
        last = compile_glob(segs[1]).match_name

        def match(rel: str) -> object:
            return last(rel[rel.rfind("/") + 1 :])
    else:
        match = linear_match(pattern)
    literal = _LITERAL_SUFFIX.match(segs[0]) if basename else None
    if literal:
        suffix = literal.group(1)

        def match(name: str) -> bool:
            return name.endswith(suffix)

    return Glob(pattern, basename, match, match)
