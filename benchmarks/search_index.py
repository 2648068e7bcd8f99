"""search_text with the trigram index against a scan and ripgrep, on a large real tree.

    .venv/bin/python benchmarks/search_index.py --tree DIR [--runs 5] [--state DIR]

Per query, medians of `--runs`, warm page cache: `rg -j1`, `rg` on all cores, our scan
(`search_text`, no index) and our index (`search_text` with the trigram index, after a
build that walked the tree under the watch: no walk per search). Hits are compared as
(path, line) sets: ripgrep is told the server's deny list as `-g '!NAME'` globs and
`--no-require-git` (the server reads .gitignore in any folder). Also: the build's time
(in the background thread, timed to completion), the index's bytes over the bytes it
indexed, and this process's peak resident size (`VmHWM`) after the build and after the
queries. Config: `max_search_bytes` raised to 4 GiB, `max_search_file_bytes` 8 MiB (the
default 64 MiB budget stops a scan of a tree this size early); content mode, every hit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.fs.control import NoControl
from app.fs.index.narrow import Keeper, Scope, narrowing
from app.fs.index.trigram import TrigramIndex
from app.fs.search.needs import Narrowed
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security import deny
from tests.kit import secure_root

QUERIES = [  # (name, query, regex, case_sensitive)
    ("error message", "Invalid HTTP_HOST header", False, True),
    ("rare identifier", "ParamSpecKwargs", False, True),
    ("error message 2", "object is not subscriptable", False, True),
    ("rare identifier, no case", "getfullargspec", False, False),
    ("regex with a literal", r"def __init_subclass__\(cls", True, True),
    ("regex with a literal 2", r"raise NotImplementedError\([a-z]+", True, True),
    ("alternation", "ReadTimeoutError|ConnectTimeoutError", True, True),
    ("no case literal", "Content-Security-Policy", False, False),
    ("unselective", "import", False, True),
    ("unselective regex", r"return [a-z]+", True, True),
]


def vmhwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rg_hits(tree: Path, query: str, regex: bool, case: bool, jobs: int | None
            ) -> tuple[float, set[tuple[str, int]]]:
    rg = shutil.which("rg")
    assert rg is not None, "ripgrep is not installed"
    args = [rg, "--no-config", "--hidden", "--no-require-git", "-n", "--no-heading", "-H", "-0",
            "--color", "never", "--no-messages"]
    for name in (*deny.FLOOR, *deny.BASE):
        args += ["-g", f"!{name}"]
    if jobs:
        args += ["-j", str(jobs)]
    if not case:
        args.append("-i")
    if not regex:
        args.append("-F")
    t = time.perf_counter()
    out = subprocess.run([*args, "-e", query], cwd=tree, capture_output=True, check=False)
    took = time.perf_counter() - t
    hits = set()
    for line in out.stdout.decode("utf-8", "surrogateescape").split("\n"):
        if "\0" not in line:
            continue
        path, rest = line.split("\0", 1)
        num = rest.split(":", 1)[0]
        if num.isdigit():  # not "binary file matches"
            hits.add((path.removeprefix("./"), int(num)))
    return took, hits


def ours(root: object, query: str, regex: bool, case: bool, narrow: object
         ) -> tuple[float, set[tuple[str, int]]]:
    opts = TextOptions(query=query, regex=regex, case_sensitive=case, path="", file_glob="*",
                       offset=0, limit=10_000_000, cap=1 << 40, file_limit=8 << 20,
                       budget=4 << 30)
    t = time.perf_counter()
    r = search_text(root, opts, NoControl(), narrow)  # type: ignore[arg-type]
    took = time.perf_counter() - t
    assert not r.truncated, r.note
    return took, {(m["path"], m["line"]) for m in r.model_dump()["matches"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--state", type=Path, default=None)
    ap.add_argument("--only", default="", help="the queries whose name holds this")
    a = ap.parse_args()
    state = a.state or Path(tempfile.mkdtemp(prefix="trigram-bench-"))
    root = secure_root(a.tree, max_read_bytes=8 << 20)
    idx = TrigramIndex(str(state / "index" / "bench.trigram.sqlite3"))
    keeper = Keeper(idx)
    inner = narrowing(idx, keeper, root, "bench")

    def narrow(needs, walk, glob, dirs):  # type: ignore[no-untyped-def]
        filt = walk.filt
        scope = Scope(walk.walker.start, glob.matches, filt.use_ignore and not filt.exclude)
        got = inner(needs.strings, needs.fold, dirs, scope)
        return None if got is None else Narrowed(*got)

    t = time.perf_counter()
    keeper.kick(root, "bench")
    built = keeper.wait()
    build_s = time.perf_counter() - t
    keeper.kick(root, "bench")  # a second pass: files too young to trust the first time
    keeper.wait()
    size = idx.size()
    print(f"tree: {built.files} files; indexed {built.indexed_bytes / 2**20:.0f} MiB in "
          f"{build_s:.1f} s (background thread); index {size / 2**20:.1f} MiB = "
          f"{100 * size / max(built.indexed_bytes, 1):.1f}% of the indexed bytes; "
          f"peak RSS after build {vmhwm_mib():.0f} MiB; watch "
          f"{'on' if idx.watched else 'off'}")
    print(f"{'query':28} {'rg -j1':>8} {'rg':>8} {'scan':>8} {'index':>8} {'×rg':>6} "
          f"{'hits':>7}  equal")
    for name, query, regex, case in [q for q in QUERIES if a.only in q[0]]:
        times: dict[str, list[float]] = {"rg1": [], "rg": [], "scan": [], "index": []}
        hits: dict[str, set[tuple[str, int]]] = {}
        for _ in range(a.runs):
            for key in times:
                if key.startswith("rg"):
                    took, got = rg_hits(a.tree, query, regex, case, 1 if key == "rg1" else None)
                else:
                    took, got = ours(root, query, regex, case, narrow if key == "index" else None)
                times[key].append(took)
                hits[key] = got
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        same = hits["index"] == hits["scan"] == hits["rg"]
        print(f"{name:28} {med['rg1']:8.0f} {med['rg']:8.0f} {med['scan']:8.0f} "
              f"{med['index']:8.1f} {med['rg'] / max(med['index'], 1e-3):6.1f} "
              f"{len(hits['rg']):7d}  {'yes' if same else _diff(hits)}")
    print(f"ms, medians of {a.runs}; peak RSS {vmhwm_mib():.0f} MiB")
    os.sync()


def _diff(hits: dict[str, set[tuple[str, int]]]) -> str:
    return (f"no: index-scan {len(hits['index'] ^ hits['scan'])}, "
            f"scan-rg {len(hits['scan'] - hits['rg'])}/{len(hits['rg'] - hits['scan'])} "
            f"e.g. {sorted(hits['scan'] ^ hits['rg'])[:2]}")


if __name__ == "__main__":
    main()
