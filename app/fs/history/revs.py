"""Naming commits: full or abbreviated ids, branch and tag names, `HEAD~N`, `X^N`.

The same order as git: a 40-digit id is an id; otherwise a ref name is tried
(`X`, `refs/X`, `refs/tags/X`, `refs/heads/X`, `refs/remotes/X`,
`refs/remotes/X/HEAD`), then an abbreviated id (4 or more hex digits,
unique: resolved from the names of loose objects and the pack indexes alone,
nothing inflated). Annotated tags are peeled to their commit; an object's kind
is read from its header first, so a huge blob or tree named here is refused
unread. Suffixes `~N`, `^N`, `^{}`, `^{commit}` follow parents. Nothing here
reads outside `GitDir`.
"""

from __future__ import annotations

import re

from app.errors import BadArgument, NotFound
from app.fs.history.gitdir import GitDir, valid_ref_name
from app.fs.history.objects import CommitInfo, NotACommit, kind_of, read_commit, tag_target
from app.fs.history.raw import COMMIT, NAMES, TAG
from app.fs.history.store import HEX

MAX_REV = 256
MAX_STEPS = 10_000  # parents followed by one revision (HEAD~N): a second at most
MAX_PEEL = 10  # tags of tags followed
_SUFFIX = re.compile(r"(~\d*|\^\d*|\^\{\}|\^\{commit\})")
_HEXREV = re.compile(r"^[0-9a-fA-F]{4,40}$")


def peel(git: GitDir, sha: bytes, rev: str, cap: int | None = None) -> CommitInfo:
    """The commit `sha` names, tags followed; its kind is read from headers first, so a
    huge blob or tree named here is refused without being inflated."""
    assert git.store is not None
    for _ in range(MAX_PEEL):
        kind = kind_of(git.store, sha)
        if kind == TAG:
            sha = tag_target(git.store, sha)
            continue
        if kind != COMMIT:
            break
        try:
            return read_commit(git.store, sha) if cap is None else read_commit(git.store, sha, cap)
        except NotACommit as exc:
            kind = exc.kind
            break
    else:
        raise BadArgument(f"'{rev}' names tags of tags more than {MAX_PEEL} deep")
    raise BadArgument(f"'{rev}' names a {NAMES.get(kind, 'object')}, not a commit")


def _by_prefix(git: GitDir, prefix: str, rev: str) -> bytes | None:
    assert git.store is not None
    prefix = prefix.lower()
    found = git.store.packed_prefix(prefix) | git.store.loose_prefix(prefix)
    if len(found) > 1:
        raise BadArgument(f"'{rev}' is ambiguous: several objects start with {prefix}")
    return next(iter(found), None)


def _base(git: GitDir, name: str, rev: str) -> bytes:
    if name in ("HEAD", "@", ""):
        sha = git.ref("HEAD")
        if sha is None:
            raise NotFound("HEAD does not point to a commit (an empty repository?)")
        return sha
    if len(name) == 40 and set(name.lower().encode()) <= HEX:
        return name.lower().encode()
    for candidate in (
        name,
        f"refs/{name}",
        f"refs/tags/{name}",
        f"refs/heads/{name}",
        f"refs/remotes/{name}",
        f"refs/remotes/{name}/HEAD",
    ):
        if candidate != name or name.startswith("refs/"):
            sha = git.ref(candidate)
            if sha is not None:
                return sha
    if _HEXREV.match(name):
        sha = _by_prefix(git, name, rev)
        if sha is not None:
            return sha
    raise NotFound(f"unknown revision '{rev}': no commit, branch or tag of that name")


def resolve(git: GitDir, rev: str, cap: int | None = None) -> CommitInfo:
    """The commit `rev` names, or a NotFound/BadArgument naming it."""
    cut = min((i for i in (rev.find("~"), rev.find("^")) if i >= 0), default=len(rev))
    name, rest = rev[:cut], rev[cut:]
    steps = _SUFFIX.findall(rest)
    # Nothing that is not a revision is echoed back (a client may send a host path).
    if (
        not rev
        or len(rev) > MAX_REV
        or "".join(steps) != rest
        or (name not in ("HEAD", "@", "") and not valid_ref_name(name))
    ):
        raise BadArgument(
            "invalid revision: use a commit id (full or abbreviated), a branch or tag name, "
            "HEAD, HEAD~N or NAME^N"
        )
    commit = peel(git, _base(git, name, rev), rev, cap if not steps else None)
    walked = 0
    for step in steps:
        if step.startswith("^{"):
            continue
        n = int(step[1:]) if len(step) > 1 else 1
        walked += n
        if walked > MAX_STEPS:
            raise BadArgument(
                f"revision '{rev}' goes back more than {MAX_STEPS} commits; name that commit "
                "by its id (git_log with a cursor reaches it)"
            )
        if step[0] == "~":
            for _ in range(n):
                if not commit.parents:
                    raise NotFound(f"unknown revision '{rev}': the history is shorter")
                commit = peel(git, commit.parents[0], rev)
        elif n == 0:
            continue
        else:
            if len(commit.parents) < n:
                raise NotFound(f"unknown revision '{rev}': the commit has no parent {n}")
            commit = peel(git, commit.parents[n - 1], rev)
    if steps and cap is not None:
        commit = peel(git, commit.id, rev, cap)
    return commit
