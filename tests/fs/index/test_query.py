"""`app.fs.index.fulltext.query`: a `search` query parsed once, for the scan and the index alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.index.fulltext import query, tokens

APP = Path(__file__).resolve().parents[3] / "app"


@pytest.mark.parametrize(
    ("text", "scan_words", "phrase", "terms", "literal_only"),
    [
        ("Invoice total", ("invoice", "total"), "invoice total", ("invoice", "total"), False),
        ("  a   b  ", ("a", "b"), "a b", ("a", "b"), False),  # only one-letter words: kept
        ("a total", ("total",), "a total", ("a", "total"), False),  # one-letter dropped
        ("parseHTTPResponse", ("parsehttpresponse",), "parsehttpresponse",
         ("parsehttpresponse", "parse", "http", "response"), False),
        ("foo.bar", ("foo.bar",), "foo.bar", ("foo", "bar"), False),
        ("-> ::", ("->", "::"), "-> ::", (), True),  # punctuation: the scan only
        # No case change in `Straße`: one word (docs/tools.md)
        ("Straße STRASSE", ("strasse",), "strasse strasse", ("straße", "strasse"), False),
    ],
)
def test_one_parse_gives_what_each_way_looks_for(
    text: str, scan_words: tuple[str, ...], phrase: str, terms: tuple[str, ...],
    literal_only: bool,
) -> None:
    q = query.parse(text)
    assert (q.scan_words, q.phrase, q.terms, q.literal_only) == (
        scan_words, phrase, terms, literal_only)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "query is empty"),
        ("   \t\n", "query is empty"),
        (" ".join(f"w{i}" for i in range(33)), "33 distinct words; at most 32"),
    ],
)
def test_a_query_with_nothing_or_too_much_is_refused(text: str, error: str) -> None:
    with pytest.raises(BadArgument, match=error):
        query.parse(text)


def test_repeated_words_count_once() -> None:
    text = " ".join(["same"] * 100)
    assert query.parse(text).scan_words == ("same",)


@given(st.text(max_size=200))
def test_the_parts_agree_with_the_tokenizer(text: str) -> None:
    try:
        q = query.parse(text)
    except BadArgument:
        return
    assert list(q.terms) == tokens.query_terms(text)
    assert list(q.stems) == tokens.stems(tokens.query_words(text))
    assert set(q.words) <= set(q.terms)


def test_only_the_query_module_tokenizes_a_query() -> None:
    """One tokenizer for `search`: no other module calls the query functions of `tokens`."""
    callers = []
    for path in APP.rglob("*.py"):
        if path.name in ("query.py", "tokens.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "tokens"
                and node.attr in ("query_words", "query_terms", "stems")
            ):
                callers.append(f"{path.relative_to(APP)}:{node.lineno}")
    assert callers == []
