"""History tools on a long synthetic history, and the git library comparison.

Builds a 3,000-commit history with `git fast-import` (3 files changed per
commit among 200, `docs/rare.md` touched every 500 commits, a `.env` changed
every 300 commits), packs it with `git gc`, then measures in-process (median
of several runs, milliseconds):

- the tools' work (`app.fs.history.ops`, through a Root): the first page
  of `git_log`, a path-limited `git_log` of the rare file (walks the whole
  history), `git_show` of HEAD, `git_diff HEAD~50 HEAD`, and `git_show` of a
  file, first with the denied-content index cold, then warm;
- with `--libraries`: the same questions asked of dulwich and of pygit2
  directly (pygit2 is not a dependency: `pip install pygit2` to run it).

    .venv/bin/python benchmarks/history.py [--commits 3000] [--runs 7] [--libraries]
"""

from __future__ import annotations

import argparse
import difflib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RARE = "docs/rare.md"
Kind = TypeVar("Kind")


def kind(obj: object, cls: type[Kind]) -> Kind:
    """`obj` as the kind the question expects: both libraries type an object they look up
    by id as any kind (a commit's parents are commits, a tree's folder entries trees)."""
    assert isinstance(obj, cls), (type(obj).__name__, cls.__name__)
    return obj


def build(path: Path, n: int, files: int = 200) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(path.parent)}
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    out: list[bytes] = []
    t = 1_700_000_000
    for i in range(1, n + 1):
        msg = f"commit {i}\n".encode()
        out += [b"commit refs/heads/main\n", f"mark :{i}\n".encode(),
                f"author A <a@x> {t + i * 60} +0000\ncommitter A <a@x> {t + i * 60} +0000\n"
                .encode(), b"data %d\n" % len(msg) + msg]
        if i > 1:
            out.append(f"from :{i - 1}\n".encode())
        changed = [(f"src/pkg{f % 10}/mod{f}.py", f"file {f} version {i}\n" * 20)
                   for f in ((i * 7 + k * 13) % files for k in range(3))]
        if i % 500 == 0 or i == 1:
            changed.append((RARE, f"rare {i}\n"))
        if i % 300 == 0 or i == 1:
            changed.append((".env", f"SECRET={i}\n"))
        for name, body in changed:
            data = body.encode()
            out += [f"M 100644 inline {name}\n".encode(), b"data %d\n" % len(data) + data + b"\n"]
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(out),
                   check=True, env=env)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "main"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "gc", "-q"], check=True, env=env)


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, result


def tools(repo: Path, runs: int) -> dict[str, float]:
    from app.fs.control import NoControl
    from app.fs.history import denied, ops
    from app.security.deny import DenyRules
    from app.security.resolve import Root

    root = Root(name="bench", role="reference", permissions=("read",),
                      real=str(repo), rules=DenyRules(), max_read_bytes=1 << 20)
    c = NoControl()
    out: dict[str, float] = {}
    out["git_log first page (20)"], _ = median_ms(lambda: ops.git_log(
        root, path="", commit="HEAD", offset=0, limit=20, cursor=None, cap=65536, control=c), runs)
    ms, res = median_ms(lambda: ops.git_log(
        root, path=RARE, commit="HEAD", offset=0, limit=20, cursor=None, cap=65536, control=c),
        runs)
    out[f"git_log -- {RARE} (walks {res.walked}, finds {res.returned})"] = ms
    out["git_show HEAD (files)"], _ = median_ms(lambda: ops.git_show(
        root, commit="HEAD", path=None, start_line=1, end_line=300, offset=0, cap=65536,
        control=c), runs)

    def show_file() -> object:
        return ops.git_show(root, commit="HEAD~10", path=RARE, start_line=1, end_line=300,
                            offset=0, cap=65536, control=c)

    def cold() -> object:
        denied._cache.clear()
        return show_file()

    out["git_show HEAD~10 path (denied index cold)"], _ = median_ms(cold, max(3, runs // 2))
    out["git_show HEAD~10 path (denied index warm)"], _ = median_ms(show_file, runs)
    out["git_diff HEAD~50 HEAD (warm)"], _ = median_ms(lambda: ops.git_diff(
        root, base="HEAD~50", target="HEAD", path="", offset=0, cap=65536,
        read_budget=1 << 26, control=c), runs)
    return out


def libraries(repo: Path, runs: int) -> dict[str, float]:
    """The same four questions asked of dulwich and pygit2 directly (by path, as they
    are usually used; the server itself opens dulwich's files through handles)."""
    import pygit2
    from dulwich.diff_tree import tree_changes
    from dulwich.objects import Blob, Commit, ObjectID, Tree
    from dulwich.refs import HEADREF
    from dulwich.repo import Repo

    parts = RARE.encode().split(b"/")

    def d_log() -> int:
        r = Repo(str(repo))
        c: Commit | None = kind(r[r.refs[HEADREF]], Commit)
        n = 0
        while c is not None and n < 20:
            n += 1
            c = kind(r[c.parents[0]], Commit) if c.parents else None
        r.close()
        return n

    def d_path() -> int:
        r = Repo(str(repo))
        s = r.object_store

        def chain(tree: ObjectID) -> ObjectID | None:
            cur = tree
            for name in parts:
                try:
                    _, cur = kind(s[cur], Tree)[name]
                except KeyError:
                    return None
            return cur

        head = kind(r[r.refs[HEADREF]], Commit)
        c: Commit | None = head
        found = 0
        mine = chain(head.tree)
        while c is not None:
            p = kind(s[c.parents[0]], Commit) if c.parents else None
            theirs = chain(p.tree) if p is not None else None
            found += mine != theirs
            c, mine = p, theirs
        r.close()
        return found

    def d_show() -> int:
        r = Repo(str(repo))
        c = kind(r[r.refs[HEADREF]], Commit)
        n = len(list(tree_changes(r.object_store, kind(r[c.parents[0]], Commit).tree, c.tree)))
        r.close()
        return n

    def d_diff() -> int:
        r = Repo(str(repo))
        s = r.object_store
        head = base = kind(r[r.refs[HEADREF]], Commit)
        for _ in range(50):
            base = kind(s[base.parents[0]], Commit)
        n = 0
        for ch in tree_changes(s, base.tree, head.tree):  # old None: added; new None: removed
            a = kind(s[ch.old.sha], Blob).data.decode().splitlines() if ch.old else []
            b = kind(s[ch.new.sha], Blob).data.decode().splitlines() if ch.new else []
            n += sum(1 for _ in difflib.unified_diff(a, b, lineterm=""))
        r.close()
        return n

    def p_log() -> int:
        r = pygit2.Repository(str(repo))
        c: pygit2.Commit | None = kind(r[r.head.target], pygit2.Commit)
        n = 0
        while c is not None and n < 20:
            n += 1
            c = c.parents[0] if c.parents else None
        return n

    def p_path() -> int:
        r = pygit2.Repository(str(repo))

        def entry(tree: pygit2.Tree) -> pygit2.Oid | None:
            try:
                return tree[RARE].id
            except KeyError:
                return None

        c: pygit2.Commit | None = kind(r[r.head.target], pygit2.Commit)
        found = 0
        while c is not None:
            p = c.parents[0] if c.parents else None
            found += entry(c.tree) != (entry(p.tree) if p is not None else None)
            c = p
        return found

    def p_show() -> int:
        r = pygit2.Repository(str(repo))
        c = kind(r[r.head.target], pygit2.Commit)
        return len(list(r.diff(c.parents[0], c).deltas))

    def p_diff() -> int:
        r = pygit2.Repository(str(repo))
        d = r.diff(kind(r.revparse_single("HEAD~50"), pygit2.Commit),
                   kind(r[r.head.target], pygit2.Commit))
        # pygit2 types a patch and its text as optional; here every change is to a text file
        return sum(len(p.text.splitlines()) for p in d if p is not None and p.text is not None)

    out: dict[str, float] = {}
    for label, d, p in (("log first 20", d_log, p_log), (f"path-limited log {RARE}", d_path,
                        p_path), ("show HEAD (changed files)", d_show, p_show),
                        ("diff HEAD~50 HEAD (patch text)", d_diff, p_diff)):
        dm, dr = median_ms(d, runs)
        pm, pr = median_ms(p, runs)
        if not label.startswith("diff"):  # the same answer from both (diff texts differ)
            assert dr == pr, (label, dr, pr)
        out[f"{label}: dulwich"] = dm
        out[f"{label}: pygit2"] = pm
        out[f"{label}: dulwich/pygit2"] = dm / pm if pm else float("nan")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--libraries", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        t0 = time.perf_counter()
        build(repo, args.commits)
        print(f"history: {args.commits} commits built in {time.perf_counter() - t0:.1f} s")
        for name, ms in tools(repo, args.runs).items():
            print(f"  {name:55s} {ms:9.1f} ms")
        if args.libraries:
            for name, v in libraries(repo, args.runs).items():
                unit = "x" if name.endswith("/pygit2") else "ms"
                print(f"  {name:55s} {v:9.2f} {unit}")


if __name__ == "__main__":
    main()
