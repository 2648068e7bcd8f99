"""Every script in benchmarks/ still starts: it imports what it measures and parses its
arguments (`--help`). The figures in docs/measured.md name these scripts; one that no
longer starts cannot be run again to check them. Their runs themselves take minutes and
stay out of the suite (tests/test_load_smoke.py and tests/fs/test_worst_cases.py run two
of them small)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("[a-z]*.py"))


def test_there_are_scripts_to_check() -> None:
    assert len(SCRIPTS) >= 20, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_starts_and_says_how_to_run_it(script: str) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout, done.stdout[:500]
