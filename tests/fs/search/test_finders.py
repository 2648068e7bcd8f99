"""The finders: where a needle is next, as `bytes.find` says, whichever finder a needle gets.

`FirstOf` and `Caseless` are tested at length against windows and positions in
`test_prefilter.py`; here, what `finder` hands out and how a needle is anchored.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.fs.search.finders import RANK, FirstOf, finder


@pytest.mark.parametrize(("needle", "kind"), [(b"a", None), (b"\n", None), (b"ab", FirstOf),
                                              (b"a\nb", FirstOf)])
def test_a_needle_of_one_byte_gets_memchr_and_a_longer_one_the_scan(needle: bytes,
                                                                   kind: type | None) -> None:
    find = finder(needle)
    assert (type(find) is kind) if kind is not None else not isinstance(find, FirstOf)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200).map(lambda b: bytes(b"ab\nz"[x % 4] for x in b)),
       needle=st.sampled_from([b"a", b"z", b"ab", b"ba", b"b\na", b"zz", b"aab"]),
       positions=st.lists(st.integers(0, 220), max_size=5))
def test_every_finder_answers_as_bytes_find(data: bytes, needle: bytes,
                                            positions: list[int]) -> None:
    find = finder(needle)
    assert find(data) == data.find(needle)
    for pos in positions:
        assert find(data, pos) == data.find(needle, pos)


@pytest.mark.parametrize(("needle", "anchor"), [
    (b"the", b"h"), (b"zebra", b"z"), (b"e.x", b"x"), (b"\x00ab", b"\x00"),
    (b"caf\xc3\xa9", b"\xc3"),  # a byte not listed (non-ASCII) is taken as the rarest
])
def test_a_single_needle_is_anchored_on_its_rarest_byte(needle: bytes, anchor: bytes) -> None:
    first = FirstOf([needle])
    assert first.anchored and first.rare == anchor


def test_the_byte_ranking_puts_frequent_bytes_first() -> None:
    assert RANK[ord(" ")] > RANK[ord("e")] > RANK[ord("z")] > RANK.get(0xC3, 0)
    assert not FirstOf([b"ab", b"cd"]).anchored  # several needles: the scan alone
