"""search_text of a literal on a ~50 MB tree, against ripgrep on the same tree.

    .venv/bin/python benchmarks/search_text.py [--runs N] [--files N] [--keep DIR]

Builds (deterministically, in a temporary folder) about 5,000 text files
averaging 10 KB (~50 MB) in 250 directories, plus 200 binary files
(a NUL in their first 4 KiB) and 5 files over the size limit (1 MiB). A rare
literal sits in 40 of the text files. Then, on the same warm page cache, it
times two literals: one with rare bytes, found in 40 files, and one made
of frequent bytes only, found nowhere (the worst case for a search that
anchors on the needle's rarest byte):

- ours: `app.fs.search.text.search_text` in process (a `Root` with every
  built-in deny rule, the walk, the guards, line numbers and previews);
- rg:   `rg -j1 -F --no-ignore --max-filesize 1M -n LITERAL ROOT`, i.e.
        ripgrep on one thread, with the same size limit, output to a pipe.
        The figure includes starting the rg process (~1-2 ms), which a
        long-lived server never pays; it is reported separately so the
        ratio can be read both ways.

Runs are interleaved (ours, rg, spawn, ours, ...) so that load from other
processes falls on every variant alike. Prints the median wall and CPU time
of each (at least 7 runs) and the ratios ours/rg, ours/(rg - spawn) and
their CPU ratio. Target: within 1.5x of rg -j1. Both must find the same
matching lines, or the script fails.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.control import NoControl
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security import DenyRules, Root

LITERAL = "zqxjvorpal"  # in 40 files; has rare bytes (z, q, j)
COMMON = "the answer"  # in no file; only frequent bytes: the search's worst case
FILE_LIMIT = 1 << 20
Hits = dict[str, int] | set[tuple[str, int]]  # files and their counts, or (path, line) pairs
WORDS = (  # noqa: SIM905 - a sentence reads better than a list of 55 strings
    "the of and to in is that for it as with was on be by this are from or have an they "
    "which one you were all we can her has there been if more when will would who so no "
    "def return self import class value result error path root file line data index"
).split()


def build(folder: Path, files: int) -> tuple[int, int]:
    """The tree; returns (text files, total bytes)."""
    rnd = random.Random(1234)
    lines = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 14))) + "\n"
             for _ in range(4000)]
    marked = set(rnd.sample(range(files), min(40, files)))
    total = 0
    for i in range(files):
        # ~20 files a directory, 250 directories under 25 packages.
        d = folder / f"pkg{(i // 20) % 25:02d}" / f"mod{i // 20:03d}"
        d.mkdir(parents=True, exist_ok=True)
        target = rnd.randint(2_000, 18_000)
        body: list[str] = []
        size = 0
        while size < target:
            line = rnd.choice(lines)
            body.append(line)
            size += len(line)
        if i in marked:
            body.insert(rnd.randrange(len(body)), f"found {LITERAL} here\n")
        data = "".join(body).encode()
        (d / f"file{i:05d}.txt").write_bytes(data)
        total += len(data)
    for i in range(200):
        blob = bytes(rnd.getrandbits(8) for _ in range(64)) + b"\0" + os.urandom(8_000)
        pkg = folder / f"pkg{i % 25:02d}"  # a small tree may not have made it
        pkg.mkdir(exist_ok=True)
        (pkg / f"blob{i:03d}.bin").write_bytes(blob)
    for i in range(5):  # the packages exist: the blobs made every one
        (folder / f"pkg{i:02d}" / f"huge{i}.log").write_bytes(
            (f"{LITERAL} in a file over the limit\n" * 60_000).encode()[: FILE_LIMIT * 2]
        )
    return files, total


def make_root(folder: Path) -> Root:
    return Root(
        name="bench", role="reference", permissions=["read"], real=str(folder),
        rules=DenyRules(), max_read_bytes=FILE_LIMIT,
    )


@dataclass(frozen=True)
class Case:
    label: str
    query: str
    regex: bool = False
    case_sensitive: bool = True
    count: bool = False  # output_mode="count" against `rg -c` (many matching lines)

    def rg_args(self) -> list[str]:
        return [*([] if self.regex else ["-F"]), *([] if self.case_sensitive else ["-i"]),
                *(["-c"] if self.count else ["-n"])]


SYNTHETIC = [
    Case("literal, rare bytes", LITERAL),
    Case("literal, frequent bytes, no hit", COMMON),
    Case("regex with a literal inside", r"zqx[a-z]+al", regex=True),
    Case("regex (?i)", "(?i)ZQXJVORPAL", regex=True),
    Case("regex, classes, no literal", r"[A-Z]{3}[0-9]", regex=True),
    Case("regex alternation, count", r"\bvalue (error|path)\b", regex=True, count=True),
]
REAL = [
    Case("literal, count", "def __init__(self", count=True),
    Case("literal, case-insensitive", "deprecated since", case_sensitive=False),
    Case("regex class definitions, count", r"^[ \t]*class [A-Za-z_0-9]+\(.*Error\):",
         regex=True, count=True),
    Case("regex (?i) word, count", r"(?i)\btodo\b", regex=True, count=True),
    Case("regex, no hit", r"zqx[0-9]+vor", regex=True),
]


def ours(root: Root, case: Case) -> Hits:
    result = search_text(root, TextOptions(
        query=case.query, file_glob="*", case_sensitive=case.case_sensitive, offset=0,
        limit=100_000, cap=1 << 30, file_limit=FILE_LIMIT, budget=1 << 31,
        regex=case.regex, output_mode="count" if case.count else "content",
    ), NoControl())
    assert not result.truncated and not result.has_more
    if case.count:
        return {c.path: c.count for c in result.counts or []}
    return {(m.path, m.line) for m in result.matches or []}


def rg(rg_bin: str, folder: Path, case: Case) -> Hits:
    out = subprocess.run(
        [rg_bin, "-j1", "--no-ignore", "--max-filesize", "1M", "--no-heading", "-H",
         *case.rg_args(), "-e", case.query, "."],
        cwd=folder, capture_output=True, text=True, check=False,
    ).stdout
    if case.count:
        return {p.removeprefix("./"): int(c) for p, c in
                (row.rsplit(":", 1) for row in out.splitlines())}
    found: set[tuple[str, int]] = set()
    for row in out.splitlines():
        path, line, _ = row.split(":", 2)
        found.add((path.removeprefix("./"), int(line)))
    return found


def spawn(rg_bin: str) -> None:
    subprocess.run([rg_bin, "--version"], capture_output=True, check=True)


def timed(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each function, runs interleaved so that load
    from other processes hits every variant alike. CPU is this process's time for
    in-process work plus its children's (rg) time."""
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for key, fn in fns.items():
            c0 = _cpu()
            t0 = time.perf_counter()
            fn()
            wall[key].append(time.perf_counter() - t0)
            cpu[key].append(_cpu() - c0)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in fns}


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def copy_sources(src: Path, dst: Path) -> tuple[int, int]:
    """The .py/.pyi files under `src` (an installed site-packages), denied names left out."""
    rules = DenyRules()
    files = total = 0
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if rules.name(d) is None)
        rel = Path(dirpath).relative_to(src)
        for name in filenames:
            if not name.endswith((".py", ".pyi")) or rules.name(name) is not None:
                continue
            (dst / rel).mkdir(parents=True, exist_ok=True)
            data = (Path(dirpath) / name).read_bytes()
            (dst / rel / name).write_bytes(data)
            files += 1
            total += len(data)
    return files, total


def bench(rg_bin: str, folder: Path, cases: list[Case], runs: int) -> bool:
    root = make_root(folder)
    for case in cases:
        mine, theirs = ours(root, case), rg(rg_bin, folder, case)  # warms the cache too
        if mine != theirs:
            print(f"MISMATCH on {case.query!r}: ours {len(mine)}, rg {len(theirs)}",
                  file=sys.stderr)
            return False
        what = "files" if case.count else "matching lines"
        print(f"  {case.label} {case.query!r}: both found {len(mine)} {what}")
    fns: dict[str, Callable[[], object]] = {"spawn": lambda: spawn(rg_bin)}
    for k, case in enumerate(cases):
        fns[f"ours{k}"] = functools.partial(ours, root, case)
        fns[f"rg{k}"] = functools.partial(rg, rg_bin, folder, case)
    got = timed(fns, runs)
    spawn_wall = got["spawn"][0]
    print(f"  median of {runs} interleaved runs (rg -j1; spawn {spawn_wall * 1e3:.1f} ms):")
    print(f"  {'case':34s} {'ours ms':>8s} {'rg ms':>8s} {'wall x':>7s} {'-spawn x':>8s} "
          f"{'CPU x':>6s}")
    for k, case in enumerate(cases):
        (w_o, c_o), (w_r, c_r) = got[f"ours{k}"], got[f"rg{k}"]
        print(f"  {case.label:34s} {w_o * 1e3:8.1f} {w_r * 1e3:8.1f} {w_o / w_r:7.2f} "
              f"{w_o / max(w_r - spawn_wall, 1e-9):8.2f} {c_o / max(c_r, 1e-9):6.2f}")
    return True


def end_to_end(rg_bin: str, folder: Path, cases: list[Case], runs: int) -> bool:
    """The same cases as tool calls to the real server (console script, HTTP, SDK client)."""
    import asyncio

    from benchmarks._client import ServerProcess, call, http_session, write_config

    cases = [c for c in cases if not c.count]  # pages of counts would need many calls
    state = folder.parent / f"state-{folder.name}"
    state.mkdir(exist_ok=True)
    config = write_config(state / "roots.toml", [("bench", folder, "reference")],
                          max_search_bytes=1 << 30, max_search_file_bytes=FILE_LIMIT)

    def args(case: Case) -> dict[str, object]:
        return {"query": case.query, "regex": case.regex, "case_sensitive": case.case_sensitive,
                "limit": 200}

    async def go(url: str) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {}
        async with http_session(url) as s:
            for case in cases:  # warm, and the same lines as rg
                res = await call(s, "search_text", args(case), validate=False)
                got = {(m["path"], m["line"]) for m in res.structured_content["matches"]}
                if got != rg(rg_bin, folder, case):
                    print(f"MISMATCH over HTTP on {case.query!r}", file=sys.stderr)
                    return {}
            for _ in range(runs):
                for k, case in enumerate(cases):
                    t0 = time.perf_counter()
                    await call(s, "search_text", args(case), validate=False)
                    times.setdefault(f"ours{k}", []).append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    rg(rg_bin, folder, case)
                    times.setdefault(f"rg{k}", []).append(time.perf_counter() - t0)
        return times

    with ServerProcess(config, log=state / "server.log") as srv:
        srv.wait_healthy()
        times = asyncio.run(go(srv.url))
    if not times:
        return False
    print(f"  end to end (HTTP, SDK client without its schema check), median of {runs}:")
    for k, case in enumerate(cases):
        o, r = statistics.median(times[f"ours{k}"]), statistics.median(times[f"rg{k}"])
        print(f"  {case.label:34s} {o * 1e3:8.1f} {r * 1e3:8.1f} {o / r:7.2f}")
    return True


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--keep", help="build the tree here (kept afterwards) instead of a temp dir")
    ap.add_argument("--real", default=sysconfig.get_paths()["purelib"],
                    help="a source tree installed from a package registry (default: this "
                    "Python's site-packages, whose .py/.pyi files are copied)")
    ap.add_argument("--only", choices=["synthetic", "real"])
    args = ap.parse_args()
    runs = max(7, args.runs)
    rg_bin = shutil.which("rg")
    if rg_bin is None:
        print("ripgrep (rg) is not installed: apt-get install -y ripgrep", file=sys.stderr)
        return 2
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="loomfs-bench-"))
    try:
        tmp.mkdir(parents=True, exist_ok=True)
        synth, real = tmp / "synthetic", tmp / "real"
        ok = True
        if args.only != "real":
            if not synth.exists():
                synth.mkdir()
                files, total = build(synth, args.files)
                print(f"synthetic tree: {files} text files, {total / 1e6:.1f} MB, "
                      "200 binaries, 5 over 1 MiB")
            ok = bench(rg_bin, synth, SYNTHETIC, runs) and ok
            ok = end_to_end(rg_bin, synth, SYNTHETIC, runs) and ok
        if args.only != "synthetic":
            if not real.exists():
                real.mkdir()
                files, total = copy_sources(Path(args.real), real)
                print(f"real tree: {files} .py/.pyi files, {total / 1e6:.1f} MB "
                      "(sources of the packages installed from PyPI)")
            ok = bench(rg_bin, real, REAL, runs) and ok
            ok = end_to_end(rg_bin, real, REAL, runs) and ok
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
