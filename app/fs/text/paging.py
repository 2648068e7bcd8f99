"""Offset pagination and the output bound shared by every listing, search and read.

Sizes are measured on the result's compact JSON: what `text_format = "json"`
sends, and longer than the readable text `app.tools.render` writes from it (which
also cuts itself at the bound, visibly, should it ever be longer). A page is cut to fit
`max_output_chars` item by item; the cut is never silent (`has_more` +
`next_offset` + `note`), and the next page starts exactly after the last item
returned, so walking every page yields every item once, in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

# Room kept for fields that change once the page is known (numbers, the note).
RESERVE = 256


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def json_len(value: BaseModel | dict[str, Any] | list[Any] | str) -> int:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return len(dumps(value))


def escaped_len(text: str) -> int:
    """Characters `text` takes inside a JSON string (without the quotes)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return len(text)
    return len(dumps(text)) - 2


def cut_to(text: str, limit: int) -> str:
    """The longest prefix of `text` whose JSON-escaped form fits in `limit`."""
    if limit <= 0:
        return ""
    k = min(len(text), limit)
    while k > 0:
        over = escaped_len(text[:k]) - limit
        if over <= 0:
            return text[:k]
        k -= max(1, over // 6)
    return ""


def clamp_limit(limit: int, cap: int) -> int:
    """`limit` above `max_search_results` is clamped; the result shows the value used."""
    return max(1, min(limit, cap))


def flat_len(item: BaseModel | dict[str, Any]) -> int:
    """Exact length of a flat item's compact JSON (scalar fields only), without dumping it."""
    n = 1  # the braces, minus the comma the loop adds once too often
    fields = item if isinstance(item, dict) else item.__dict__
    for key, value in fields.items():
        n += len(key) + 4  # "key": and a comma
        if isinstance(value, str):
            n += escaped_len(value) + 2
        elif value is None:
            n += 4
        elif isinstance(value, bool):
            n += 4 if value else 5
        elif isinstance(value, int):
            n += len(str(value))
        else:
            return json_len(item)
    return n


def fitting(items: Iterable[T], room: int, size: Callable[[T], int]) -> int:
    """How many of the first `items` fit in `room` characters, each `size(item)` and a comma."""
    used = n = 0
    for item in items:
        used += size(item) + 1
        if used > room:
            break
        n += 1
    return n


def fit_page(
    make: Callable[[int], M], items: Sequence[BaseModel | dict[str, Any]], cap: int
) -> tuple[M, int]:
    """The result holding as many of `items` as fit in `cap` characters, and that count.

    `make(n)` builds the result with the first `n` items (and its note and
    next_offset for that n). Items must be flat (see `flat_len`): when the
    page does not fit whole, their sizes are added up one by one to find the
    cut, and only the final result is checked by dumping it.
    """
    base = json_len(make(0)) + RESERVE
    # The common case, a page that fits, costs one C-level dump of the items.
    plain = [i if isinstance(i, dict) else i.model_dump(mode="json") for i in items]
    if base + len(dumps(plain)) <= cap:
        return make(len(items)), len(items)
    n = fitting(items, cap - base, flat_len)
    if n == len(items):
        return make(n), n
    while True:
        result = make(n)
        if n == 0 or json_len(result) <= cap:
            return result, n
        n -= 1


def page_note(returned: int, offset: int, cut_by_output: bool, cap: int) -> str | None:
    if not cut_by_output:
        return None
    return (
        f"output limit reached (max_output_chars = {cap}): {returned} items returned; "
        f"continue with offset={offset + returned}"
    )
