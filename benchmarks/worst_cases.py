"""The worst inputs found for each matcher, reader and differ: CPU time and memory per case.

    .venv/bin/python benchmarks/worst_cases.py [--runs N] [--case NAME ...]

Each case runs in a fresh child process on files it builds in a temporary
folder (a root with the largest default budget, `max_read_bytes` = 8 MiB, and
the default `max_search_bytes` = 64 MiB and `max_output_chars` = 65536),
through the same `app.fs` functions the tools call. The child warms up on a
small file, resets its peak resident size (Linux `/proc/self/clear_refs`),
runs the case, and reports its CPU seconds and its peak resident size
(`VmHWM`) minus its resident size before the case: what the case cost.
Prints the median of `--runs` children per case. The bound every case must
keep (docs/tools.md): seconds of CPU, tens of MiB. `tests/fs/test_worst_cases.py`
runs each case once and asserts a generous version of it.

The cases are the attacks that once froze or bloated the server:
glob patterns that make a backtracking regex exponential, files of empty
lines (once 1.3 GB for one read), one huge line, CR-only and CRLF files,
UTF-16 files of empty lines, a search whose every line matches, a regex whose
automaton is too large for RE2's DFA, a search under
8 MiB of ignore files of wildcard-heavy rules, and edits of a file of
repetitive lines (difflib over the whole file: 20 s).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._child import Figures, figures, print_medians, run_child

REPO = str(Path(__file__).resolve().parent.parent)
MIB = 1 << 20
BUDGET = 8 * MIB


def build(folder: Path) -> None:
    """The files the cases read, each just under the 8 MiB budget, written in pieces."""
    def fill(name: str, unit: bytes, size: int = BUDGET - 16, head: bytes = b"") -> None:
        with open(folder / name, "wb") as f:
            f.write(head)
            block = unit * (MIB // len(unit))
            left = size - len(head)
            while left > 0:
                f.write(block[:left])
                left -= len(block)

    fill("empty_lines.txt", b"\n")
    fill("crlf_lines.txt", b"\r\n")
    fill("cr_only.txt", b"\r")
    fill("one_line.txt", b"x")
    fill("mixed.txt", b"\n\r\n\ra\n\n")
    fill("utf16_lines.txt", "\n".encode("utf-16-le"), head=b"\xff\xfe")
    fill("matches.txt", b"a\n")
    fill("overlapping.txt", b"a" * 200 + b"\n")
    (folder / "small.txt").write_text("one\ntwo\n")
    names = folder / "names"
    names.mkdir()
    for i in range(200):
        (names / ("a" * 30 + f"{i:03d}")).write_text("a\n")
    import random

    rnd = random.Random(0)
    # Lines of random `a` and `b`: half of them end 21 bytes after an `a`, and the DFA of
    # `[ab]*a[ab]{20}$` needs 2^21 states, so RE2 runs its NFA (about 2 MB/s).
    ab = folder / "ab"
    ab.mkdir()
    for k in range(20):
        lines = ("".join(rnd.choices("ab", k=200)) for _ in range(MIB // 2 // 201))
        (ab / f"ab{k:02d}.txt").write_text("\n".join(lines) + "\n")
    # Ignore files as large as one is read (1 MiB), eight levels deep (a call reads 8 MiB of
    # them at most), of wildcard-heavy rules; a level's rules are held while below it.
    level = folder / "ignored"
    for depth in range(8):
        level.mkdir()
        rules: list[str] = []
        size = 0
        while size < MIB - 256:
            if depth % 2:
                line = "/".join(["[a-z0-9][!x]*?"] * 6) + f"{len(rules)}\n"
            else:
                line = "**/" + "*".join(rnd.choices("abc", k=12)) + f"*{len(rules)}/**\n"
            rules.append(line)
            size += len(line)
        (level / (".ignore" if depth % 2 else ".gitignore")).write_text("".join(rules))
        for j in range(20):
            (level / f"f{j}.txt").write_text("a\n" * 10)
        level = level / "sub"
    with open(folder / "repetitive.txt", "w") as f:
        f.writelines(f"value {rnd.randrange(150)}\n" for _ in range(14000))
    with open(folder / "repetitive_big.txt", "w") as f:
        f.writelines(f"value {rnd.randrange(150)}\n" for _ in range(400000))


# Each case: Python run in the child with `root` (a Root on the folder),
# `cap` (max_output_chars) and the fs modules imported. Its value is printed.
CASES: dict[str, str] = {
    "glob_backtracking": (
        "search_files(root, FilesOptions(pattern='*?' * 11 + 'Z', offset=0, limit=100, "
        "cap=cap), NoControl()).returned"
    ),
    "glob_wildcard_flood": (
        "search_files(root, FilesOptions(pattern=('*a' * 500)[:990] + '?/**/' + '*?' * 10, "
        "offset=0, limit=100, cap=cap), NoControl()).returned"
    ),
    "file_glob_backtracking": (
        "search_text(root, TextOptions(query='a', file_glob='*?' * 11 + 'Z', "
        "case_sensitive=True, offset=0, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20), NoControl()).returned"
    ),
    "read_empty_lines": (
        "read_text_file(root, 'empty_lines.txt', start=1, end=10**6, tail=None, cap=cap)"
        ".end_line"
    ),
    "read_empty_lines_late_window": (
        "read_text_file(root, 'empty_lines.txt', start=8_000_000, end=10**6 + 8_000_000, "
        "tail=None, cap=cap).end_line"
    ),
    "tail_empty_lines": (
        "read_text_file(root, 'empty_lines.txt', start=1, end=1, tail=10**6, cap=cap).start_line"
    ),
    "read_utf16_empty_lines": (
        "read_text_file(root, 'utf16_lines.txt', start=4_000_000, end=5_000_000, tail=None, "
        "cap=cap).end_line"
    ),
    "tail_utf16_empty_lines": (
        "read_text_file(root, 'utf16_lines.txt', start=1, end=1, tail=10**6, cap=cap).start_line"
    ),
    "read_crlf_lines": (
        "read_text_file(root, 'crlf_lines.txt', start=1, end=10**6, tail=None, cap=cap).end_line"
    ),
    "read_cr_only": (
        "read_text_file(root, 'cr_only.txt', start=1, end=10**6, tail=None, cap=cap).end_line"
    ),
    "read_one_huge_line": (
        "read_text_file(root, 'one_line.txt', start=1, end=10**6, tail=None, cap=cap).end_line"
    ),
    "tail_one_huge_line": (
        "read_text_file(root, 'one_line.txt', start=1, end=1, tail=10**6, cap=cap).start_line"
    ),
    "read_mixed_breaks": (
        "read_text_file(root, 'mixed.txt', start=1, end=10**6, tail=None, cap=cap).end_line"
    ),
    "read_multiple_empty_lines": (
        "read_multiple_files(root, ['empty_lines.txt'] * 50, cap=cap, control=NoControl())"
        ".returned"
    ),
    "search_every_line_matches": (
        "search_text(root, TextOptions(query='a', file_glob='matches.txt', "
        "case_sensitive=True, offset=10**9, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20), NoControl()).truncated"
    ),
    "search_every_line_caseless": (
        "search_text(root, TextOptions(query='A', file_glob='matches.txt', "
        "case_sensitive=False, offset=10**9, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20), NoControl()).truncated"
    ),
    "search_overlapping_caseless_count": (  # 100 overlapping matches on every line
        "search_text(root, TextOptions(query='A' * 100, file_glob='overlapping.txt', "
        "case_sensitive=False, offset=0, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20, output_mode='count'), NoControl()).returned"
    ),
    "search_under_hostile_ignore_files": (
        "search_text(root, TextOptions(query='zzz', path='ignored', file_glob='*', "
        "case_sensitive=True, offset=0, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20), NoControl()).examined_files"
    ),
    "search_regex_past_its_dfa": (  # stopped by the call's CPU time (3 s), said in its note
        "search_text(root, TextOptions(query='[ab]*a[ab]{20}$', path='ab', file_glob='*', "
        "case_sensitive=True, offset=0, limit=50, cap=cap, file_limit=BUDGET, "
        "budget=64 << 20, regex=True, output_mode='count'), NoControl()).truncated"
    ),
    "edit_repetitive_14k_lines": "edit('repetitive.txt', 0.5)",
    "edit_repetitive_400k_lines": "edit('repetitive_big.txt', 0.5)",
    "edit_whole_file_replaced": "edit('repetitive_big.txt', 1.0)",
}

CHILD = """
import json, sys, time
sys.path.insert(0, {repo!r})
from app.fs.change.edit import TextEdit, edit_file
from app.fs.control import NoControl
from app.fs.reading.read import read_multiple_files, read_text_file
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.security import DenyRules, Root

BUDGET = {budget}
cap = 65536
root = Root(name="bench", role="workspace", permissions=["read", "write"],
                  real={folder!r}, rules=DenyRules(), max_read_bytes=BUDGET)


def edits_for(name, share):
    text = open({folder!r} + "/" + name).read()
    lines = text.splitlines(keepends=True)
    if share >= 1.0:
        edits = [TextEdit(old_text=text, new_text=text.replace("value 1", "value x"))]
    else:  # the first and last lines and every 50th in between: regions everywhere
        edits = [TextEdit(old_text="".join(lines[k:k + 3]), new_text="changed\\n")
                 for k in range(0, len(lines) - 3, max(3, len(lines) // 150))]
        edits = [e for e in edits if text.count(e.old_text) == 1][:150]
    return edits


def edit(name, share):  # the edits are made before the measure; the call is measured
    return "edit_file(root, name, EDITS, max_output_chars=cap, dry_run=True).diff_truncated"


EDITS = None
expr = {expr!r}
if expr.startswith("edit("):
    name, share = eval(expr[5:-1])
    EDITS = edits_for(name, share)
    expr = edit(name, share)


read_text_file(root, "small.txt", start=1, end=10, tail=None, cap=cap)  # warm up
search_text(root, TextOptions(query="one", file_glob="small.txt", case_sensitive=True, offset=0,
                              limit=5, cap=cap, file_limit=BUDGET, budget=1 << 20), NoControl())
measure(lambda: eval(expr))
"""


def run_case(name: str, folder: str) -> Figures:
    code = CHILD.format(repo=REPO, folder=folder, budget=BUDGET, expr=CASES[name])
    return figures(name, run_child(code, timeout=300))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args(argv)
    names = args.case or list(CASES)
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-") as tmp:
        folder = os.path.realpath(tmp)
        build(Path(folder))
        print_medians(names, lambda name: run_case(name, folder), args.runs,
                      "seconds of CPU, tens of MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
