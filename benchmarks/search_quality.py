"""`search` quality and speed: known-item queries over a real corpus, the scan's ranking
against the index's, in the same run.

    .venv/bin/python benchmarks/search_quality.py [--corpus DIR] [--queries 150] [--seed 16]
        [--copies 4] [--runs 5]

Corpus: every `.py` file under DIR (default: this Python's standard library), without
`site-packages` and test folders, copied into a temporary root. Queries (seeded,
reproducible): for a random file, one of its docstrings (module, class or function) at
random; four distinct content words of its first sentence (three letters or more, not
stop words), shuffled; the file is the known item. Word sets that a docstring sentence
of another file also holds are not used (the known item would be ambiguous: the
generated `encodings/cp*.py` modules share one docstring but for the code page).

Prints, for the scan (`scan_search`, the ranking before the index), the index
(`search`) and the index without its all-words/near/phrase bonuses: MRR@10 (1/rank of
the known item within the first ten, else 0, averaged), recall@10 and the median time
per query (in process, warm). Then reach and speed on the corpus copied `--copies` times
with `max_search_bytes` set to one copy's size (so the root is `--copies` times the byte
budget): the first build's time and the index size per MB of text, whether the answers
are complete (no build left unfinished), the warm median, the change scan alone, the
median after one file changed (the change scan plus one re-index), and the median after
one file was removed (the change scan plus the merge that drops its words from the index).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import re
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.corpus import deep_research as dr
from app.corpus import ranked
from app.fs.control import NoControl
from app.fs.index.fulltext import fts
from app.fs.index.fulltext import ranked as per_root
from app.registry import Registry

STOP = set(
    """the and for are but not you all any can had her was one our out has have this that
    with from they will would there their what when which who whom this these those into
    than then them been being were its it's also such only other some more most very may
    might must should could does did doing done each how why where here both few same own
    just over under again further once about above below between through during before
    after off upon per via use used using returns return given given an object objects
    value values true false none if else""".split()  # noqa: SIM905
)
SKIP_DIRS = {"site-packages", "test", "tests", "idle_test", "__pycache__"}


def corpus_files(src: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        out.extend(Path(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return out


def first_sentence(doc: str) -> str:
    para = doc.strip().split("\n\n", 1)[0]
    return re.split(r"(?<=[.!?])\s", " ".join(para.split()), maxsplit=1)[0]


def content_words(sentence: str) -> list[str]:
    return list(
        dict.fromkeys(
            w.lower() for w in re.findall(r"[A-Za-z]{3,}", sentence) if w.lower() not in STOP
        )
    )


def known_items(src: Path, files: list[Path], n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    per_file: dict[str, list[list[str]]] = {}
    for f in files:
        rel = f.relative_to(src).as_posix()
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        docs = [ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds)]
        per_file[rel] = [content_words(first_sentence(d)) for d in docs if d]
    holders: dict[str, set[str]] = {}  # word -> files with a docstring sentence holding it
    for rel, sentences in per_file.items():
        for words in sentences:
            for w in words:
                holders.setdefault(w, set()).add(rel)
    order = sorted(per_file)
    rng.shuffle(order)
    out: list[tuple[str, str]] = []
    for rel in order:
        sentences = [w for w in per_file[rel] if len(w) >= 4]
        rng.shuffle(sentences)
        for words in sentences:
            picked = rng.sample(words, 4)
            # A known item is the only file with a docstring sentence holding all four words
            # (generated modules such as encodings/cp437.py and cp850.py share theirs).
            others = {
                other
                for other in set.intersection(*(holders[w] for w in picked)) - {rel}
                if any(set(picked) <= set(s) for s in per_file[other])
            }
            if others:
                continue
            rng.shuffle(picked)
            out.append((" ".join(picked), rel))
            break
        if len(out) == n:
            break
    return out


def make_root(src: Path, files: list[Path], dest: Path, copies: int) -> int:
    total = 0
    for c in range(copies):
        base = dest if copies == 1 else dest / f"copy{c}"
        for f in files:
            target = base / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
            total += target.stat().st_size
    return total


def config(work: Path, root: Path, extra: str = "") -> Path:
    cfg = work / "roots.toml"
    cfg.write_text(
        f'audit_log = "{work / "state" / "audit.log"}"\nsearch_fetch_tools = true\n{extra}\n'
        f'[[roots]]\nname = "lib"\npath = "{root}"\nrole = "reference"\n'
    )
    return cfg


Searcher = Callable[[Any, str, Any], dict[str, Any]]


def quality(
    reg: Registry, items: list[tuple[str, str]], fn: Searcher
) -> tuple[float, float, float]:
    rr, hits, times = 0.0, 0, []
    for q, rel in items:
        t = time.perf_counter()
        data = fn(reg.current, q, NoControl())
        times.append(time.perf_counter() - t)
        ids = [r["id"] for r in data["results"][:10]]
        target = f"lib/{rel}"
        if target in ids:
            hits += 1
            rr += 1 / (ids.index(target) + 1)
    return rr / len(items), hits / len(items), statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    src = Path(args.corpus).resolve()
    files = corpus_files(src)
    items = known_items(src, files, args.queries, args.seed)
    print(f"fts5: {fts.fts5_problem() or 'available'}")
    with tempfile.TemporaryDirectory(prefix="loomfs-quality-") as tmp:
        work = Path(tmp)
        one = work / "one"
        size = make_root(src, files, one, 1)
        print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB; {len(items)} known-item queries")
        reg = Registry(str(config(work, one)), audit=False)
        dr.search(reg.current, "warm up", NoControl())
        print(f"{'ranking':<24} {'MRR@10':>7} {'recall@10':>10} {'median ms':>10}")
        for name, fn in (("scan (before)", dr.scan_search), ("index: BM25 (after)", dr.search)):
            mrr, recall, ms = quality(reg, items, fn)
            print(f"{name:<24} {mrr:>7.3f} {recall:>10.3f} {ms:>10.1f}")
        bonuses = per_root.ALL_BONUS, per_root.NEAR_BONUS, per_root.PHRASE_BONUS
        per_root.ALL_BONUS = per_root.NEAR_BONUS = per_root.PHRASE_BONUS = 0.0
        mrr, recall, ms = quality(reg, items, dr.search)
        per_root.ALL_BONUS, per_root.NEAR_BONUS, per_root.PHRASE_BONUS = bonuses
        print(f"{'index: BM25, no bonus':<24} {mrr:>7.3f} {recall:>10.3f} {ms:>10.1f}")

        if args.copies < 2:
            return
        big = work / "big"
        total = make_root(src, files, big, args.copies)
        (work / "state").mkdir(exist_ok=True)
        time.sleep(fts.RACY_NS / 1e9)  # files younger than that are re-read on purpose
        cfg = config(work, big, f"max_search_bytes = {size}")
        reg = Registry(str(cfg), audit=False)
        print(
            f"\nreach: {args.copies} copies, {total / 1e6:.1f} MB, "
            f"max_search_bytes = {size} (the root is {total / size:.1f}x the budget)"
        )
        ranked.BUILD_SECONDS = 3600.0  # the whole first build in one call, to time it
        t = time.perf_counter()
        first = dr.search(reg.current, "first build", NoControl())
        build = time.perf_counter() - t
        ranked.BUILD_SECONDS = 20.0
        big_root = reg.current.root("lib")  # named like the one-copy root: find it by its path
        index_file = Path(ranked.index_dir(reg.current)) / fts.file_name("lib", big_root.real)
        idx = fts.index_at(str(index_file))
        with idx.lock:  # the database as SQLite sees it, whether or not its log is written back
            con = idx.con
            assert con is not None
            pages = con.execute("PRAGMA page_count").fetchone()[0]
            index_bytes = pages * con.execute("PRAGMA page_size").fetchone()[0]
        building = "still being built" in first.get("note", "")
        print(
            f"first build: {build:.1f} s ({total / 1e6 / build:.1f} MB/s); index "
            f"{index_bytes / 1e6:.1f} MB = {index_bytes / total:.2f} MB per MB of text; "
            f"complete: {not building}"
        )
        old = dr.scan_search(reg.current, items[0][0], NoControl())
        print(f"scan on the same root: truncated={old.get('truncated', False)}")
        sample = items[: max(10, args.runs * 6)]
        warm: list[float] = []
        incomplete = 0
        for _ in range(args.runs):
            for q, _rel in sample:
                t = time.perf_counter()
                data = dr.search(reg.current, q, NoControl())
                warm.append(time.perf_counter() - t)
                incomplete += "still being built" in data.get("note", "")
        print(
            f"warm search: median {statistics.median(warm) * 1000:.1f} ms over {len(warm)} "
            f"queries; answers that stopped early: {incomplete}"
        )
        snap = reg.current
        root = snap.root("lib")
        per_file = root.max_read_bytes
        scans: list[float] = []
        for _ in range(args.runs * 3):
            t = time.perf_counter()
            with idx.lock:
                idx.refresh(
                    root,
                    ranked.identity(snap, root, per_file),
                    per_file,
                    deadline=time.monotonic() + 60,
                    check=lambda: None,
                )
            scans.append(time.perf_counter() - t)
        n_files, _ = idx.stats()
        scan_ms = statistics.median(scans) * 1000
        print(
            f"change scan alone (nothing changed): median {scan_ms:.1f} ms for {n_files} files "
            f"= {scan_ms / n_files * 1000:.1f} ms per 1000 files"
        )
        changed: list[float] = []
        victim = next(big.rglob("*.py"))
        for i in range(args.runs * 3):
            victim.write_text(victim.read_text() + f"\n# edit {i}\n")
            t = time.perf_counter()
            dr.search(reg.current, sample[i % len(sample)][0], NoControl())
            changed.append(time.perf_counter() - t)
        print(f"after one file changed: median {statistics.median(changed) * 1000:.1f} ms")
        removed: list[float] = []
        for i in range(args.runs):
            text = victim.read_text()
            victim.unlink()
            t = time.perf_counter()
            dr.search(reg.current, sample[i % len(sample)][0], NoControl())
            removed.append(time.perf_counter() - t)
            victim.write_text(text)
            dr.search(reg.current, "restored", NoControl())  # indexed again, not timed
        print(f"after one file removed: median {statistics.median(removed) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
