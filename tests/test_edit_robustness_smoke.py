"""A CI-sized run of benchmarks/edit_robustness.py, ours alone (no Node): slipped edits made
from real standard-library files, sent to the console script over stdio. An edit placed
wrong, an ambiguous one applied, or the share applied correctly falling under the goal of
issue 35 fails CI here."""

from __future__ import annotations

import asyncio
import sysconfig
from collections import Counter
from pathlib import Path

from benchmarks import _edits
from benchmarks._edits import AMBIGUOUS, generate
from benchmarks.edit_robustness import GOAL_CORRECT, run

PER_CLASS = 6


def test_slipped_edits_land_where_meant_or_not_at_all(tmp_path: Path) -> None:
    files = _edits.sources("stdlib", Path(sysconfig.get_paths()["stdlib"]))
    edits = generate(files[:: max(1, len(files) // 120)], PER_CLASS, seed=5)
    tally = asyncio.run(run(edits, tmp_path, ("ours",)))["ours"]
    for slip, counts in tally.items():
        assert counts["wrong"] == 0 and counts["other"] == 0, (slip, counts)
        if slip in AMBIGUOUS:
            assert counts["refused"] == PER_CLASS, (slip, counts)
    unambiguous = sum((c for s, c in tally.items() if s not in AMBIGUOUS), Counter())
    assert unambiguous["correct"] >= GOAL_CORRECT * unambiguous.total(), unambiguous
