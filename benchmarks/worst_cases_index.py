"""The worst files found for the full-text index behind `search`: CPU time and memory per case.

    .venv/bin/python benchmarks/worst_cases_index.py [--runs N] [--case NAME ...]

The same method and output as `benchmarks/worst_cases.py`: each case runs in a
fresh child process, on a root of its own (role `workspace`, `max_read_bytes`
= 8 MiB, so every file below is indexed whole) built in a temporary folder,
with a state directory of its own. The child warms up with a search of a
small root (imports, SQLite, the index code), resets its peak resident size
(Linux `/proc/self/clear_refs`), then runs the first `search` of the case's
root, which builds its index, and reports its CPU seconds and its peak
resident size (`VmHWM`) minus its resident size before: what the build cost.
Prints the median of `--runs` children per case (`--scan`: the same shapes for
the search without an index, the fallback). The bound every case must
keep: seconds of CPU, under 64 MiB; `tests/fs/index/test_bounds.py` runs each
case once and asserts it.

The shapes are what a hostile or merely odd repository holds: one 8 MiB word,
identifiers that split into millions of parts, runs of combining marks or
private-use characters (one word to SQLite, none to Python), letters whose
case folds are rare or expand, zero-width runs, random bytes without a NUL,
millions of distinct words, one word repeated millions of times, many tiny
files, deep paths, and the mix of three such files that once reached 312 MB.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._child import figures, print_medians, run_child

REPO = str(Path(__file__).resolve().parent.parent)
MIB = 1 << 20
BUDGET = 8 * MIB
SIZE = BUDGET - 16  # each big file just under the per-file budget
CPU_LIMIT_S = 60  # the child is killed past this (SIGXCPU): a case that never ends
MEMORY_LIMIT = 2 << 30  # address space: a case that balloons fails instead of swapping


def fill(path: Path, unit: str, size: int = SIZE, head: str = "needle ") -> None:
    """`head`, then `unit` repeated, UTF-8, cut to `size` bytes on a character boundary."""
    data = head.encode()
    raw = unit.encode()
    with open(path, "wb") as f:
        f.write(data)
        block = raw * max(1, MIB // len(raw))
        left = size - len(data)
        while left > 0:
            piece = block[:left]
            f.write(piece.decode("utf-8", "ignore").encode())
            left -= len(block)


def random_words(path: Path, size: int = SIZE) -> None:
    """Distinct words (base-36 counters behind a random letter): as many terms as fit."""
    rnd = random.Random(1)
    with open(path, "w") as f:
        f.write("needle ")
        n = 0
        written = 7
        while written < size:
            w = f"{rnd.choice('bcdfghjk')}{n:x} "
            f.write(w)
            written += len(w)
            n += 1


def random_bytes(path: Path, size: int = SIZE) -> None:
    """Bytes 0x01-0xff at random (no NUL: not taken for binary), decoded as text."""
    rnd = random.Random(2)
    with open(path, "wb") as f:
        f.write(b"needle ")
        f.write(rnd.randbytes(size - 7).replace(b"\0", b"\1"))


def tiny_files(folder: Path, n: int = 20_000) -> None:
    for i in range(n):
        d = folder / f"d{i // 500:03d}"
        d.mkdir(exist_ok=True)
        (d / f"t{i:05d}.txt").write_text(f"needle w{i}\n")


def deep_paths(folder: Path) -> None:
    """Thirty directories deep, each name a long compound identifier; a file at each level."""
    d = folder
    for level in range(30):
        d = d / (f"deepLevel{level}_" + "segmentName" * 8)
        d.mkdir()
        for j in range(25):
            (d / f"needleFile{j}_{'partName' * 10}.txt").write_text(f"needle {level} {j}\n")


def blank_lines_module(folder: Path) -> None:
    """A Python module that opens with 64 blank lines and no docstring: its title is looked
    for past them (a pattern that could split them 2^64 ways)."""
    (folder / "module.py").write_text("\n" * 64 + "needle = 1\n")
    (folder / "spaces.py").write_text(" \n" * 64 + "needle = 2\n")


def mix(folder: Path) -> None:
    """One 8 MiB word, 2 M combining marks, 500 k characters with rare case folds."""
    fill(folder / "token.txt", "a")
    fill(folder / "marks.txt", "\u0301", size=2 * (2 * MIB) + 8, head="a")
    fill(folder / "folds.txt", "\u0130\u00df\ufb03\u0390\u1e9e\u01c5", size=MIB + MIB // 2)


# Each case: what it writes into its root (a folder of its own), and what it searches for.
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "one_8mib_word": (lambda d: fill(d / "word.txt", "a"), "needle"),
    "one_word_of_4m_camel_parts": (lambda d: fill(d / "camel.txt", "aB"), "needle"),
    "one_word_of_4m_snake_parts": (lambda d: fill(d / "snake.txt", "a_"), "needle"),
    "one_word_of_letters_and_digits": (lambda d: fill(d / "digits.txt", "a1"), "needle"),
    "combining_marks_4m": (lambda d: fill(d / "marks.txt", "\u0301", head="needle a"), "needle"),
    "letter_and_mark_alternating": (lambda d: fill(d / "alt.txt", "a\u0301"), "needle"),
    "private_use_run": (lambda d: fill(d / "pua.txt", "\ue000"), "needle"),
    "rare_case_folds_one_word": (
        lambda d: fill(d / "folds.txt", "\u0130\u00df\ufb03\u0390\u1e9e\u01c5"), "needle"
    ),
    "rare_case_folds_words": (
        lambda d: fill(d / "foldw.txt", "\u0130\u00df \ufb03\u0390 \u1e9e\u01c5 "), "needle"
    ),
    "zero_width_runs": (lambda d: fill(d / "zw.txt", "a\u200b\u200c\u200d\ufeff"), "needle"),
    "one_letter_words": (lambda d: fill(d / "letters.txt", "a "), "needle"),
    "distinct_words": (lambda d: random_words(d / "distinct.txt"), "needle"),
    "random_bytes_no_nul": (lambda d: random_bytes(d / "noise.txt"), "needle"),
    "many_tiny_files": (tiny_files, "needle"),
    "deep_paths": (deep_paths, "needle"),
    "module_of_blank_lines": (blank_lines_module, "needle"),
    "issue_mix": (mix, "needle"),
}


def build(folder: Path, names: list[str] | None = None) -> None:
    """One folder per case (a root of its own)."""
    for name in names or list(CASES):
        d = folder / name
        d.mkdir()
        CASES[name][0](d)
    warm = folder / "_warm"
    warm.mkdir()
    (warm / "small.txt").write_text("needle one two\n")


CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu} + 5))
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
sys.path.insert(0, {repo!r})
from app.corpus import deep_research as dr
from app.fs.control import NoControl
from app.registry import Registry


def registry(root, state):
    cfg = state + ".toml"
    with open(cfg, "w") as f:
        f.write(f'audit_log = "{{state}}/audit.log"\\nsearch_fetch_tools = true\\n'
                f'[[roots]]\\nname = "bench"\\npath = "{{root}}"\\nrole = "workspace"\\n'
                f'max_read_bytes = {budget}\\n')
    return Registry(cfg, audit=False)


if {scan!r}:  # the search without an index, as when SQLite has no FTS5
    from app.fs.index import fts
    fts._fts5 = "forced by the benchmark"
dr.search(registry({folder!r} + "/_warm", {state!r} + "/warm").current, "needle", NoControl())
reg = registry({folder!r} + "/" + {name!r}, {state!r} + "/case")
measure(lambda: dr.search(reg.current, {query!r}, NoControl()),
        show=lambda data: repr((len(data["results"]), data.get("note", "")[:80])))
"""


def run_case(name: str, folder: str, scan: bool = False) -> dict[str, float | str]:
    """The case's figures (`scan`: of the search without an index); a child killed at the
    CPU limit reports it as its CPU time."""
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-index-state-") as state:
        code = CHILD.format(
            repo=REPO, folder=folder, state=state, name=name, query=CASES[name][1], budget=BUDGET,
            cpu=CPU_LIMIT_S, memory=MEMORY_LIMIT, scan=scan,
        )
        out = run_child(code, timeout=600)
    if out.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"cpu_s": float(CPU_LIMIT_S), "wall_s": 0.0, "rss_growth_mib": 0.0,
                "value": f"killed at the CPU limit ({CPU_LIMIT_S} s)"}
    return figures(name, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--scan", action="store_true", help="the search without an index")
    args = parser.parse_args(argv)
    names = args.case or list(CASES)
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-index-") as tmp:
        folder = os.path.realpath(tmp)
        build(Path(folder), names)
        print_medians(names, lambda name: run_case(name, folder, args.scan), args.runs,
                      "seconds of CPU, < 64 MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
