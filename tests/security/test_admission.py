"""One admission (app/security/admission.py): the walk, the index's walk-less answer and the
check of an indexed path see the same entries, and none of the server's own files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.fs.index import access
from app.fs.index.trigrams import direct
from app.security import DenyRules, Root, admission
from app.security.protected import Protected
from app.security.walk import Walker

# Everything the tree holds, by walk path, and whether a file reader may be handed it.
TREE = {
    "plain.txt": True,
    "sub/deep.txt": True,
    "own.txt": False,  # a hard link to the server's config file
    "sub/own-again.txt": False,  # another one, deeper
    ".env": False,  # a floor deny name
    "secret/key.txt": False,  # a whole-path deny rule
    "ln": False,  # a link to plain.txt: listed by a walk, never read through
    "fifo": False,  # no regular file
}


@pytest.fixture
def admitted(tmp_path: Path) -> Iterator[Root]:
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    (top / "secret").mkdir()
    config = tmp_path / "config.toml"
    config.write_text("[server]\n")
    for rel in ("plain.txt", "sub/deep.txt", ".env", "secret/key.txt"):
        (top / rel).write_text(f"{rel}\n")
    os.link(config, top / "own.txt")
    os.link(config, top / "sub" / "own-again.txt")
    (top / "ln").symlink_to("plain.txt")
    os.mkfifo(top / "fifo")
    protected = Protected()
    protected.hold_paths([str(config)])
    root = Root(name="r", role="reference", permissions=["read"], real=str(top),
                      rules=DenyRules(extra=["secret/key.txt"], identities=protected),
                      max_read_bytes=1 << 20)
    try:
        yield root
    finally:
        protected.close()


def _walked(root: Root) -> set[str]:
    return {e.path for e in Walker(root, ())}


def _direct(root: Root) -> set[str]:
    unopened: list[str] = []
    out = {f.prefix + n for f in direct.folders(root, sorted(TREE), unopened) for n in f.names}
    assert unopened == []
    return out


def test_the_walk_lists_what_may_be_seen_and_no_more(admitted: Root) -> None:
    assert _walked(admitted) == {"plain.txt", "sub", "sub/deep.txt", "secret", "ln", "fifo"}


@pytest.mark.parametrize("asker", ["direct", "verify"])
def test_a_file_reached_by_its_path_is_admitted_as_the_walk_would_hand_it_on(
        admitted: Root, asker: str) -> None:
    want = {rel for rel, readable in TREE.items() if readable}
    if asker == "direct":
        got = _direct(admitted)
    else:
        got = {r for r in TREE if access.verify(admitted, r)}
    assert got == want


def test_the_servers_own_file_under_another_name_is_shown_by_no_path(admitted: Root) -> None:
    """The identity check, asked the same way by every path to a file: without it the
    walk lists `own.txt` and both walk-less readers hand it on."""
    own = {"own.txt", "sub/own-again.txt"}
    assert not own & _walked(admitted)
    assert not own & _direct(admitted)
    assert not any(access.verify(admitted, r) for r in own)


@pytest.mark.parametrize(("rel", "kind"), [
    ("plain.txt", "file"), ("sub/deep.txt", "file"), ("own.txt", "own"), (".env", "denied"),
    ("secret/key.txt", "denied"), ("ln", "link"), ("fifo", "fifo"), ("sub", "folder"),
])
def test_named_says_yes_only_to_a_visible_regular_file(admitted: Root, rel: str,
                                                       kind: str) -> None:
    st = os.lstat(os.path.join(admitted.real, rel))
    assert admission.named(admitted.rules, tuple(rel.split("/")), st) is (kind == "file")


def test_listed_keeps_the_order_it_was_given(admitted: Root) -> None:
    fd = os.open(admitted.real, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name, reverse=True)
        kept = [e.name for e in admission.listed(admitted.rules, (), fd, entries)]
    finally:
        os.close(fd)
    assert kept == ["sub", "secret", "plain.txt", "ln", "fifo"]
