"""The output bound: sizes measured exactly, pages cut item by item, limits clamped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from app.fs.text.paging import (
    RESERVE,
    clamp_limit,
    cut_to,
    dumps,
    escaped_len,
    fit_page,
    fitting,
    flat_len,
    json_len,
    page_note,
)


class Item(BaseModel):
    path: str
    line: int
    size: int | None
    ok: bool


class Page(BaseModel):
    items: list[Item]
    returned: int
    has_more: bool
    note: str | None


@settings(max_examples=300)
@given(st.text(), st.integers(-(10**12), 10**12), st.none() | st.integers(0, 10**9),
       st.booleans())
def test_flat_len_is_exactly_the_compact_json_length(path: str, line: int, size: int | None,
                                                     ok: bool) -> None:
    item = Item(path=path, line=line, size=size, ok=ok)
    compact = json.dumps(item.model_dump(), ensure_ascii=False, separators=(",", ":"))
    assert flat_len(item) == len(compact) == flat_len(item.model_dump())


@given(st.text())
def test_escaped_len_counts_json_escapes(text: str) -> None:
    assert escaped_len(text) == len(dumps(text)) - 2


@given(st.text(max_size=80), st.integers(0, 200) | st.integers(0, 4))
def test_cut_to_keeps_the_longest_prefix_that_fits(text: str, limit: int) -> None:
    longest = max(k for k in range(len(text) + 1) if escaped_len(text[:k]) <= limit)
    assert cut_to(text, limit) == text[:longest]


@given(st.lists(st.integers(0, 30), max_size=30), st.integers(-1, 400) | st.integers(0, 8))
def test_fitting_counts_the_first_items_that_fit_with_their_commas(
    sizes: list[int], room: int
) -> None:
    fits = [k for k in range(len(sizes) + 1) if sum(sizes[:k]) + k <= room]
    assert fitting(sizes, room, lambda size: size) == max(fits, default=0)


@settings(max_examples=200)
@given(st.lists(st.text(max_size=40), max_size=60), st.integers(60, 3000))
def test_fit_page_fills_up_to_the_cap_and_never_over(paths: list[str], cap: int) -> None:
    items = [Item(path=p, line=i, size=None, ok=True) for i, p in enumerate(paths)]

    def make(n: int) -> Page:
        return Page(items=items[:n], returned=n, has_more=n < len(items),
                    note="cut" if n < len(items) else None)

    page, n = fit_page(make, items, cap)
    assert page.returned == n and page.items == items[:n]
    size = len(dumps(page.model_dump()))
    assert size <= cap or len(dumps(make(0).model_dump())) > cap
    # Independent of the cut's arithmetic: every page of up to k items that fits with the
    # reserve to spare (a byte of slack for the count's digits) must have been taken.
    fitting = [k for k in range(len(items) + 1)
               if len(dumps(make(k).model_dump())) + RESERVE + 1 <= cap]
    assert n >= max(fitting, default=0)
    if n < len(items):
        # one more item would not have fitted with the reserve kept for the fields
        assert size + flat_len(items[n]) + 2 > cap - RESERVE


def test_a_page_that_fits_is_returned_whole_and_a_long_one_is_cut_not_emptied() -> None:
    items = [Item(path=f"file{i}.txt", line=i, size=i, ok=True) for i in range(50)]

    def make(n: int) -> Page:
        return Page(items=items[:n], returned=n, has_more=n < len(items), note=None)

    page, n = fit_page(make, items, 100_000)
    assert n == 50 and page.items == items
    one = len(dumps(items[0].model_dump()))
    page, n = fit_page(make, items, 10 * one + RESERVE + 100)
    assert 5 <= n < 50 and page.items == items[:n]


def test_limits_are_clamped_to_max_search_results() -> None:
    assert clamp_limit(100_000, 200) == 200
    assert clamp_limit(50, 200) == 50
    assert clamp_limit(0, 200) == 1


@pytest.mark.parametrize(
    ("text", "limit", "cut"),
    [
        ('"' * 100, 50, '"' * 25),  # every character doubles when escaped
        ("\x01" * 40, 60, "\x01" * 10),  # \u0001: six characters each
        ("ab" + '"' * 30, 20, "ab" + '"' * 9),
        ("plain", 0, ""),
        ("plain", 3, "pla"),
        ("a", 1, "a"),  # the smallest room that holds a character
        ("ab", 1, "a"),
        ("a\n", 2, "a"),  # one over: the step back is one character, not two
        ("ab\n", 3, "ab"),
    ],
)
def test_cut_to_on_heavily_escaped_text(text: str, limit: int, cut: str) -> None:
    assert cut_to(text, limit) == cut


@pytest.mark.parametrize(
    ("text", "length"),
    [("plain", 5), ('a"b', 4), ('"', 2), ("a\\b", 4), ("tab\there", 9), ("é", 1), ("", 0)],
)
def test_escaped_len_of_quotes_and_backslashes(text: str, length: int) -> None:
    assert escaped_len(text) == length == len(dumps(text)) - 2


def test_lengths_of_models_and_items_that_are_not_flat() -> None:
    page = Page(items=[Item(path='a"b', line=1, size=None, ok=True)], returned=1,
                has_more=False, note="é")
    assert json_len(page) == len(dumps(page.model_dump(mode="json")))
    odd = {"ratio": 1.5, "tags": ["x", "y"], "name": "n"}
    assert flat_len(odd) == len(dumps(odd))


def test_the_page_note_says_where_to_continue() -> None:
    note = page_note(returned=10, offset=20, cut_by_output=True, cap=8000)
    assert note is not None and "max_output_chars = 8000" in note
    assert note.endswith("continue with offset=30") and "10 items returned" in note
    assert page_note(returned=10, offset=20, cut_by_output=False, cap=8000) is None
