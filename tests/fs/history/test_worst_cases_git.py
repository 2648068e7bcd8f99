"""Every hostile repository shape stays within seconds and tens of MiB, and is answered.

Each case of `benchmarks/worst_cases_git.py` (a loose object and a pack entry whose
headers say 10 bytes over 512 MiB of stream, a delta chain through a 256 MiB
middle, chains of 1.6 GB of work and 20,000 links, deltas that are their own
base, 40 MiB messages, a tree of 300,000 entries and one 20,000 levels deep,
missing, corrupt, unsorted and crafted objects, a tree whose names never end)
runs once in a fresh child process that reports its CPU time, its peak
resident growth and the answer. The bounds are generous (a shared machine):
the bugs these catch cost up to 1 GB and ran for ever. An answer is a result
or an error in the server's words; never an internal error, and a client
following the cursor gets to the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from benchmarks.worst_cases_git import CASES, build, run_case

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="peak RSS reset is Linux-only"
)

CPU_BOUND_S = 10.0
RSS_BOUND_MIB = 96.0


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    path = tmp_path_factory.mktemp("worst-git")
    probes = build(path, {shape for shape, _ in CASES.values()})
    yield os.path.realpath(path), probes


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_repository_stays_within_seconds_and_tens_of_mib(
    case: str, folder: tuple[str, dict]
) -> None:
    got = run_case(case, *folder)
    assert not str(got["value"]).startswith("internal error"), got
    assert "gave up" not in str(got["value"]), got  # a follower that never ends
    assert float(got["cpu_s"]) < CPU_BOUND_S, got
    assert float(got["rss_growth_mib"]) < RSS_BOUND_MIB, got
