"""The worst files found for the full-text index behind `search`: CPU time and memory per case.

    .venv/bin/python benchmarks/worst_cases_index.py [--runs N] [--case NAME ...] [--trigram]

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
files, deep paths, and the mix of three such files that once reached 312 MB; random
CJK text and random code points of every plane (and, when named, four files of each
random alphabet).

`--trigram`: the trigram index's build (`search_index`) instead, on 1 and 4 files of
random CJK text, random bytes without a NUL and random code points, each case in a child
as above (twice the CPU limit): the build's peak resident growth and the resident size
once it is over, against the size before, bound 256 MiB of growth;
`tests/fs/index/test_trigram_bounds.py` runs each case once and asserts it.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
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


def random_bytes(path: Path, size: int = SIZE, seed: int = 2) -> None:
    """Bytes 0x01-0xff at random (no NUL: not taken for binary), decoded as text."""
    rnd = random.Random(seed)
    with open(path, "wb") as f:
        f.write(b"needle ")
        f.write(rnd.randbytes(size - 7).replace(b"\0", b"\1"))


def _random_text(path: Path, seed: int, code: Callable[[int], int], size: int) -> None:
    """`needle `, then characters `code(n)` of random 24-bit `n`, UTF-8, cut to `size` bytes
    on a character boundary."""
    raw = random.Random(seed).randbytes(size)  # at least one byte a character
    chars = [chr(code(int.from_bytes(raw[i:i + 3], "little"))) for i in range(0, size, 3)]
    data = ("needle " + "".join(chars)).encode()[:size]
    path.write_bytes(data.decode("utf-8", "ignore").encode())


def random_cjk(path: Path, seed: int = 3, size: int = SIZE) -> None:
    """Random CJK ideographs (U+4E00-U+9FFF, 3 bytes each): almost every trigram distinct."""
    _random_text(path, seed, lambda n: 0x4E00 + n % 0x5200, size)


def random_unicode(path: Path, seed: int = 4, size: int = SIZE) -> None:
    """Random code points of every plane (no NUL, no surrogate), 1 to 4 bytes each."""
    def code(n: int) -> int:
        c = 1 + n % 0x10FFFF
        return c + 0x800 if 0xD800 <= c <= 0xDFFF else c
    _random_text(path, seed, code, size)


def four_of_each(folder: Path) -> None:
    """Four files of each random alphabet (random bytes, CJK, code points): 12 x 8 MiB."""
    for i in range(4):
        random_bytes(folder / f"noise{i}.txt", seed=20 + i)
        random_cjk(folder / f"cjk{i}.txt", seed=30 + i)
        random_unicode(folder / f"unicode{i}.txt", seed=40 + i)


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
    "random_cjk": (lambda d: random_cjk(d / "cjk.txt"), "needle"),
    "random_unicode": (lambda d: random_unicode(d / "unicode.txt"), "needle"),
    "many_tiny_files": (tiny_files, "needle"),
    "deep_paths": (deep_paths, "needle"),
    "module_of_blank_lines": (blank_lines_module, "needle"),
    "issue_mix": (mix, "needle"),
}
# Run when named (`--case`), not by default nor by the tests: 96 MiB to index.
LARGE_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "four_files_of_each_random_alphabet": (four_of_each, "needle"),
}
ALL_CASES = {**CASES, **LARGE_CASES}


def build(folder: Path, names: list[str] | None = None) -> None:
    """One folder per case (a root of its own)."""
    for name in names or list(CASES):
        d = folder / name
        d.mkdir()
        ALL_CASES[name][0](d)
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
    from app.fs.index.fulltext import fts
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
            repo=REPO, folder=folder, state=state, name=name, query=ALL_CASES[name][1],
            budget=BUDGET, cpu=CPU_LIMIT_S, memory=MEMORY_LIMIT, scan=scan,
        )
        out = run_child(code, timeout=600)
    if out.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"cpu_s": float(CPU_LIMIT_S), "wall_s": 0.0, "rss_growth_mib": 0.0,
                "value": f"killed at the CPU limit ({CPU_LIMIT_S} s)"}
    return figures(name, out)


# The trigram index's build (`search_index`): 1 or 4 files just under 8 MiB of random text
# in an alphabet that makes nearly every trigram of a file distinct (what SQLite holds in
# memory for a row until it is written), each in a root of its own.
ALPHABETS: dict[str, Callable[[Path, int], None]] = {
    "random_cjk": lambda p, seed: random_cjk(p, seed),
    "random_bytes_no_nul": lambda p, seed: random_bytes(p, seed=seed),
    "random_unicode": lambda p, seed: random_unicode(p, seed),
}
TRIGRAM_CASES: dict[str, tuple[str, int]] = {
    f"trigram_{alphabet}_x{n}": (alphabet, n) for alphabet in ALPHABETS for n in (1, 4)
}
TRIGRAM_BOUND_MIB = 256  # peak growth of any build; what returns after it is printed too


def build_trigram(folder: Path, names: list[str] | None = None) -> None:
    """One root per trigram case (those not made yet); each file made once per alphabet
    (outside the roots) and copied in."""
    for name in names or list(TRIGRAM_CASES):
        alphabet, n = TRIGRAM_CASES[name]
        d = folder / name
        if d.exists():
            continue
        d.mkdir()
        for i in range(n):
            src = folder / f"_{alphabet}_{i}.src"
            if not src.exists():
                ALPHABETS[alphabet](src, 10 + i)
            (d / f"f{i}.txt").write_bytes(src.read_bytes())
    warm = folder / "_warm"
    warm.mkdir(exist_ok=True)
    (warm / "small.txt").write_text("needle one two\n")


TRIGRAM_CHILD = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu} + 5))
resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
sys.path.insert(0, {repo!r})
from app.fs.index.trigrams.grams import plan
from app.fs.index.trigrams.narrow import Keeper
from app.fs.index.trigrams.trigram import TrigramIndex
from app.registry import Registry


def root(path, state):
    cfg = state + ".toml"
    with open(cfg, "w") as f:
        f.write(f'audit_log = "{{state}}/audit.log"\\n'
                f'[[roots]]\\nname = "bench"\\npath = "{{path}}"\\nrole = "workspace"\\n'
                f'max_read_bytes = {budget}\\n')
    return Registry(cfg, audit=False).current.root("bench")


def build(path, state):
    idx = TrigramIndex(state + "/index/t.trigram.sqlite3")
    keeper = Keeper(idx, now=lambda: time.time_ns() + 10_000_000_000)  # files settled
    keeper.kick(root(path, state), "rules")
    got = keeper.wait()
    assert got.error is None and got.complete, got
    return idx, got


build({folder!r} + "/_warm", {state!r} + "/warm")
after = {{}}


def case():
    idx, got = build({folder!r} + "/" + {name!r}, {state!r} + "/case")
    after["rss"] = _status("VmRSS")
    return got.indexed, len(idx.matching(plan(["needle"], False))[0])


before = _status("VmRSS")
measure(case, show=lambda v: repr(v) + " after %.1f" % ((after["rss"] - before) / 1024))
"""


def run_trigram_case(name: str, folder: str) -> dict[str, float | str]:
    """A trigram case's figures; `after_mib`: the resident size once the build is over,
    minus the size before it."""
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-trigram-state-") as state:
        code = TRIGRAM_CHILD.format(repo=REPO, folder=folder, state=state, name=name,
                                    budget=BUDGET, cpu=CPU_LIMIT_S * 2, memory=MEMORY_LIMIT)
        out = run_child(code, timeout=600)
    if out.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"cpu_s": float(CPU_LIMIT_S * 2), "wall_s": 0.0, "rss_growth_mib": 0.0,
                "after_mib": 0.0, "value": "killed at the CPU limit"}
    if out.returncode != 0:  # past the address-space limit, as a server would swap instead
        return {"cpu_s": 0.0, "wall_s": 0.0, "rss_growth_mib": float(MEMORY_LIMIT >> 20),
                "after_mib": 0.0, "value": "failed: " + out.stderr.strip()[-200:]}
    got = figures(name, out)
    shown, _, grown = str(got["value"]).rpartition(" after ")
    got["value"], got["after_mib"] = shown, float(grown)
    return got


def print_trigram(names: list[str], folder: str, runs: int) -> None:
    """One line per trigram case: medians of CPU, peak growth and what stays after."""
    print(f"{'case':32} {'CPU s':>8} {'peak growth MiB':>16} {'after build MiB':>16}  "
          "(files indexed, files holding `needle`)")
    for name in names:
        got = [run_trigram_case(name, folder) for _ in range(runs)]
        cpu, peak, after = (statistics.median(float(r[k]) for r in got)
                            for k in ("cpu_s", "rss_growth_mib", "after_mib"))
        print(f"{name:32} {cpu:8.3f} {peak:16.1f} {after:16.1f}  {got[-1]['value']}",
              flush=True)
    print(f"(median of {runs} child processes per case; bound: peak growth under "
          f"{TRIGRAM_BOUND_MIB} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append",
                        choices=sorted(ALL_CASES) + sorted(TRIGRAM_CASES))
    parser.add_argument("--scan", action="store_true", help="the search without an index")
    parser.add_argument("--trigram", action="store_true",
                        help="the trigram index's build (search_index) on random alphabets")
    args = parser.parse_args(argv)
    cases = TRIGRAM_CASES if args.trigram else ALL_CASES
    names = [n for n in args.case or list(TRIGRAM_CASES if args.trigram else CASES)
             if n in cases]
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-index-") as tmp:
        folder = os.path.realpath(tmp)
        if args.trigram:
            build_trigram(Path(folder), names)
            print_trigram(names, folder, args.runs)
            return 0
        build(Path(folder), names)
        print_medians(names, lambda name: run_case(name, folder, args.scan), args.runs,
                      "seconds of CPU, < 64 MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
