"""Property: no request string, however odd, resolves outside the root or to a denied name.

Hypothesis composes paths from the pieces attackers use (`..`, `/`, `\\`,
`~`, NUL, control and zero-width characters, links that leave, links that
loop, denied names in odd spellings) and from arbitrary text. Every call
through the choke point must either refuse (a `LoomError`) or hand back a
descriptor whose real path, as the kernel reports it, is the root or below
it, and names nothing the deny rules refuse.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import LoomError
from app.security import openat2 as openat2_mod
from tests.security.conftest import make_root

PIECES = [
    "..", ".", "", "~", "a.txt", "sub", "deeper", "g.txt", "out", "out_dir", "up", "up_up",
    "in_dir", "loop", "notes.txt", ".env", ".ENV", ".e\u200bnv", ".env.", "node_modules",
    "Node_Modules", ".git", "secret.txt", "outside", "root-evil", "proc", "%2e%2e", "C:",
    "\\", "\\\\", "\x00", "\n", "é", "e\u0301", "\ufeff", "😀", "x" * 256,
]  # fmt: skip

pieces = st.sampled_from(PIECES) | st.text(max_size=8)
composed = st.lists(pieces, max_size=8).map("/".join)
paths = (
    composed
    | st.text(max_size=40)
    | st.text(alphabet=st.sampled_from("./\\~a\x00é\u200b:"), max_size=20)
)


@pytest.fixture(scope="module")
def linked_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("props")
    root, outside = base / "root", base / "outside"
    (root / "sub" / "deeper").mkdir(parents=True)
    outside.mkdir()
    (base / "root-evil").mkdir()
    (base / "root-evil" / "secret.txt").write_text("S")
    (outside / "secret.txt").write_text("S")
    (root / "a.txt").write_text("A")
    (root / "sub" / "deeper" / "g.txt").write_text("G")
    (root / ".env").write_text("E")
    (root / "node_modules").mkdir()
    (root / ".git").mkdir()
    links: list[tuple[str, str | Path]] = [
        ("out", outside / "secret.txt"),
        ("out_dir", "../outside"),
        ("sub/up", ".."),
        ("sub/up_up", "../.."),
        ("in_dir", "sub"),
        ("loop", "loop"),
        ("notes.txt", ".env"),
        ("root-evil", base / "root-evil"),
        ("proc", f"/proc/self/root{outside}"),
    ]
    for rel, target in links:
        os.symlink(target, root / rel)
    yield root


# The tree's denied entries, fixed (not asked of the rules object the code uses).
DENIED_IN_TREE = frozenset({".env", ".git", "node_modules"})


def _inside(fd: int, real_root: str) -> str:
    """The descriptor's path relative to the root, or fail the property."""
    where = os.readlink(f"/proc/self/fd/{fd}")
    assert where == real_root or where.startswith(real_root + "/"), where
    return os.path.relpath(where, real_root)


@pytest.mark.parametrize("engine_name", ["openat2", "walk"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=paths)
def test_no_path_resolves_outside_the_root(linked_tree: Path, engine_name: str, path: str) -> None:
    if engine_name == "openat2" and not openat2_mod.available():
        pytest.skip("openat2 is not available on this kernel")
    root = make_root(linked_tree, engine=engine_name)
    real_root = os.path.realpath(linked_tree)

    def visible(rel: str) -> None:
        parts = () if rel == "." else tuple(rel.split("/"))
        assert not DENIED_IN_TREE.intersection(parts), rel

    for opener in (
        lambda: root.open_file(path, op="read"),
        lambda: root.open_dir(path, op="list"),
    ):
        try:
            handle = opener()
        except LoomError:
            continue
        with handle:
            visible(_inside(handle.fd, real_root))
    try:
        parent = root.open_parent(path, op="write", perm="write")
    except LoomError:
        return
    with parent:
        assert "/" not in parent.name and parent.name not in ("", ".", "..")
        visible(os.path.join(_inside(parent.fd, real_root), parent.name))


# -- an independent oracle, on paths that reach the disk ----------------------------------
#
# Paths built from the tree's own names (and `..`), so most of them exist; the expected
# answer comes from a re-implementation of the contract on top of os.path.realpath:
# `..` is lexical and may not climb above the root; then every prefix, resolved by the
# kernel's rules (realpath), must stay inside the root; a loop or a missing entry is
# refused; a denied name in the real path is refused; otherwise the descriptor is exactly
# the real path (a file for open_file, a directory for open_dir).

def steps(real_root: str, parts: list[str]) -> list[str]:
    """The names a path can take next: what is really there (links included), and `..`."""
    here = os.path.realpath(os.path.join(real_root, *parts))
    try:
        names = sorted(os.listdir(here)) if os.path.isdir(here) else []
    except OSError:
        names = []
    return [*names, "..", "missing"]


def tree_walks(real_root: str, depth: int) -> list[str]:
    """Every path of up to `depth` components that follows the tree (and its links)."""
    found = []
    frontier: list[list[str]] = [[]]
    for _ in range(depth):
        nxt = []
        for parts in frontier:
            lexical: list[str] = []
            for c in parts:
                if c == "..":
                    if lexical:
                        lexical.pop()
                else:
                    lexical.append(c)
            for name in steps(real_root, lexical):
                found.append("/".join([*parts, name]))
                if name != "missing":
                    nxt.append([*parts, name])
        frontier = nxt
    return found


def expected(real_root: str, path: str) -> tuple[str, str]:
    """("file" | "dir", real path) when the path must open, else ("refused", why)."""
    parts: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                return "refused", "climbs above the root"
            parts.pop()
        else:
            parts.append(comp)
    for i in range(len(parts) + 1):
        here = os.path.join(real_root, *parts[:i])
        try:
            real = os.path.realpath(here, strict=True)
        except OSError as exc:
            return "refused", f"{exc.strerror}: {'/'.join(parts[:i])}"
        if real != real_root and not real.startswith(real_root + "/"):
            return "refused", "escapes the root"
        if DENIED_IN_TREE.intersection(os.path.relpath(real, real_root).split("/")):
            return "refused", "denied"
    if DENIED_IN_TREE.intersection(parts):
        return "refused", "denied name"
    real = os.path.realpath(os.path.join(real_root, *parts))
    return ("dir" if os.path.isdir(real) else "file"), real


def _opened(opener) -> str | None:
    try:
        handle = opener()
    except LoomError:
        return None
    with handle:
        return os.readlink(f"/proc/self/fd/{handle.fd}")


def check_against_the_oracle(root, real_root: str, path: str) -> str:
    kind, real = expected(real_root, path)
    as_file = _opened(lambda: root.open_file(path, op="read"))
    as_dir = _opened(lambda: root.open_dir(path, op="list"))
    if kind == "file":
        assert (as_file, as_dir) == (real, None), path
    elif kind == "dir":
        assert as_dir == real and as_file is None, path
    else:
        assert (as_file, as_dir) == (None, None), (path, real)
    return kind


def test_every_short_path_over_the_trees_names_matches_the_oracle(linked_tree: Path, engine: str):
    root = make_root(linked_tree, engine=engine)
    real_root = os.path.realpath(linked_tree)
    paths = tree_walks(real_root, 4)
    kinds = Counter(check_against_the_oracle(root, real_root, p) for p in paths)
    # Most of these really reach the disk and open: a resolver refusing everything fails.
    assert kinds["file"] + kinds["dir"] >= len(paths) // 5, kinds
    assert kinds["refused"] >= len(paths) // 5, kinds


@pytest.mark.parametrize("engine_name", ["openat2", "walk"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_long_walks_through_the_tree_match_the_oracle(
    linked_tree: Path, engine_name: str, data: st.DataObject
) -> None:
    if engine_name == "openat2" and not openat2_mod.available():
        pytest.skip("openat2 is not available on this kernel")
    real_root = os.path.realpath(linked_tree)
    parts: list[str] = []
    lexical: list[str] = []
    for _ in range(data.draw(st.integers(1, 8))):
        name = data.draw(st.sampled_from(steps(real_root, lexical)))
        parts.append(name)
        if name == "..":
            if lexical:
                lexical.pop()
        else:
            lexical.append(name)
    root = make_root(linked_tree, engine=engine_name)
    check_against_the_oracle(root, real_root, "/".join(parts))
