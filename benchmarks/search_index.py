"""search_text with the trigram index against a scan and ripgrep, on a large real tree.

    .venv/bin/python benchmarks/search_index.py --tree DIR [--runs 5] [--state DIR]
        [--only NAME] [--no-rg] [--fresh-reps 5] [--shards N]

DIR: any large real tree; `benchmarks/corpus.py --out DIR` builds the one the figures in
`docs/measured.md` name (about 1.1 GB from pinned npm and PyPI packages).

Per query, medians of `--runs`, warm page cache: `rg -j1`, `rg` on all cores, our scan
(`search_text`, no index) and our index (`search_text` with the trigram index, after a
build that walked the tree under the watch: no walk per search). Hits are compared as
(path, line) sets: ripgrep is told the server's deny list as `-g '!NAME'` globs,
`--no-require-git` (the server reads .gitignore in any folder) and `--max-filesize` of
`max_search_file_bytes` (a larger file is not searched). Also: the build's time
(in the background thread, timed to completion), the index's bytes over the bytes it
indexed, and this process's peak resident size (`VmHWM`) after the build and after the
queries. Config: `max_search_bytes` raised to 4 GiB, `max_search_file_bytes` 8 MiB (the
default 64 MiB budget stops a scan of a tree this size early), and the searcher's CPU
limit (`MAX_CPU_S`, 3 s a call) to 600 s (an unselective scan of 1 GB on a loaded machine
passes 3 s); content mode, every hit. The search that walks once the last walk is a minute
old (`narrow.REWALK`) is left out: `benchmarks/rewalk.py` measures what it costs.
`÷scan` is the index's time over the scan's: the unselective queries' line says whether
the index is no slower than a scan there.

Freshness, after the queries (`--fresh-reps` repetitions, each from a settled index): a
fresh token is written, then searched for (through the index) at 0, 0.5, 1 and 2 s after
the write; per way of writing, how many repetitions found it at each probe, and the median
time from the write to the end of the first search that found it. The ways: a new file
and an appended line written with plain file I/O (outside the server), and a new file and
an overwrite through the server's own `write_file` (in this process, as the tool calls
it). Every file the benchmark wrote is removed and every file it changed is restored
afterwards, along with the trash folder an overwrite made if there was none.
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
import uuid
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.corpus.trigram import narrow_of
from app.fs.change.write import write_file
from app.fs.control import NoControl
from app.fs.index.trigrams import narrow as narrow_mod
from app.fs.index.trigrams import shards, trigram_build
from app.fs.index.trigrams.narrow import Keeper
from app.fs.index.trigrams.trigram import TrigramIndex
from app.fs.search import searcher
from app.fs.search.needs import Narrow
from app.fs.search.options import TextOptions
from app.fs.search.text import search_text
from app.security import deny
from app.security.resolve import Root
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


FILE_LIMIT = 8 << 20  # max_search_file_bytes; ripgrep's --max-filesize
PROBES = (0.0, 0.5, 1.0, 2.0)  # seconds after a write that a search looks for it
TRASH = ".mcp-trash"


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
    args += ["--max-filesize", str(FILE_LIMIT)]  # as ours: a larger file is not searched
    if jobs:
        args += ["-j", str(jobs)]
    if not case:
        args.append("-i")
    if not regex:
        args.append("-F")
    t = time.perf_counter()
    out = subprocess.run([*args, "-e", query, "."], cwd=tree, capture_output=True, check=False,
                         stdin=subprocess.DEVNULL)  # "." and no stdin: rg reads a piped stdin
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


def ours(root: Root, query: str, regex: bool, case: bool, narrow: Narrow | None
         ) -> tuple[float, set[tuple[str, int]]]:
    opts = TextOptions(query=query, regex=regex, case_sensitive=case, path="", file_glob="*",
                       offset=0, limit=10_000_000, cap=1 << 40, file_limit=FILE_LIMIT,
                       budget=4 << 30)
    t = time.perf_counter()
    r = search_text(root, opts, NoControl(), narrow)
    took = time.perf_counter() - t
    assert not r.truncated, r.note
    return took, {(m["path"], m["line"]) for m in r.model_dump()["matches"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--state", type=Path, default=None)
    ap.add_argument("--only", default="", help="the queries whose name holds this")
    ap.add_argument("--no-rg", action="store_true", help="leave ripgrep out (hits: scan's)")
    ap.add_argument("--fresh-reps", type=int, default=5, help="0: no freshness figures")
    ap.add_argument("--shards", type=int, default=0,
                    help="the trigram files written at once (default: the server's)")
    a = ap.parse_args()
    searcher.MAX_CPU_S = 600.0  # the 3 s a call would cut a scan of this tree short
    narrow_mod.REWALK = float("inf")  # the walk each minute: measured by benchmarks/rewalk.py
    if a.shards:  # e.g. 1: the build on one core, the baseline of the shards' gain
        shards.SHARDS = trigram_build.SHARDS = a.shards
    state = a.state or Path(tempfile.mkdtemp(prefix="trigram-bench-"))
    root = secure_root(a.tree, max_read_bytes=FILE_LIMIT)
    idx = TrigramIndex(str(state / "index" / "bench.trigram.sqlite3"))
    keeper = Keeper(idx)
    narrow = narrow_of(keeper, root, "bench")  # as the server narrows a call

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
          f"{'on' if idx.watched else 'off'}"
          + (f" (resumed from --state: {built.indexed} files read again, so the share above"
             " is not the index's)" if a.state else ""))
    queries(a, root, narrow)
    if a.fresh_reps:
        freshness(a.tree, root, narrow, (idx, keeper), a.fresh_reps)
    os.sync()


def queries(a: argparse.Namespace, root: Root, narrow: Narrow) -> None:
    print(f"{'query':28} {'rg -j1':>8} {'rg':>8} {'scan':>8} {'index':>8} {'×rg':>6} "
          f"{'÷scan':>6} {'hits':>7}  equal")
    keys = ["scan", "index"] if a.no_rg else ["rg1", "rg", "scan", "index"]
    unselective: list[float] = []
    for name, query, regex, case in [q for q in QUERIES if a.only in q[0]]:
        times: dict[str, list[float]] = {k: [] for k in keys}
        hits: dict[str, set[tuple[str, int]]] = {}
        for _ in range(a.runs):
            for key in keys:
                if key.startswith("rg"):
                    took, got = rg_hits(a.tree, query, regex, case, 1 if key == "rg1" else None)
                else:
                    took, got = ours(root, query, regex, case, narrow if key == "index" else None)
                times[key].append(took)
                hits[key] = got
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        hits.setdefault("rg", hits["scan"])
        same = hits["index"] == hits["scan"] == hits["rg"]
        ratio = med["index"] / max(med["scan"], 1e-3)
        if name.startswith("unselective"):
            unselective.append(ratio)
        print(f"{name:28} {med.get('rg1', 0):8.0f} {med.get('rg', 0):8.0f} {med['scan']:8.0f} "
              f"{med['index']:8.1f} {med.get('rg', 0) / max(med['index'], 1e-3):6.1f} "
              f"{ratio:6.2f} {len(hits['rg']):7d}  {'yes' if same else _diff(hits)}")
    print(f"ms, medians of {a.runs}; peak RSS {vmhwm_mib():.0f} MiB"
          + ("; ripgrep left out, hits compared with the scan's" if a.no_rg else ""))
    if unselective:
        print("unselective queries, index ms / scan ms: "
              + ", ".join(f"{r:.2f}" for r in unselective)
              + f" ({'no slower' if max(unselective) <= 1.0 else 'slower'} than the scan)")


def _diff(hits: dict[str, set[tuple[str, int]]]) -> str:
    return (f"no: index-scan {len(hits['index'] ^ hits['scan'])}, "
            f"scan-rg {len(hits['scan'] - hits['rg'])}/{len(hits['rg'] - hits['scan'])} "
            f"e.g. {sorted(hits['scan'] ^ hits['rg'])[:2]}")


class Scratch:
    """What the freshness figures write in the tree, undone afterwards."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.made: list[Path] = []
        self.saved: dict[Path, bytes] = {}
        self.trash_was = (tree / TRASH).exists()
        self.folder, self.victim = _spot(tree)

    def new(self, tag: str) -> tuple[Path, str]:
        path = self.folder / f"loomfs-fresh-{tag}-{uuid.uuid4().hex[:8]}.txt"
        self.made.append(path)
        return path, path.relative_to(self.tree).as_posix()

    def undo(self) -> None:
        for path in self.made:
            path.unlink(missing_ok=True)
        for path, data in self.saved.items():
            path.write_bytes(data)
        if not self.trash_was and (self.tree / TRASH).is_dir():
            shutil.rmtree(self.tree / TRASH)


def _spot(tree: Path) -> tuple[Path, Path]:
    """A folder the build watches (no new folder: that breaks the watch) and a text file in it."""
    skip = {*deny.FLOOR, *deny.BASE}
    for dirpath, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("."))
        for n in sorted(names):
            if n.endswith((".py", ".js", ".ts", ".md", ".txt")) and not n.startswith("."):
                return Path(dirpath), Path(dirpath) / n
    raise SystemExit("no text file to modify in the tree")


def _outside_new(s: Scratch, token: str) -> None:
    path, _ = s.new("outside")
    with path.open("w") as f:
        f.write(f"a line that holds {token}\n")


def _outside_append(s: Scratch, token: str) -> None:
    s.saved.setdefault(s.victim, s.victim.read_bytes())
    with s.victim.open("a") as f:
        f.write(f"\n# {token}\n")


def _server_new(s: Scratch, root: Root, token: str) -> None:
    _, rel = s.new("server")
    write_file(root, rel, f"a line that holds {token}\n")


def _server_overwrite(s: Scratch, root: Root, token: str) -> None:
    _, rel = s.new("server-over")
    write_file(root, rel, "a first version\n")
    time.sleep(0.2)  # the first version's own events drained by a search before the token's
    write_file(root, rel, f"a second version with {token}\n", overwrite=True)


def freshness(tree: Path, root: Root, narrow: Narrow, index: tuple[TrigramIndex, Keeper],
              reps: int) -> None:
    idx, keeper = index
    s = Scratch(tree)
    ways: list[tuple[str, Callable[[str], None]]] = [
        ("new file, outside", lambda tok: _outside_new(s, tok)),
        ("appended line, outside", lambda tok: _outside_append(s, tok)),
        ("new file, write_file", lambda tok: _server_new(s, root, tok)),
        ("overwrite, write_file", lambda tok: _server_overwrite(s, root, tok)),
    ]
    print(f"freshness, {reps} repetitions; per probe (s after the write): found / searches, "
          "median ms of those searches; watch ok: the watch trusted at the first probe")
    print(f"{'way':24} " + " ".join(f"{f'{p:g} s':>14}" for p in PROBES)
          + "  first found ms  watch ok")
    try:
        for name, write in ways:
            found = {p: 0 for p in PROBES}
            took: dict[float, list[float]] = {p: [] for p in PROBES}
            first: list[float] = []
            trusted = 0
            for _ in range(reps):
                keeper.wait()  # each repetition from a settled index
                token = f"loomfsfresh{uuid.uuid4().hex}"
                write(token)
                t0 = time.perf_counter()
                seen = None
                for probe in PROBES:
                    time.sleep(max(0.0, t0 + probe - time.perf_counter()))
                    if probe == PROBES[0]:  # drains the watch, as the search would
                        trusted += idx.trusted_watch() is not None
                    ms, hits = ours(root, token, False, True, narrow)
                    took[probe].append(ms * 1000)
                    if hits:
                        found[probe] += 1
                        if seen is None:
                            seen = (time.perf_counter() - t0) * 1000
                if seen is not None:
                    first.append(seen)
            cells = " ".join(f"{f'{found[p]}/{reps} {statistics.median(took[p]):.0f}':>14}"
                             for p in PROBES)
            med = f"{statistics.median(first):.0f}" if first else "never"
            print(f"{name:24} {cells}  {med:>14}  {trusted}/{reps}")
    finally:
        keeper.wait()
        s.undo()


if __name__ == "__main__":
    main()
