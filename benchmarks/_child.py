"""What the worst-case benchmarks share: one case in a fresh child process, its cost measured.

A script builds the child's code as `MEASURE + its own code`; its code ends with
`measure(run, show)`, which resets the child's peak resident size (Linux
`/proc/self/clear_refs`), runs `run()` once, and prints one JSON line: CPU seconds, wall
seconds, peak resident size (`VmHWM`) minus the resident size before, and `show(value)`.
`figures` reads that line back; `print_medians` prints the table every script prints.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable

Figures = dict[str, float | str]

MEASURE = '''
import json as _json
import time as _time


def _status(key):
    with open("/proc/self/status") as f:
        for row in f:
            if row.startswith(key + ":"):
                return int(row.split()[1])  # kB


def measure(run, show=repr):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status("VmRSS")
    c0, w0 = _time.process_time(), _time.perf_counter()
    value = run()
    cpu, wall = _time.process_time() - c0, _time.perf_counter() - w0
    grown = (_status("VmHWM") - before) / 1024
    print(_json.dumps({"cpu_s": cpu, "wall_s": wall, "rss_growth_mib": grown,
                       "value": show(value)}))
'''


def run_child(code: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`MEASURE + code` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", MEASURE + code], capture_output=True, text=True,
        timeout=timeout, check=False,
    )


def figures(name: str, out: subprocess.CompletedProcess[str]) -> Figures:
    """The child's JSON line, or its error."""
    if out.returncode != 0:
        raise RuntimeError(f"case {name} failed:\n{out.stderr[-2000:]}")
    got: Figures = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def print_medians(names: Iterable[str], run_case: Callable[[str], Figures], runs: int,
                  bound: str, last: str = "value") -> None:
    """One line per case: the medians of `runs` children, and the last child's value."""
    print(f"{'case':32} {'CPU s':>8} {'wall s':>8} {'RSS growth MiB':>15}  {last}")
    for name in names:
        got = [run_case(name) for _ in range(runs)]
        cpu = statistics.median(float(r["cpu_s"]) for r in got)
        wall = statistics.median(float(r["wall_s"]) for r in got)
        rss = statistics.median(float(r["rss_growth_mib"]) for r in got)
        print(f"{name:32} {cpu:8.3f} {wall:8.3f} {rss:15.1f}  {got[-1]['value']}", flush=True)
    print(f"(median of {runs} child processes per case; bound: {bound})")
