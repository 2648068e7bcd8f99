"""The class, not the instance: random hostile repositories get answers, and end.

hypothesis draws seeds for `hostile_fuzz.random_repo` (small sizes, in this
process): every history tool, asked everything a client would ask and
following every cursor, answers or refuses in the server's words, never with
an internal error, never with a host path, and every cursor ends. The same
generator at 64 times the sizes (bombs of 64 MiB behind lying headers,
deltas declaring 19 GB) runs in a child process whose CPU time and peak
resident growth are bounded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.fs.history import denied
from tests.fs.history.conftest import make_root
from tests.fs.history.hostile_fuzz import ask_everything, random_repo

REPO = str(Path(__file__).resolve().parents[3])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_any_hostile_repository_is_answered_and_every_cursor_ends(seed: int) -> None:
    with tempfile.TemporaryDirectory(prefix="loomfs-fuzz-") as tmp:
        path = Path(os.path.realpath(tmp)) / "repo"
        random_repo(seed, path)
        denied._cache.clear()
        told = ask_everything(make_root(path))  # raises on anything but the server's words
        assert not any(tmp in t for t in told), "a host path in an answer"
    denied._cache.clear()


CHILD = """
import json, os, sys, tempfile, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.fs.history.conftest import make_root
from tests.fs.history.hostile_fuzz import ask_everything, random_repo

def status(key):
    with open("/proc/self/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])

worst = {{"cpu_s": 0.0, "rss_growth_mib": 0.0}}
for seed in {seeds!r}:
    with tempfile.TemporaryDirectory(prefix="loomfs-fuzz-") as tmp:
        random_repo(seed, Path(tmp) / "repo", scale=64)
        root = make_root(Path(tmp) / "repo")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status("VmRSS")
        c0 = time.process_time()
        ask_everything(root)
        cpu = time.process_time() - c0
        grown = (status("VmHWM") - before) / 1024
        worst = {{"cpu_s": max(worst["cpu_s"], cpu),
                  "rss_growth_mib": max(worst["rss_growth_mib"], grown), "seed": seed}}
print(json.dumps(worst))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux-only")
def test_hostile_repositories_at_scale_stay_within_seconds_and_tens_of_mib() -> None:
    code = CHILD.format(repo=REPO, seeds=list(range(1000, 1012)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=900, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert worst["cpu_s"] < 20.0, worst  # every tool, every page, on one repository
    assert worst["rss_growth_mib"] < 96.0, worst
