"""app/fs/re2raw.py is the one module that reaches below re2's wrapper, and what it reaches
for is there: a `google-re2` release that moves a name fails here, naming it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import re2

from app.fs import re2raw

APP = Path(__file__).resolve().parents[2] / "app"


@pytest.mark.parametrize("name", re2raw.RELIED_ON)
def test_every_name_relied_on_is_on_the_installed_re2(name: str) -> None:
    owners = {"_regexp": re2.compile("a"), "_set": _compiled_set(), "_Anchor": re2,
              "_NULL_SPAN": re2}
    assert hasattr(owners[name], name), f"re2 no longer has {name}: see app/fs/re2raw.py"


def _compiled_set() -> re2.Set:
    s = re2.Set.SearchSet()
    s.Add("a")
    s.Compile()
    return s


@pytest.mark.parametrize(
    ("pattern", "text", "pos", "span"),
    [
        ("b+", b"abbbc", 0, (1, 4)),
        ("b+", b"abbbc", 2, (2, 4)),  # from the start position, not anchored to it
        ("(x)?b", b"ab", 0, (1, 2)),
        ("z", b"ab", 0, None),
    ],
)
def test_a_raw_match_is_the_span_the_wrapper_finds(
    pattern: str, text: bytes, pos: int, span: tuple[int, int] | None
) -> None:
    compiled = re2.compile(pattern)
    spans = re2raw.raw_match(compiled)(re2raw.UNANCHORED, text, pos, len(text))
    wrapped = compiled.search(text, pos)
    assert (None if spans[0] == re2raw.NULL_SPAN else tuple(spans[0])) == span
    assert (wrapped.span() if wrapped else None) == span
    if pattern == "(x)?b":
        assert spans[1] == re2raw.NULL_SPAN  # a group that took no part


def test_a_set_match_lists_the_matching_rules() -> None:
    s = re2.Set.SearchSet()
    for rule in ("^a", "b$", "c"):
        s.Add(rule)
    s.Compile()
    assert sorted(re2raw.set_match(s)(b"ab")) == [0, 1]
    assert re2raw.set_match(s)(b"zzz") == []


def test_no_other_module_reaches_below_the_wrapper() -> None:
    found = []
    for path in APP.rglob("*.py"):
        if path.name == "re2raw.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in re2raw.RELIED_ON:
                found.append(f"{path.relative_to(APP)}:{node.lineno} .{node.attr}")
    assert found == []
