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
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
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
    for rel, target in [
        ("out", outside / "secret.txt"),
        ("out_dir", "../outside"),
        ("sub/up", ".."),
        ("sub/up_up", "../.."),
        ("in_dir", "sub"),
        ("loop", "loop"),
        ("notes.txt", ".env"),
        ("root-evil", base / "root-evil"),
        ("proc", f"/proc/self/root{outside}"),
    ]:
        os.symlink(target, root / rel)
    yield root


def _inside(fd: int, real_root: str) -> str:
    """The descriptor's path relative to the root, or fail the property."""
    where = os.readlink(f"/proc/self/fd/{fd}")
    assert where == real_root or where.startswith(real_root + "/"), where
    return os.path.relpath(where, real_root)


@pytest.mark.parametrize("engine_name", ["openat2", "walk"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=paths)
def test_no_path_resolves_outside_the_root(tree: Path, engine_name: str, path: str) -> None:
    if engine_name == "openat2" and not openat2_mod.available():
        pytest.skip("openat2 is not available on this kernel")
    root = make_root(tree, engine=engine_name)
    real_root = os.path.realpath(tree)

    def visible(rel: str) -> None:
        parts = () if rel == "." else tuple(rel.split("/"))
        assert root.rules.path(parts) is None, rel

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
