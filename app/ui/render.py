"""HTML from templates that escape everything (Jinja2, autoescaping on, undefined names
an error) and show what a text hides.

Every `{{ value }}` goes through `reveal` before it is escaped: a control character or
an invisible format character (the bidirectional overrides and isolates, zero-width
joiners, a byte-order mark) becomes a visible `⟦U+202E⟧`, so a file name cannot reorder
what is printed around it or pass for another. Line feeds and tabs stay: diffs and
snippets are shown in `<pre>`.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.responses import HTMLResponse

_KEPT = {"\n", "\t"}


def _hidden(ch: str) -> bool:
    return ch not in _KEPT and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")


def reveal(value: Any) -> Any:
    """`value` with hidden characters made visible (Markup, already safe, untouched)."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    if value.isascii() and value.isprintable():
        return value
    return "".join(f"⟦U+{ord(ch):04X}⟧" if _hidden(ch) else ch for ch in value)


def human(n: int, whole: bool = True) -> str:
    """`n` bytes as a person reads them at a glance ("4 bytes", "28.0 KiB"); "at least"
    before a measure that stopped at its bound (`whole` False)."""
    least = "" if whole else "at least "
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return least + (f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}")
        size /= 1024
    raise AssertionError("unreachable")


ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("app.ui", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=reveal,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters["reveal"] = reveal
ENV.globals["category"] = unicodedata.category
ENV.globals["human"] = human


def page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
    values.setdefault("view", "")
    values.setdefault("session", None)
    return HTMLResponse(ENV.get_template(name).render(**values), status_code=status)
