"""The `google-re2` binding's own calls, below its Python wrapper: the one module that uses them.

A search runs RE2 once per candidate line and an ignore file's rules once per name; the
wrapper builds a `Match` object each time, the binding's `Match` returns spans. That speed
is bought with four private names of the package (`_regexp`, `_set`, `_Anchor`,
`_NULL_SPAN`). `RELIED_ON` lists them; `tests/fs/test_re2raw.py` checks each on the
installed package (a release that moves one fails there, naming it) and that no other
module of app/ reaches for a private name of `re2`. The major version is pinned in
pyproject.toml (docs/dependencies.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import re2

RELIED_ON: tuple[str, ...] = ("_regexp", "_set", "_Anchor", "_NULL_SPAN")

UNANCHORED: Any = re2._Anchor.UNANCHORED  # find anywhere from the start position
NULL_SPAN: Any = re2._NULL_SPAN  # the span of a group that did not take part

# What a raw match returns: one (start, end) span per group, group 0 first.
RawMatch = Callable[[Any, bytes, int, int], list[tuple[int, int]]]


def raw_match(compiled: Any) -> RawMatch:
    """The binding's `Match(anchor, text, pos, endpos)` of a pattern `re2.compile` made."""
    return compiled._regexp.Match


def set_match(compiled_set: Any) -> Callable[[bytes], list[int]]:
    """The binding's `Match(text)` of a compiled `re2.Set`: the indexes of the rules that
    match, as a list."""
    return compiled_set._set.Match
