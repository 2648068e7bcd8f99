"""What does placing an edit cost, level by level, and the closest block when none matches?

    .venv/bin/python benchmarks/edit_match.py [--runs N]

On a 1 MiB text of Python-like lines (`app/fs/change/match.py`'s worst shape is repetition:
the text repeats a few hundred distinct lines), times in process:

- find:        `str.find` of old_text: what an exact-only matcher pays (the baseline);
- exact:       `Matcher.place` of a unique block found exactly;
- indentation: the same block dedented by 4 columns (found at the indentation level, after
               the line-ending and trailing-space levels found nothing);
- line numbers: the block copied with read prefixes (the last level);
- missed:      a 2,000-line old_text no level finds, and its closest block: every level
               keys the file, then one pass for the closest block.

Interleaved round by round; prints the median (of `--runs` rounds, at least 5) per case,
its ratio to `find`, and the matcher's work counter (lines keyed and compared), which must
stay within a small multiple of the file's line count whatever the case.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `app` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.errors import BadArgument
from app.fs.change.closest import closest
from app.fs.change.match import Matcher

TEXT_BYTES = 1 << 20
MISSED_LINES = 2000


def corpus() -> tuple[str, int]:
    """~1 MiB of indented lines drawn from 300 distinct ones, and the line a unique block
    (inserted in the middle) starts at."""
    body = [f"    value_{i % 300} = compute({i % 300}, key='k{i % 7}')" for i in range(40_000)]
    lines, size = [], 0
    for line in body:
        if size >= TEXT_BYTES:
            break
        lines.append(line)
        size += len(line) + 1
    at = len(lines) // 2
    lines[at:at] = ["    def unique_block(self):", "        return 'one of a kind'"]
    return "\n".join(lines) + "\n", at


def cases(text: str, at: int) -> dict[str, Callable[[], int]]:
    block = "    def unique_block(self):\n        return 'one of a kind'"
    dedented = "def unique_block(self):\n    return 'one of a kind'"
    numbered = "\n".join(f"{at + 1 + k} {line}" for k, line in enumerate(block.split("\n")))
    missed = "\n".join(f"    missing_{i} = nowhere({i})" for i in range(MISSED_LINES))

    def place(old: str) -> Callable[[], int]:
        def run() -> int:
            matcher = Matcher(text, "f.py")
            try:
                matcher.place(old, "x")
            except BadArgument:
                closest(matcher, old)
            return matcher.work

        return run

    return {
        "find": lambda: text.find(block) * 0,
        "exact": place(block),
        "indentation": place(dedented),
        "line numbers": place(numbered),
        "missed": place(missed),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    text, at = corpus()
    lines = text.count("\n")
    todo = cases(text, at)
    times: dict[str, list[float]] = {name: [] for name in todo}
    work: dict[str, int] = {}
    for _ in range(max(5, args.runs)):
        for name, run in todo.items():
            t0 = time.perf_counter()
            work[name] = run()
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["find"])
    print(f"text: {len(text)} characters, {lines} lines; median of {max(5, args.runs)} rounds")
    print(f"{'case':<14}{'median ms':>12}{'x find':>10}{'work':>10}{'work/lines':>12}")
    for name, got in times.items():
        med = statistics.median(got)
        print(f"{name:<14}{med * 1000:>12.2f}{med / base:>10.1f}{work[name]:>10}"
              f"{work[name] / lines:>12.2f}")


if __name__ == "__main__":
    main()
