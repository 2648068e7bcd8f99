"""Root's edges, one at a time, through both engines: how many links a path may
follow, what the root itself is, the handles it hands out and what each call audits."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from app.errors import EscapesRoot, LoomError, RootGone
from app.security.handles import OpenedDir, OpenedFile, Parent
from app.security.resolve import MAX_SYMLINK_HOPS, Root
from tests.security.conftest import make_root


def _chain(root: Path, links: int) -> str:
    """`l1` -> `l2` -> ... -> `l<links>` -> `f.txt`: opening `l1` follows `links` links."""
    (root / "f.txt").write_text("end")
    for i in range(links, 0, -1):
        nxt = "f.txt" if i == links else f"l{i + 1}"
        os.symlink(nxt, root / f"l{i}")
    return "l1"


@pytest.mark.parametrize(("links", "opens"), [(MAX_SYMLINK_HOPS, True),
                                              (MAX_SYMLINK_HOPS + 1, False)])
def test_a_path_follows_at_most_40_links(tmp_path: Path, engine: str, links: int,
                                         opens: bool) -> None:
    assert MAX_SYMLINK_HOPS == 40  # the kernel's own limit (MAXSYMLINKS)
    first = _chain(tmp_path, links)
    root = make_root(tmp_path, engine=engine)
    if opens:
        with root.open_file(first, op="read") as f:
            assert f.target == "f.txt" and os.read(f.fd, 10) == b"end"
    else:
        with pytest.raises(EscapesRoot) as exc:
            root.open_file(first, op="read")
        assert exc.value.message == "too many levels of symbolic links"


# -- absolute links that stay inside: the walk restarts from the root's handle -------------


@pytest.fixture
def abs_tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "other").mkdir()
    (root / "a.txt").write_text("A")
    (root / "other" / "o.txt").write_text("O")
    real = os.path.realpath(root)
    os.symlink(f"{real}/a.txt", root / "sub" / "deeper" / "to_a")
    os.symlink(f"{real}/other", root / "sub" / "deeper" / "to_other")
    os.symlink(f"{real}//sub/./deeper/../../other/", root / "sub" / "odd_spelling")
    os.symlink(f"{real}-evil/x", root / "sub" / "evil")  # a sibling whose name extends ours
    os.symlink(real, root / "sub" / "to_root")
    (tmp_path / "root-evil").mkdir()
    (tmp_path / "root-evil" / "x").write_text("X")
    return root


@pytest.mark.parametrize(("path", "target", "content"), [
    ("sub/deeper/to_a", "a.txt", b"A"),
    ("sub/deeper/to_other/o.txt", "other/o.txt", b"O"),
    ("sub/odd_spelling/o.txt", "other/o.txt", b"O"),
    ("sub/to_root/sub/deeper/to_a", "a.txt", b"A"),
    ("sub/deeper/to_other/../to_a", "a.txt", b"A"),  # `..` in a request is lexical
])
def test_an_absolute_link_inside_the_root_is_followed_from_the_top(
    abs_tree: Path, engine: str, path: str, target: str, content: bytes
) -> None:
    root = make_root(abs_tree, engine=engine)
    with root.open_file(path, op="read") as f:
        assert (f.rel, f.target, os.read(f.fd, 10)) == (os.path.normpath(path), target,
                                                         content)
        assert os.readlink(f"/proc/self/fd/{f.fd}") == os.path.join(root.real, target)


@pytest.mark.parametrize("path", ["sub/evil", "sub/to_root/sub/evil"])
def test_an_absolute_link_to_a_sibling_named_like_the_root_escapes(
    abs_tree: Path, engine: str, path: str
) -> None:
    root = make_root(abs_tree, engine=engine)
    with pytest.raises(EscapesRoot) as exc:
        root.open_file(path, op="read")
    assert exc.value.message == "path escapes the root"


def test_the_directory_an_absolute_link_reaches(abs_tree: Path, engine: str) -> None:
    root = make_root(abs_tree, engine=engine)
    with root.open_dir("sub/deeper/to_other", op="list") as d:
        assert (d.target, sorted(os.listdir(d.fd))) == ("other", ["o.txt"])
    with root.open_parent("sub/deeper/to_other/new.txt", op="write", perm="write") as p:
        assert (p.name, p.parent_parts, p.target) == ("new.txt", ("other",), "other/new.txt")


# -- a root whose folder went away ----------------------------------------------------------


def _gone(tmp_path: Path, how: str) -> tuple[Path, Root, list[tuple[object, ...]]]:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "a.txt").write_text("A")
    lines: list[tuple[object, ...]] = []
    root = make_root(folder, name="docs", audit=lambda *line: lines.append(line))
    if how == "deleted":
        shutil.rmtree(folder)
    else:  # replaced: same path, another directory
        folder.rename(tmp_path / "old")
        folder.mkdir()
        (folder / "a.txt").write_text("new")
    return folder, root, lines


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_every_way_in_refuses_a_root_whose_folder_is_gone(tmp_path: Path, how: str) -> None:
    _, root, lines = _gone(tmp_path, how)
    calls = [
        lambda: root.open_file("a.txt", op="read"),
        lambda: root.open_dir("", op="list"),
        lambda: root.open_parent("b.txt", op="write", perm="write"),
    ]
    for call in calls:
        with pytest.raises(RootGone) as exc:
            call()
        assert exc.value.message.startswith("root 'docs' is gone: its folder was deleted")
    assert [(d, rel, rule) for d, _, rel, _, rule in lines] == [
        ("DENY", rel, f"root: {exc.value.message}") for rel in ("a.txt", "", "b.txt")
    ]


def test_a_root_left_in_place_is_alive(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    root.check_alive()
    (tmp_path / "new").mkdir()  # its content changing is not its identity
    root.check_alive()


def test_a_request_that_is_not_text_is_audited_as_a_question_mark(tmp_path: Path) -> None:
    lines: list[tuple[object, ...]] = []
    root = make_root(tmp_path, audit=lambda *line: lines.append(line))
    with pytest.raises(LoomError):
        root.open_file(None, op="read")  # type: ignore[arg-type]
    with pytest.raises(LoomError):
        root.open_file("../x", op="read")
    assert [(d, rel) for d, _, rel, _, _ in lines] == [("DENY", "?"), ("DENY", "../x")]


# -- descriptors: every one opened on the way is closed, whatever the outcome -----------------


def _fds_into(real: str) -> set[int]:
    """This process's descriptors on the tree (other tests' threads may open their own)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            where = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if where == real or where.startswith(real + "/"):
            found.add(int(name))
    return found


def test_no_descriptor_outlives_its_resolution(abs_tree: Path, engine: str) -> None:
    (abs_tree / "sub" / "loop").symlink_to("loop")
    (abs_tree / "sub" / "up").symlink_to("..")
    (abs_tree / "sub" / "deeper" / "esc").symlink_to("../../../root-evil/x")
    root = make_root(abs_tree, engine=engine)
    paths = [
        "a.txt", "sub", "sub/deeper/to_a", "sub/deeper/to_other/o.txt", "sub/odd_spelling",
        "sub/to_root/sub/deeper", "sub/up/a.txt", "sub/up/sub/up/other", "sub/evil",
        "sub/loop", "sub/deeper/esc", "missing/x", "a.txt/x", "sub/deeper/to_a/x",
        "sub/to_root/sub/to_root/other/o.txt",
    ]
    assert _fds_into(root.real) == {root.handle.fd}
    _resolve_all(root, paths)
    assert _fds_into(root.real) == {root.handle.fd}


def _resolve_all(root: Root, paths: list[str]) -> None:
    for path in paths:
        calls: list[Callable[[], OpenedFile | OpenedDir | Parent]] = [
            partial(root.open_file, path, op="read"),
            partial(root.open_dir, path, op="list"),
            partial(root.open_parent, path + "/new", op="write", perm="write"),
            partial(root.open_parent, path + "/n1/n2", op="write", perm="write",
                    create_parents=True),
        ]
        for call in calls:
            with contextlib.suppress(LoomError):
                call().close()


def test_create_parents_makes_the_missing_folders(tmp_path: Path, engine: str) -> None:
    root = make_root(tmp_path, engine=engine)
    old = os.umask(0o022)
    try:
        with root.open_parent("p1/p2/f.txt", op="write", perm="write",
                              create_parents=True) as p:
            assert (p.name, p.parent_parts) == ("f.txt", ("p1", "p2"))
    finally:
        os.umask(old)
    for d in ("p1", "p1/p2"):
        assert (tmp_path / d).is_dir()
        assert stat.S_IMODE((tmp_path / d).stat().st_mode) == 0o755
    with pytest.raises(LoomError):
        root.open_parent("q1/f.txt", op="write", perm="write")
    assert not (tmp_path / "q1").exists()


def test_each_way_in_audits_its_outcome_with_the_path_and_the_operation(
    abs_tree: Path, engine: str
) -> None:
    lines: list[tuple[object, ...]] = []
    root = make_root(abs_tree, name="docs", engine=engine,
                     audit=lambda *line: lines.append(line))
    root.open_file("sub/deeper/to_a", op="read_text_file").close()
    root.open_dir("sub/./deeper", op="list_directory").close()
    root.open_parent("other/new.txt", op="write_file", perm="write").close()
    for call in (
        partial(root.open_file, "../x", op="read_text_file"),  # refused before the disk
        partial(root.open_dir, ".env", op="list_directory"),
        partial(root.open_dir, "a.txt", op="list_directory"),  # refused on the disk
        partial(root.open_parent, "", op="delete", perm="delete"),
    ):
        with pytest.raises(LoomError):
            call()
    assert [(d, name, rel, op) for d, name, rel, op, _ in lines] == [
        ("ALLOW", "docs", "sub/deeper/to_a", "read_text_file"),
        ("ALLOW", "docs", "sub/deeper", "list_directory"),
        ("ALLOW", "docs", "other/new.txt", "write_file"),
        ("DENY", "docs", "../x", "read_text_file"),
        ("DENY", "docs", ".env", "list_directory"),
        ("DENY", "docs", "a.txt", "list_directory"),
        ("DENY", "docs", "", "delete"),
    ]
