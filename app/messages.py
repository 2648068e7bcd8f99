"""Validation errors in the server's own words.

pydantic's messages are written for Python programmers (`Input should be
greater than or equal to 1 [type=greater_than_equal, ...] https://errors...`):
long, versioned, and they never quote the bad value. Tool arguments and the
config file both go through `phrase()`, which says what was wrong with the
value in one short clause; the caller names the parameter or field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

SHOWN_CHARS = 40


def location(loc: Sequence[int | str]) -> str:
    """`("edits", 0, "old_text")` -> `edits[0].old_text`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def shown(value: Any) -> str:
    """A short, quoted rendering of a value the caller sent."""
    if isinstance(value, str):
        cut = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "..."
        return "'" + "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut) + "'"
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _choices(expected: str) -> str:
    """pydantic's `'read', 'write' or 'delete'` -> `read, write, delete`."""
    return expected.replace(" or ", ", ").replace("'", "")


def _items(n: Any) -> str:
    return "1 item" if n == 1 else f"{n} items"


_TYPES = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def phrase(err: Any) -> str:
    """One clause for one pydantic error (an item of `ValidationError.errors()`).

    It starts with `must`/`is` when the subject should precede it without a colon
    (`start_line must be at least 1`), and with the quoted value otherwise
    (`'admin' is not one of read, write, delete`).
    """
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    got = f" (got {shown(value)})"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind in ("literal_error", "enum"):
        return f"{shown(value)} is not one of {_choices(str(ctx.get('expected', '')))}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}{got}"
    if kind == "greater_than":
        return f"must be greater than {ctx.get('gt')}{got}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}{got}"
    if kind == "less_than":
        return f"must be less than {ctx.get('lt')}{got}"
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "must not be empty" if least == 1 else f"must have at least {least} characters"
    if kind == "string_too_long":
        size = len(value) if isinstance(value, str) else "?"
        return f"is too long: {size} characters, at most {ctx.get('max_length')}"
    if kind == "too_short":
        got = f" (got {ctx.get('actual_length')})"
        return f"must have at least {_items(ctx.get('min_length'))}{got}"
    if kind == "too_long":
        got = f" (got {ctx.get('actual_length')})"
        return f"must have at most {_items(ctx.get('max_length'))}{got}"
    if kind == "string_pattern_mismatch":
        return f"does not match {ctx.get('pattern')}{got}"
    if kind in _TYPES:
        return _TYPES[kind] + got
    msg = str(err.get("msg", "is not valid"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def sentence(subject: str, err: Any) -> str:
    """`subject` and its error as one sentence: `limit must be at least 1 (got 0)`."""
    said = phrase(err)
    if not subject:
        return said
    if said.startswith(("must ", "is ", "does ")):
        return f"{subject} {said}"
    return f"{subject}: {said}"


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def size_text(nbytes: int) -> str:
    """`10485760` -> `10.0 MiB`; below a KiB, the bytes themselves."""
    for size, unit in _UNITS:
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} bytes"


def duration_text(seconds: float) -> str:
    """`75.2` -> `1 min 16 s`, rounded up to the second (`never` for an infinite wait)."""
    if seconds == float("inf"):
        return "never"
    whole = max(int(-(-seconds // 1)), 0)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"
