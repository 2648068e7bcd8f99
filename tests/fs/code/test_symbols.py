"""Symbols per language, on fixtures written in the shapes real code has: decorators and
attributes, nested and generic types, overloads, doc comments, a class inside a function.
Each symbol's dotted name, kind and lines are checked (`tests/fs/code/fixtures`), parsed as
the tool parses (in the worker, `app.fs.code.parse`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.fs.code import languages, parse, symbols
from app.fs.code.outline import flatten

FIXTURES = Path(__file__).parent / "fixtures"
Row = tuple[str, str, int, int]

EXPECTED: dict[str, list[Row]] = {
    "Sample.cs": [
        ('Demo.App', 'namespace', 3, 24), ('Demo.App.Service', 'class', 5, 17),
        ('Demo.App.Service.Count', 'property', 9, 9), ('Demo.App.Service.Get', 'method', 11, 12),
        ('Demo.App.Service.Service', 'method', 14, 14),
        ('Demo.App.Service.Nested', 'class', 16, 16), ('Demo.App.IThing', 'interface', 19, 19),
        ('Demo.App.IThing.Do', 'method', 19, 19), ('Demo.App.Point', 'record', 21, 21),
        ('Demo.App.Level', 'enum', 23, 23),
    ],
    "Sample.java": [
        ('Sample', 'class', 3, 25), ('Sample.Sample', 'method', 10, 12),
        ('Sample.get', 'method', 14, 18), ('Sample.Builder', 'class', 20, 22),
        ('Sample.Builder.with', 'method', 21, 21), ('Sample.Mode', 'enum', 24, 24),
        ('Sample.Mode.flip', 'method', 24, 24), ('Named', 'interface', 27, 29),
        ('Named.name', 'method', 28, 28), ('Pair', 'record', 31, 31),
    ],
    "sample.c": [
        ('node', 'struct', 3, 7), ('point_t', 'struct', 9, 11), ('color', 'enum', 13, 13),
        ('add', 'function', 15, 15), ('make', 'function', 17, 22), ('feature', 'function', 25, 25),
    ],
    "sample.cpp": [
        ('geo', 'namespace', 3, 20), ('geo.Shape', 'class', 5, 13),
        ('geo.Shape.Shape', 'method', 9, 9), ('geo.Shape.~Shape', 'method', 10, 10),
        ('geo.Shape.area', 'method', 11, 11), ('geo.Shape.Part', 'struct', 12, 12),
        ('geo.Shape<T>::area', 'function', 15, 18), ('main', 'function', 22, 24),
    ],
    "sample.go": [
        ('Shape', 'interface', 3, 6), ('Box', 'struct', 8, 11), ('Box.Len', 'method', 13, 16),
        ('New', 'function', 18, 20), ('A', 'constant', 23, 23), ('B', 'constant', 24, 24),
    ],
    "sample.js": [
        ('add', 'function', 1, 4), ('Counter', 'class', 6, 12), ('Counter.create', 'method', 8, 8),
        ('Counter.increment', 'method', 9, 11), ('main', 'function', 14, 16),
        ('main.inner', 'function', 15, 15), ('LIMIT', 'constant', 18, 18),
        ('arrow', 'function', 19, 19),
    ],
    "sample.md": [
        ('Title', 'heading', 1, 19), ('Title.Install', 'heading', 5, 12),
        ('Title.Install.From source', 'heading', 9, 12), ('Title.Use', 'heading', 13, 14),
        ('Title.Setext', 'heading', 15, 19), ('Appendix', 'heading', 20, 20),
    ],
    "sample.php": [
        ('App\\Models', 'namespace', 3, 3), ('User', 'class', 5, 18),
        ('User.__construct', 'method', 11, 11), ('User.name', 'method', 13, 17),
        ('HasName', 'interface', 20, 23), ('HasName.name', 'method', 22, 22),
        ('Greets', 'trait', 25, 28), ('Greets.greet', 'method', 27, 27),
        ('helper', 'function', 30, 33),
    ],
    "sample.py": [
        ('Point', 'class', 11, 28), ('Point.scale', 'method', 19, 20),
        ('Point.scale', 'method', 21, 22), ('Point.scale', 'method', 23, 24),
        ('Point.Inner', 'class', 26, 28), ('Point.Inner.deep', 'method', 27, 28),
        ('fetch', 'function', 31, 32), ('factory', 'function', 35, 39),
        ('factory.Local', 'class', 36, 38), ('factory.Local.method', 'method', 37, 38),
    ],
    "sample.rb": [
        ('Shop', 'module', 1, 15), ('Shop.Order', 'class', 4, 14),
        ('Shop.Order.initialize', 'method', 7, 9), ('Shop.Order.build', 'method', 11, 13),
        ('helper', 'function', 17, 19),
    ],
    "sample.rs": [
        ('Point', 'struct', 3, 7), ('Point<T>', 'impl', 9, 14), ('Point<T>.new', 'method', 10, 13),
        ('fmt::Display for Point<T>', 'impl', 16, 20),
        ('fmt::Display for Point<T>.fmt', 'method', 17, 19), ('Shape', 'trait', 22, 24),
        ('Shape.area', 'method', 23, 23), ('Kind', 'enum', 26, 26), ('inner', 'module', 28, 30),
        ('inner.helper', 'function', 29, 29), ('MAX', 'constant', 32, 32),
        ('tested', 'function', 34, 35),
    ],
    "sample.sh": [
        ('greet', 'function', 2, 5), ('cleanup', 'function', 7, 9),
    ],
    "sample.tsx": [
        ('Button', 'function', 3, 6), ('Panel', 'function', 8, 10),
    ],
    "sample.ts": [
        ('Box', 'class', 3, 18), ('Box.constructor', 'method', 8, 10),
        ('Box.get', 'method', 12, 13), ('Box.get', 'method', 14, 14),
        ('Box.get', 'method', 15, 17), ('Shape', 'interface', 20, 22),
        ('Shape.area', 'method', 21, 21), ('Pair', 'type', 24, 24), ('Color', 'enum', 26, 26),
        ('handler', 'function', 28, 28), ('Geometry', 'module', 30, 32),
        ('Geometry.dist', 'function', 31, 31), ('pick', 'function', 34, 34),
        ('pick', 'function', 35, 35), ('pick', 'function', 36, 36),
    ],
}


def rows(name: str, depth: int = 3) -> list[Row]:
    got = parse.parse(languages.language_of(name) or "", (FIXTURES / name).read_bytes(), depth)
    assert got.stopped is None and not got.errors, got
    return [(f.qualified, f.kind, f.start_line, f.end_line) for f in flatten(got.symbols)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_symbol_of_a_fixture_has_its_kind_and_lines(name: str) -> None:
    assert rows(name) == EXPECTED[name]


def test_every_language_the_contract_names_has_a_fixture() -> None:
    assert {languages.language_of(n) for n in EXPECTED} == set(languages.GRAMMARS)


def parsed(language: str, source: str, depth: int = 2) -> list[dict]:
    got = parse.parse(language, source.encode(), depth)
    assert got.stopped is None
    return got.symbols


@pytest.mark.parametrize(("language", "source", "signature"), [
    ("python", "@d\nclass P(Base[T]):\n    pass\n", "class P(Base[T]):"),
    ("rust", "#[derive(Debug)]\npub struct P<T> { x: T }\n", "pub struct P<T> { x: T }"),
    ("go", "// Doc.\nfunc (b *Box[T]) Len() int { return 0 }\n",
     "func (b *Box[T]) Len() int { return 0 }"),
    ("python", "def f(" + "a, " * 100 + "):\n    pass\n", "def f(" + "a, " * 37 + "a,…"),
])
def test_the_signature_is_the_line_that_names_the_symbol_cut(
    language: str, source: str, signature: str
) -> None:
    assert parsed(language, source)[0]["signature"] == signature


@pytest.mark.parametrize(("source", "start", "end"), [
    ("x = 1\n\n# about f\n# more\ndef f():\n    pass\n", 3, 6),  # comments right above
    ("x = 1\n# about x, not f\n\ndef f():\n    pass\n", 4, 5),  # a blank line between
    ("x = 1  # of x\ndef f():\n    pass\n", 2, 3),  # a comment ending the line before
    ("def f():\n    if x:\n        pass\n        # trailing\n\n# next\n", 1, 3),
    ("#!/usr/bin/env python\ndef f():\n    pass\n", 2, 3),  # a shebang is not a doc
])
def test_a_range_takes_the_comments_right_above_and_no_trailing_ones(
    source: str, start: int, end: int
) -> None:
    f = parsed("python", source)[0]
    assert (f["start_line"], f["end_line"]) == (start, end)


def test_depth_one_gives_top_level_symbols_without_children() -> None:
    syms = parsed("python", "class A:\n    def m(self):\n        pass\n", depth=1)
    assert [s["name"] for s in syms] == ["A"] and "children" not in syms[0]


def test_markdown_headings_nest_by_level_to_depth() -> None:
    md = "# A\n## B\n### C\n## D\n# E\n"
    syms = parsed("markdown", md, depth=2)
    assert [(s["name"], s["start_line"], s["end_line"]) for s in syms] == [("A", 1, 4),
                                                                          ("E", 5, 5)]
    assert [c["name"] for c in syms[0]["children"]] == ["B", "D"]
    assert "children" not in syms[0]["children"][0]  # C is below depth 2


def test_a_file_with_syntax_errors_still_outlines_what_parses() -> None:
    got = parse.parse("python", b"def ok():\n    pass\n\ndef broken(:\n", 2)
    assert got.errors and got.symbols[0]["name"] == "ok"


@pytest.mark.parametrize(("line", "shown"), [
    ("def f():", "def f():"),
    ("x" * symbols.MAX_SIGNATURE, "x" * symbols.MAX_SIGNATURE),
    ("x" * (symbols.MAX_SIGNATURE + 1), "x" * (symbols.MAX_SIGNATURE - 1) + "…"),
])
def test_a_signature_longer_than_its_cap_is_cut_with_a_mark(line: str, shown: str) -> None:
    assert symbols.cut(line) == shown
