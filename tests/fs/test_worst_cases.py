"""Every worst input found for a matcher, reader or differ stays within seconds and tens of MiB.

Each case of `benchmarks/worst_cases.py` (glob patterns that make a
backtracking regex exponential, 8 MiB files of empty lines, CR-only, CRLF,
one huge line, UTF-16 empty lines, a search whose every line matches, a search
under 8 MiB of hostile ignore files, edits of repetitive files) runs in a fresh
child process that reports its CPU time and its peak resident growth. The
bounds are generous (a shared CI machine): the bugs these catch cost 1.3 GB and
tens of seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from benchmarks.worst_cases import CASES, build, run_case

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="peak RSS reset is Linux-only"
)

CPU_BOUND_S = 5.0
RSS_BOUND_MIB = 96.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("worst")
    build(path)
    yield os.path.realpath(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_worst_case_stays_within_seconds_and_tens_of_mib(case: str, folder: str) -> None:
    got = run_case(case, folder)
    assert float(got["cpu_s"]) < CPU_BOUND_S, got
    assert float(got["rss_growth_mib"]) < RSS_BOUND_MIB, got
