"""Hostile repositories against the history tools: CPU time and memory per case.

    .venv/bin/python benchmarks/worst_cases_git.py [--runs N] [--case NAME ...]

The sibling of `benchmarks/worst_cases.py`, with the same method: each case
runs in a fresh child process, through the same `app.fs.history.ops`
functions the tools call, on a read-only root (`role = reference`,
`max_read_bytes` = 1 MiB, `max_output_chars` = 65536) whose repository was
written byte by byte by `tests/fs/history/hostile_cases.py` (lying headers, zlib
streams that inflate a thousandfold, delta chains through huge, self-referring
or endless bases, 40 MiB messages, a tree of 300,000 entries, one 20,000
levels deep, missing and corrupt objects, crafted ids). The child warms up on
a plain repository, resets its peak resident size (Linux
`/proc/self/clear_refs`), runs the case, and reports its CPU seconds and its
peak resident size (`VmHWM`) minus its resident size before the case. A
`follow` case is a client following `next_cursor` (or `next_offset`, or "call
again") to the end, at most 200 calls or 60 s of CPU. Prints the median of `--runs` children
per case and what the call answered. The bound every case must keep: seconds
of CPU, under 64 MiB. `tests/fs/history/test_worst_cases_git.py` runs each case once
and asserts a generous version of it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._child import figures, print_medians, run_child

REPO = str(Path(__file__).resolve().parent.parent)

# Each case: (shape in tests/fs/history/hostile_cases.py, Python run in the child). The child
# has `log`, `show`, `diff` (the ops with this root and defaults), `follow` (a client
# paging to the end) and `P` (the shape's Probe: commit, path, base).
CASES: dict[str, tuple[str, str]] = {
    "loose_bomb_show_path": ("loose_bomb", "show(path=P.path)"),
    "loose_bomb_diff": ("loose_bomb", "diff(base=P.base, target='HEAD')"),
    "loose_bomb_by_prefix": ("loose_bomb_by_prefix", "show(commit=P.commit)"),
    "pack_bomb_show_path": ("pack_bomb", "show(path=P.path)"),
    "delta_huge_middle_show_path": ("delta_huge_middle", "show(path=P.path)"),
    "delta_huge_middle_diff": ("delta_huge_middle", "diff(base=P.base, target='HEAD')"),
    "delta_work_show_path": ("delta_work", "show(path=P.path)"),
    "deep_delta_chain_show_path": ("deep_delta_chain", "show(path=P.path)"),
    "delta_to_itself_diff": ("delta_to_itself", "diff(base=P.base, target='HEAD')"),
    "delta_cycle_show_path": ("delta_cycle", "show(path=P.path)"),
    "huge_messages_show": ("huge_messages", "show()"),
    "huge_messages_log_followed": ("huge_messages", "follow(log)"),
    "huge_tag_message_log": ("huge_tag_message", "log(commit=P.commit)"),
    "wide_tree_show": ("wide_tree", "show()"),
    "wide_tree_show_path": ("wide_tree", "show(path=P.path)"),
    "wide_tree_diff": ("wide_tree", "diff(base=P.base, target='HEAD')"),
    "wide_tree_log_path": ("wide_tree", "log(path=P.path)"),
    "deep_tree_show_path_followed": ("deep_tree", "follow(show, path=P.path)"),
    "deep_tree_show": ("deep_tree", "show()"),
    "missing_blob_show_path": ("missing_blob", "show(path=P.path)"),
    "missing_blob_diff": ("missing_blob", "diff(base=P.base, target='HEAD')"),
    "missing_tree_and_parent_log": ("missing_tree_and_parent", "log(path=P.path)"),
    "self_parent_log_followed": ("self_parent", "follow(log)"),
    "loose_under_wrong_name_log": ("loose_under_wrong_name", "log()"),
    "tag_to_itself_show": ("tag_to_itself", "show(commit=P.commit)"),
    "corrupt_objects_diff": ("corrupt_objects", "diff(base=P.base, target='HEAD')"),
    "unsorted_tree_show": ("unsorted_tree", "show()"),
    "tree_without_nul_show": ("tree_without_nul", "show()"),
    "tree_without_nul_diff": ("tree_without_nul", "diff(base=P.base, target='HEAD')"),
    "many_parents_log": ("many_parents", "log()"),
}

CHILD = """
import inspect, json, sys, time
sys.path.insert(0, {repo!r})
from app.errors import LoomError
from app.fs.history import ops
from app.fs.control import NoControl
from app.security import DenyRules, Root
from tests.fs.history.hostile import Probe

P = Probe(**json.loads({probe!r}))
cap = 65536


def root_at(folder):
    return Root(name="bench", role="reference", permissions=["read"], real=folder,
                      rules=DenyRules(), max_read_bytes=1 << 20)


root = root_at({plain!r})


def log(**kw):
    args = dict(path="", commit="HEAD", offset=0, limit=20, cursor=None, cap=cap,
                control=NoControl())
    return ops.git_log(root, **{{**args, **kw}})


def show(**kw):
    args = dict(commit=P.commit, path=None, start_line=1, end_line=300, offset=0, cap=cap,
                control=NoControl())
    return ops.git_show(root, **{{**args, **kw}})


def diff(**kw):
    args = dict(base="HEAD", target=None, path="", offset=0, cap=cap, read_budget=64 << 20,
                control=NoControl())
    return ops.git_diff(root, **{{**args, **kw}})


def brief(got):
    keys = ("returned", "has_more", "truncated", "note")
    return {{k: str(getattr(got, k))[:70] for k in keys if hasattr(got, k)}}


def follow(tool, **kw):
    takes_cursor = "cursor" in inspect.signature(getattr(ops, "git_" + tool.__name__)).parameters
    calls = shown = 0
    start = time.process_time()
    while calls < 200 and time.process_time() - start < 60:
        calls += 1
        try:
            got = tool(**kw)
        except LoomError as exc:
            if "call again" in exc.message:
                continue
            return f"{{calls}} calls, {{shown}} shown, ended: {{exc.message[:80]}}"
        shown += getattr(got, "returned", 1)
        if not getattr(got, "has_more", False):
            return f"{{calls}} calls, {{shown}} shown, done"
        if takes_cursor and getattr(got, "next_cursor", None):
            kw["cursor"] = got.next_cursor
        else:
            kw["offset"] = got.next_offset
    return f"gave up after {{calls}} calls, {{shown}} shown"


try:  # warm up on the plain repository
    log(limit=5), show(commit="HEAD"), show(commit="HEAD", path="f.txt"), diff(target="HEAD")
except LoomError:
    pass
root = root_at({folder!r})


def attempt():
    try:
        value = eval({expr!r})
        return value if isinstance(value, str) else brief(value)
    except LoomError as exc:
        return "error: " + exc.message[:100]
    except Exception as exc:  # what the server answers "internal error" for
        return "internal error: " + type(exc).__name__


measure(attempt, show=str)
"""


def build(folder: Path, shapes: set[str]) -> dict[str, dict[str, str | None]]:
    """Each shape's repository in `folder/<shape>`, a plain one in `folder/plain`; the probes."""
    from tests.fs.history.hostile_cases import CASES as SHAPES
    from tests.fs.history.hostile_cases import _start

    _start(folder / "plain")
    probes = {}
    for shape in sorted(shapes):
        probes[shape] = vars(SHAPES[shape](folder / shape))
    return probes


def run_case(name: str, folder: str, probes: dict[str, dict[str, str | None]]
             ) -> dict[str, float | str]:
    shape, expr = CASES[name]
    code = CHILD.format(repo=REPO, folder=os.path.join(folder, shape),
                        plain=os.path.join(folder, "plain"), expr=expr,
                        probe=json.dumps(probes[shape]))
    return figures(name, run_child(code, timeout=600))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    args = parser.parse_args(argv)
    names = args.case or list(CASES)
    with tempfile.TemporaryDirectory(prefix="loomfs-worst-git-") as tmp:
        folder = os.path.realpath(tmp)
        probes = build(Path(folder), {CASES[n][0] for n in names})
        print_medians(names, lambda name: run_case(name, folder, probes), args.runs,
                      "seconds of CPU, under 64 MiB", last="answer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
