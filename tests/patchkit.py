"""Real patches for the patch tests: the upstream change between two released pluggy versions.

`scripts/fetch_patch_corpus.sh` (run by `./run_tests.sh`) downloads the two sdists,
pinned and hash-checked, into `.ci-cache/patch-corpus` (or `$LOOMFS_PATCH_CORPUS`);
`trees(into)` runs it when they are missing (failing the test with its reason when
they cannot be had) and unpacks both into `into/old` and `into/new`. From two trees:

- `diff_patch`: `diff -ruN a b` (GNU diff, its epoch-dated header for an added or
  removed file), to apply with `patch -p1`;
- `git_patch`: `git diff -M` between two commits of a temporary repository (renames,
  `/dev/null` and mode lines), to apply with `git apply`;
- `v4a_patch`: the same change in OpenAI's V4A format (the grammar of openai/codex's
  `codex-rs/apply-patch/apply_patch_tool_instructions.md`), converted here:
  `*** Add File:` with `+` lines, `*** Delete File:`, `*** Update File:` (with
  `*** Move to:` for a file added under a new name whose lines are at least half the
  old one's, much as git's `-M` pairs them), `@@` hunks of ` `/`-`/`+` lines with 3 lines
  of context, grown until the hunk's old lines occur once in the range it is searched
  in (from the end of the hunk before it, or after its scope line), a scope line
  (`@@ <line>`) when a `def`/`class` line between the hunk before and this one occurs
  once in that range, and `*** End of File` after a hunk that reaches the file's end.
  V4A carries text lines only: a changed file that is not UTF-8, an added file
  without a final newline, or an update that adds or drops the final newline (an
  empty file has none) raises `Unconvertible`; an updated file keeps its final newline
  as it had it, an empty one gets one.

`apply_unified` and `apply_v4a` apply a patch onto a folder (`apply_v4a` is this
module's own exact-match reader of what `v4a_patch` writes, the oracle that the
conversion holds the change); `files` and `executables` say what a tree holds, to
compare byte for byte. `spoil` makes one hunk of a patch match nowhere.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FETCH = REPO / "scripts" / "fetch_patch_corpus.sh"
OLD, NEW = "pluggy-0.13.1.tar.gz", "pluggy-1.0.0.tar.gz"
CONTEXT = 3
RENAME_SIMILARITY = 0.5  # git's -M default: 50%
_SCOPE = re.compile(r"^\s*(?:async\s+def|def|class)\s")
_ENV = {"LC_ALL": "C", "TZ": "UTC", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@example.invalid",
        "GIT_COMMITTER_NAME": "p", "GIT_COMMITTER_EMAIL": "p@example.invalid",
        "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}


class Unconvertible(ValueError):
    """A change V4A cannot carry."""


def corpus_dir() -> Path:
    return Path(os.environ.get("LOOMFS_PATCH_CORPUS") or REPO / ".ci-cache" / "patch-corpus")


def sdists() -> tuple[Path, Path]:
    """The two sdists, downloaded (pinned, hash-checked) when missing."""
    old, new = corpus_dir() / OLD, corpus_dir() / NEW
    if not (old.is_file() and new.is_file()):
        done = subprocess.run(["bash", str(FETCH)], capture_output=True, text=True,
                              timeout=600, check=False, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            pytest.fail(f"scripts/fetch_patch_corpus.sh failed:\n{done.stderr[-4000:]}",
                        pytrace=False)
    return old, new


def unpack(sdist: Path, into: Path) -> Path:
    """The sdist's one top-level folder's content, into `into` (tarfile's data filter)."""
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        assert len(tops) == 1, tops
        top = tops.pop()
        tar.extractall(into.parent / (into.name + ".x"), filter="data")
    (into.parent / (into.name + ".x") / top).rename(into)
    (into.parent / (into.name + ".x")).rmdir()
    return into


def trees(into: Path) -> tuple[Path, Path]:
    """The old and the new release, unpacked into `into/old` and `into/new`."""
    old, new = sdists()
    into.mkdir(parents=True, exist_ok=True)
    return unpack(old, into / "old"), unpack(new, into / "new")


def files(top: Path) -> dict[str, bytes]:
    """Every regular file under `top` by its relative path; a link fails."""
    out = {}
    for p in sorted(top.rglob("*")):
        assert not p.is_symlink(), p
        if p.is_file():
            out[p.relative_to(top).as_posix()] = p.read_bytes()
    return out


def executables(top: Path) -> set[str]:
    return {rel for rel in files(top) if os.access(top / rel, os.X_OK)}


def _run(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> bytes:
    # No repository above `cwd` is ever seen: git apply outside one works as patch does.
    env = {**os.environ, **_ENV, "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    done = subprocess.run(argv, cwd=cwd, capture_output=True, env=env,
                          timeout=120, check=False, stdin=subprocess.DEVNULL)
    if done.returncode not in ok:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace')[-2000:]}")
    return done.stdout


# -- the unified patches ----------------------------------------------------------------


def diff_patch(old: Path, new: Path, work: Path) -> bytes:
    """`diff -ruN a b` of the two trees (copied to `work/a` and `work/b`)."""
    work.mkdir(parents=True)
    shutil.copytree(old, work / "a", symlinks=True)
    shutil.copytree(new, work / "b", symlinks=True)
    out = _run(["diff", "-ruN", "a", "b"], work, ok=(0, 1))
    if b"\nBinary files " in b"\n" + out:
        raise Unconvertible("diff found a changed binary file")
    return out


def git_patch(old: Path, new: Path, work: Path) -> bytes:
    """`git diff -M` from a commit of `old` to one of `new`, in a repository in `work`."""
    work.mkdir(parents=True)
    git = ["git", "-c", "core.autocrlf=false", "-c", "core.filemode=true"]
    _run([*git, "init", "-q", "."], work)
    for i, tree in enumerate((old, new)):
        for entry in work.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        shutil.copytree(tree, work, symlinks=True, dirs_exist_ok=True)
        _run([*git, "add", "-A", "-f", "."], work)
        _run([*git, "commit", "-q", "--no-verify", "-m", f"v{i}"], work)
    return _run([*git, "diff", "-M", "--binary", "--no-color", "--no-ext-diff", "HEAD~1",
                 "HEAD"], work)


def apply_unified(patch: bytes, top: Path, tool: str) -> None:
    """`patch -p1` (tool "patch") or `git apply` (tool "git") of `patch` onto `top`."""
    path = top.parent / f"{top.name}.patch"
    path.write_bytes(patch)
    if tool == "patch":
        _run(["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", "-s",
              "-i", str(path)], top)
    else:
        _run(["git", "apply", "-p1", "--whitespace=nowarn", str(path)], top)
    path.unlink()


# -- V4A --------------------------------------------------------------------------------


def _text(rel: str, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unconvertible(f"{rel}: not UTF-8; V4A carries text only") from None
    if "\x00" in text:
        raise Unconvertible(f"{rel}: a NUL byte; V4A carries text only")
    return text


def _lines(text: str) -> tuple[list[str], bool]:
    """The text's lines and whether it ends in a newline."""
    if not text:
        return [], False
    lines = text.split("\n")
    if lines[-1] == "":
        return lines[:-1], True
    return lines, False


def _occurs(lines: list[str], block: list[str], start: int, at_end: bool) -> int:
    n = len(block)
    ends = [len(lines) - n] if at_end else range(start, len(lines) - n + 1)
    return sum(1 for i in ends if i >= start and lines[i : i + n] == block)


def _hunks(a: list[str], b: list[str]) -> list[str]:
    """The `@@` hunks that turn lines `a` into lines `b`, each placeable in one way."""
    if not a:
        return ["@@", *("+" + x for x in b), "*** End of File"]
    groups = list(difflib.SequenceMatcher(None, a, b, autojunk=False)
                  .get_grouped_opcodes(CONTEXT))
    out: list[str] = []
    cursor = 0  # where the next hunk is searched from, in `a`
    for k, group in enumerate(groups):
        lo, hi = group[0][1], group[-1][2]
        limit = groups[k + 1][0][1] if k + 1 < len(groups) else len(a)
        scope = None
        for j in range(lo - 1, cursor - 1, -1):
            if _SCOPE.match(a[j]) and a[cursor:].count(a[j]) == 1:
                scope = j
                break
        start = cursor if scope is None else scope + 1
        grown_lo, grown_hi = lo, hi
        while _occurs(a, a[grown_lo:grown_hi], start, grown_hi == len(a)) != 1:
            if grown_lo > start:
                grown_lo -= 1
            elif grown_hi < limit:
                grown_hi += 1
            else:
                raise Unconvertible(f"a hunk at line {lo + 1} occurs twice however it grows")
        out.append("@@" if scope is None else f"@@ {a[scope]}")
        out += [" " + x for x in a[grown_lo:lo]]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + x for x in a[i1:i2]]
                continue
            out += ["-" + x for x in a[i1:i2]]
            out += ["+" + x for x in b[j1:j2]]
        out += [" " + x for x in a[hi:grown_hi]]
        if grown_hi == len(a):
            out.append("*** End of File")
        cursor = grown_hi
    return out


def _renames(a: dict[str, str], b: dict[str, str], gone: list[str], came: list[str]
             ) -> dict[str, str]:
    """Deleted path -> added path, for pairs whose lines are at least RENAME_SIMILARITY
    alike (best first)."""
    scored = sorted(
        ((difflib.SequenceMatcher(None, a[d].splitlines(), b[c].splitlines(),
                                  autojunk=False).ratio(), d, c)
         for d in gone for c in came),
        key=lambda t: (-t[0], t[1], t[2]))
    pairs: dict[str, str] = {}
    for ratio, d, c in scored:
        if ratio >= RENAME_SIMILARITY and d not in pairs and c not in pairs.values():
            pairs[d] = c
    return pairs


def v4a_patch(old: Path, new: Path) -> str:
    """The change from tree `old` to tree `new` as one V4A patch."""
    before, after = files(old), files(new)
    gone = sorted(before.keys() - after.keys())
    came = sorted(after.keys() - before.keys())
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    texts_a = {p: _text(p, before[p]) for p in [*gone, *changed]}
    texts_b = {p: _text(p, after[p]) for p in [*came, *changed]}
    moves = _renames(texts_a, texts_b, gone, came)
    out = ["*** Begin Patch"]
    for path in changed:
        out += _update(path, None, texts_a[path], texts_b[path])
    for src, dst in sorted(moves.items()):
        out += _update(src, dst, texts_a[src], texts_b[dst])
    for path in came:
        if path in moves.values():
            continue
        lines, final = _lines(texts_b[path])
        if lines and not final:
            raise Unconvertible(f"{path}: added without a final newline; V4A cannot say so")
        out += [f"*** Add File: {path}", *("+" + x for x in lines)]
    out += [f"*** Delete File: {path}" for path in gone if path not in moves]
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def _update(path: str, dst: str | None, old: str, new: str) -> list[str]:
    a, a_final = _lines(old)
    b, b_final = _lines(new)
    if (a and b and a_final != b_final) or (not a and b and not b_final):
        raise Unconvertible(f"{path}: the final newline is added or dropped; V4A cannot say so")
    head = [f"*** Update File: {path}"] + ([f"*** Move to: {dst}"] if dst else [])
    return head + (_hunks(a, b) if a != b else [])


@dataclass
class _Op:
    kind: str  # "add", "delete", "update"
    path: str
    move_to: str | None = None
    lines: list[str] = field(default_factory=list)


def _parse(patch: str) -> list[_Op]:
    rows = patch.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    if not rows or rows[0] != "*** Begin Patch" or rows[-1] != "*** End Patch":
        raise ValueError("not a V4A patch: no *** Begin Patch / *** End Patch")
    ops: list[_Op] = []
    for row in rows[1:-1]:
        for kind, head in (("add", "*** Add File: "), ("delete", "*** Delete File: "),
                           ("update", "*** Update File: ")):
            if row.startswith(head):
                ops.append(_Op(kind, row[len(head):]))
                break
        else:
            if not ops:
                raise ValueError(f"a line before any file: {row!r}")
            if row.startswith("*** Move to: ") and ops[-1].kind == "update":
                ops[-1].move_to = row[len("*** Move to: "):]
            else:
                ops[-1].lines.append(row)
    return ops


def _apply_hunks(text: str, rows: list[str], rel: str) -> str:
    a, final = _lines(text)
    out: list[str] = []
    cursor = 0
    hunks: list[tuple[str | None, list[str], bool]] = []
    for row in rows:
        if row.startswith("@@"):
            hunks.append((row[3:] if row.startswith("@@ ") else None, [], False))
        elif row == "*** End of File":
            scope, body, _ = hunks[-1]
            hunks[-1] = (scope, body, True)
        else:
            hunks[-1][1].append(row if row else " ")
    for scope, body, at_end in hunks:
        start = cursor
        if scope is not None:
            found = [j for j in range(cursor, len(a)) if a[j] == scope]
            if len(found) != 1:
                raise ValueError(f"{rel}: scope {scope!r} found {len(found)} times")
            start = found[0] + 1
        old = [r[1:] for r in body if r[0] in " -"]
        new = [r[1:] for r in body if r[0] in " +"]
        n = len(old)
        places = [i for i in ([len(a) - n] if at_end else range(start, len(a) - n + 1))
                  if i >= start and a[i : i + n] == old]
        if len(places) != 1:
            raise ValueError(f"{rel}: a hunk found {len(places)} times")
        out += a[cursor : places[0]] + new
        cursor = places[0] + n
    out += a[cursor:]
    return "".join(x + "\n" for x in out) if final or not a else "\n".join(out)


def apply_v4a(patch: str, top: Path) -> None:
    """`patch` (as `v4a_patch` writes it) onto `top`, each hunk matched exactly, once; a
    folder a deletion or a move empties is removed, as git does."""
    left: set[Path] = set()
    for op in _parse(patch):
        target = top / op.path
        if op.kind == "add":
            if target.exists():
                raise ValueError(f"{op.path}: added but there")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes("".join(r[1:] + "\n" for r in op.lines).encode())
        elif op.kind == "delete":
            target.unlink()
            left.add(target.parent)
        else:
            text = _apply_hunks(target.read_bytes().decode(), op.lines, op.path)
            dest = top / (op.move_to or op.path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(text.encode())
            if op.move_to:
                shutil.copymode(target, dest)
                target.unlink()
                left.add(target.parent)
    for folder in sorted(left, key=lambda p: len(p.parts), reverse=True):
        while folder != top and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def spoil(patch: bytes, fmt: str) -> bytes:
    """`patch` with a removed line of its last hunk that has one changed (else its first
    context line), so that the hunk matches nowhere, with fuzz or without (fmt "unified" or
    "v4a")."""
    rows = patch.split(b"\n")
    starts = [i for i, r in enumerate(rows) if r.startswith(b"@@")]
    assert starts, f"a {fmt} patch without hunks"
    for i in range(len(rows) - 1, starts[0], -1):
        if rows[i].startswith(b"-") and not rows[i].startswith(b"--- "):
            rows[i] = b"-no such line in any file: " + rows[i][1:]
            return b"\n".join(rows)
    for i in range(starts[-1] + 1, len(rows)):
        if rows[i].startswith(b" "):
            rows[i] = b" no such line in any file: " + rows[i][1:]
            return b"\n".join(rows)
    raise AssertionError(f"the last hunk of the {fmt} patch has no context or removed line")
