"""The walk: pruned before descending, breadth-first and sorted, links never followed.

The pruning proof does not trust the walker's own counters: it spies on
`os.scandir` and asks the kernel (`/proc/self/fd/N`) which directory each
listing really read, on the seed's tree shape (300 useful files beside
`.venv/` and `node_modules/` nested as pip and npm nest them). The noise is
scaled to 2,400 files to keep the suite fast; `benchmarks/walk.py` runs the
full 24,300.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from app.security import Walker
from app.security import openat2 as openat2_mod
from app.security import walk as walk_mod
from benchmarks._trees import build_seed_tree
from tests.kit import count_folder_opens
from tests.security.conftest import make_root


@pytest.fixture(scope="module")
def seed_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("seed")
    counts = build_seed_tree(base, noise=2_400)
    assert (counts.useful, counts.files) == (300, 2_700)
    return base


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Real paths of every directory `os.scandir` lists while the test runs."""
    seen: list[str] = []
    real_scandir = os.scandir
    openat2_mod.available()  # its one-time probe lists a temporary folder of its own

    def spy(path=None):
        if isinstance(path, int):
            seen.append(os.readlink(f"/proc/self/fd/{path}"))
        return real_scandir(path) if path is not None else real_scandir()

    monkeypatch.setattr(os, "scandir", spy)
    yield seen


def _unpruned_dirs(base: Path) -> list[str]:
    keep = []
    for here, dirs, _ in os.walk(base):
        dirs[:] = [d for d in dirs if d not in (".venv", "node_modules")]
        keep.append(os.path.realpath(here))
    return keep


def test_the_walk_never_lists_a_pruned_directory(seed_tree: Path, listed: list[str], engine: str):
    root = make_root(seed_tree, engine=engine)
    walker = Walker(root, ())
    found = [e.path for e in walker if e.kind == "file" and e.name.endswith(".py")]
    assert len(found) == 300
    assert not any("/.venv" in p or "/node_modules" in p for p in listed)
    # Exactly the directories outside the pruned trees were listed, each once.
    assert sorted(listed) == sorted(_unpruned_dirs(seed_tree))
    assert walker.dirs_opened == len(listed)
    # `.venv` and `node_modules` cost one name match each: not even an entry.
    assert walker.examined_entries == len(listed) - 1 + 300


def test_the_batch_api_prunes_the_same(seed_tree: Path, listed: list[str]) -> None:
    walker = Walker(make_root(seed_tree), ())
    batches = list(walker.dirs())
    names = {e.name for d in batches for e in d.entries}
    assert ".venv" not in names and "node_modules" not in names
    assert len(batches) == walker.dirs_opened == len(listed)
    assert sum(len(d.entries) for d in batches) == walker.examined_entries


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root, outside = tmp_path / "root", tmp_path / "outside"
    for d in ("b/deep", "a/x", "a/.git", "c", "node_modules/pkg"):
        (root / d).mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("S")
    for f in ("z.txt", "a/one.py", "a/x/two.py", "b/deep/three.py", ".env", "a/.git/config"):
        (root / f).write_text("x")
    os.symlink("..", root / "a" / "up")  # a cycle, if anything followed it
    os.symlink(outside, root / "out")
    os.symlink("z.txt", root / "c" / "zlink")
    os.mkfifo(root / "c" / "fifo")
    return root


def test_breadth_first_sorted_and_denied_names_invisible(small: Path, engine: str) -> None:
    walker = Walker(make_root(small, engine=engine), ())
    got = [(e.path, e.kind, e.depth) for e in walker]
    assert got == [
        ("a", "dir", 1),
        ("b", "dir", 1),
        ("c", "dir", 1),
        ("out", "symlink", 1),
        ("z.txt", "file", 1),
        ("a/one.py", "file", 2),
        ("a/up", "symlink", 2),
        ("a/x", "dir", 2),
        ("b/deep", "dir", 2),
        ("c/fifo", "other", 2),
        ("c/zlink", "symlink", 2),
        ("a/x/two.py", "file", 3),
        ("b/deep/three.py", "file", 3),
    ]
    assert walker.skipped_links == 3
    assert walker.unreadable_dirs == 0


def test_max_depth_and_start(small: Path) -> None:
    root = make_root(small)
    assert [e.path for e in Walker(root, (), max_depth=1)] == ["a", "b", "c", "out", "z.txt"]
    w = Walker(root, ("a",))
    assert [(e.path, e.parts, e.depth) for e in w] == [
        ("a/one.py", ("a", "one.py"), 1),
        ("a/up", ("a", "up"), 1),
        ("a/x", ("a", "x"), 1),
        ("a/x/two.py", ("a", "x", "two.py"), 2),
    ]


@pytest.mark.parametrize("held", [True, False], ids=["from-parent-handle", "from-root-handle"])
def test_a_directory_swapped_for_a_link_mid_walk_is_skipped(
    small: Path, engine: str, held: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not held:
        monkeypatch.setattr(walk_mod, "MAX_HELD", 0)  # every directory reopened from the root
    walker = Walker(make_root(small, engine=engine), ())
    seen = []
    for e in walker:
        seen.append(e.path)
        if e.path == "b":
            # Listed as a directory; before the walk opens it, it becomes a link out.
            os.rename(small / "b", small / "c" / "b-moved")
            os.symlink(small.parent / "outside", small / "b")
    assert walker.unreadable_dirs == 1
    assert not any(p.startswith("b/") for p in seen)
    assert "secret.txt" not in {p.rsplit("/", 1)[-1] for p in seen}


def test_a_directory_removed_mid_walk_is_skipped(small: Path) -> None:
    walker = Walker(make_root(small), ())
    seen = []
    for e in walker:
        seen.append(e.path)
        if e.path == "a":
            os.rename(small / "a", small.parent / "a-gone")
    assert walker.unreadable_dirs == 1
    assert "b/deep/three.py" in seen and not any(p.startswith("a/") for p in seen)


def _walk_as_nobody(root) -> tuple[int, list[str]]:
    """Walk `root` in a forked child that has dropped root (mode 000 means nothing to root).

    The root's handle is opened before the fork, so the child needs no search right on the
    folders above it; inside the tree the usual 0755 lets `nobody` in, except where not.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            walker = Walker(root, ())
            paths = [e.path for e in walker]
            os.write(write_end, json.dumps([walker.unreadable_dirs, paths]).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    unreadable, paths = json.loads(data)
    return unreadable, paths


def test_an_unreadable_directory_is_skipped_not_fatal(small: Path, engine: str) -> None:
    # Runs as root too (CI is root): the walk then happens in a child that has become
    # `nobody`, for whom a mode-000 directory really is unreadable.
    root = make_root(small, engine=engine)
    assert root.handle.fd >= 0
    os.chmod(small / "a", 0)
    try:
        if os.geteuid() == 0:
            unreadable, paths = _walk_as_nobody(root)
        else:
            walker = Walker(root, ())
            paths = [e.path for e in walker]
            unreadable = walker.unreadable_dirs
    finally:
        os.chmod(small / "a", 0o755)
    assert unreadable == 1
    assert "a" in paths and not any(p.startswith("a/") for p in paths)
    assert "b/deep/three.py" in paths


def test_stopping_early_releases_every_handle(small: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    root = make_root(small)
    before = open_fds()
    it = iter(Walker(root, ()))
    assert isinstance(it, Generator)  # closing it is what lets the handles go
    for _ in range(7):  # into the second level: parents held for their subdirectories
        next(it)
    it.close()
    assert open_fds() == before
    batches = Walker(root, ()).dirs()
    assert isinstance(batches, Generator)
    next(batches)
    batches.close()
    assert open_fds() == before


def test_a_wide_tree_never_holds_more_than_max_held_handles(tmp_path: Path) -> None:
    for i in range(walk_mod.MAX_HELD * 3):
        (tmp_path / f"d{i:03d}" / "sub").mkdir(parents=True)
    before = len(os.listdir("/proc/self/fd"))
    peak = 0
    for _ in Walker(make_root(tmp_path), ()):
        peak = max(peak, len(os.listdir("/proc/self/fd")) - before)
    assert peak <= walk_mod.MAX_HELD + 2


def test_whole_path_rules_prune_too(small: Path) -> None:
    root = make_root(small, deny=["a/x", "b/*/three.py"])
    paths = [e.path for e in Walker(root, ())]
    assert "a/x" not in paths and "a/x/two.py" not in paths
    assert "b/deep/three.py" not in paths and "b/deep" in paths


@pytest.mark.parametrize(
    ("name", "kind"),
    [("file", "file"), ("dir", "dir"), ("fifo", "other"), ("to-file", "symlink"),
     ("to-dir", "symlink"), ("to-fifo", "symlink"), ("dangling", "symlink")],
)
def test_an_entry_is_told_by_what_it_is_not_what_it_points_to(tmp_path: Path, name, kind) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    for link, target in (("to-file", "file"), ("to-dir", "dir"), ("to-fifo", "fifo"),
                         ("dangling", "nowhere")):
        os.symlink(target, tmp_path / link)
    # lstat while the entry is current (its parent's handle is open): the link's own status
    got = {e.name: (e.kind, walk_mod.kind_of_mode(e.lstat().st_mode))
           for e in Walker(make_root(tmp_path), ())}
    assert got[name] == (kind, kind)


def test_several_unreadable_directories_are_each_counted_and_skipped(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two that fail to open, two that open and fail to list: four skipped, the rest walked."""
    real_open, real_scandir = os.open, os.scandir

    def refuse_open(path, flags, *args, **kwargs):
        if path in ("x", "deep"):
            raise PermissionError(13, "denied")
        return real_open(path, flags, *args, **kwargs)

    def refuse_listing(fd):
        if isinstance(fd, int) and os.readlink(f"/proc/self/fd/{fd}").endswith(("/a", "/b")):
            raise PermissionError(13, "denied")
        return real_scandir(fd)

    monkeypatch.setattr(os, "open", refuse_open)
    monkeypatch.setattr(os, "scandir", refuse_listing)
    walker = Walker(make_root(small), ())
    paths = [e.path for e in walker]
    monkeypatch.undo()
    assert walker.unreadable_dirs == 2  # a and b: opened, not listed (x, deep: never reached)
    assert paths == ["a", "b", "c", "out", "z.txt", "c/fifo", "c/zlink"]
    walker = Walker(make_root(small), ())
    monkeypatch.setattr(os, "open", refuse_open)
    paths = [e.path for e in walker]
    monkeypatch.undo()
    assert walker.unreadable_dirs == 2  # a/x and b/deep: listed as dirs, failed to open
    assert "a/one.py" in paths and "c/fifo" in paths
    assert not any(p.startswith(("a/x/", "b/deep/")) for p in paths)


def test_the_keep_filter_drops_what_is_neither_yielded_nor_entered(small: Path) -> None:
    seen: list[tuple[tuple[str, ...], int]] = []

    def keep(parts, fd, entries):
        # The filter gets the open directory it filters: the same folder as `parts`.
        assert os.fstat(fd).st_ino == os.stat(small.joinpath(*parts)).st_ino
        seen.append((parts, len(entries)))
        return [e for e in entries if e.name not in ("a", "c")]

    paths = [e.path for e in Walker(make_root(small), (), keep=keep)]
    assert paths == ["b", "out", "z.txt", "b/deep", "b/deep/three.py"]
    assert seen == [((), 5), (("b",), 1), (("b", "deep"), 1)]


def test_a_subdirectory_opens_from_its_parents_handle(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root's step-by-step resolution runs once, for the start: every folder below is
    opened from its parent's handle (O_NOFOLLOW), as long as fewer than MAX_HELD are held."""
    root = make_root(small)
    calls: list[tuple[str, ...]] = []
    real = root.open_subdir

    def spy(parts):
        calls.append(parts)
        return real(parts)

    monkeypatch.setattr(root, "open_subdir", spy)
    assert len(list(Walker(root, ()))) == 13
    assert calls == [()]


def test_a_parents_handle_is_closed_once_its_last_subdirectory_is_open(tmp_path: Path) -> None:
    """Down a chain deeper than MAX_HELD, with a file beside each folder, the walk holds only
    the folder it lists and the one it is about to open: never the whole chain."""
    depth = walk_mod.MAX_HELD + 8
    here = tmp_path
    for i in range(depth):
        here = here / f"d{i}"
        here.mkdir()
        (here / "f").write_text("x")
    before = len(os.listdir("/proc/self/fd"))
    peak = 0
    count = 0
    for _ in Walker(make_root(tmp_path), ()):
        count += 1
        peak = max(peak, len(os.listdir("/proc/self/fd")) - before)
    assert count == 2 * depth
    assert peak <= 2
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_servers_own_files_are_invisible_under_any_name(tmp_path: Path) -> None:
    """A hard link to a protected file (same identity, another name) is neither listed nor
    counted; its neighbours, and a copy with the same content, are."""
    from app.security.deny import DenyRules
    from app.security.protected import Protected

    (tmp_path / "sub").mkdir()
    (tmp_path / "config.toml").write_text("token")
    os.link(tmp_path / "config.toml", tmp_path / "sub" / "innocent.txt")
    (tmp_path / "sub" / "copy.txt").write_text("token")
    (tmp_path / "sub" / "other.txt").write_text("x")
    ids = Protected()
    ids.hold_paths([str(tmp_path / "config.toml")])
    root = make_root(tmp_path)
    root.policy.rules = DenyRules(identities=ids)  # the walk asks these rules
    walker = Walker(root, ())
    paths = [e.path for e in walker]
    assert paths == ["sub", "sub/copy.txt", "sub/other.txt"]
    assert walker.examined_entries == 3



@pytest.mark.parametrize(("levels", "deeper", "most_opens"), [
    (0, True, 0), (10, True, 10), (119, True, 119), (120, False, 120), (500, False, 120)])
def test_deeper_than_stops_at_the_first_entry_past_its_levels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels, deeper, most_opens) -> None:
    """A chain of 120 folders (the last one empty): each folder opened once from its
    parent's handle, none deeper than `levels`, and none left open."""
    here = tmp_path / "top"
    for i in range(120):
        here = here / f"d{i}"
    here.mkdir(parents=True)
    top = os.open(tmp_path / "top", os.O_RDONLY | os.O_DIRECTORY)
    fds = len(os.listdir("/proc/self/fd"))
    count = count_folder_opens(monkeypatch)
    try:
        assert walk_mod.deeper_than(top, levels, max_entries=1000) is deeper
    finally:
        monkeypatch.undo()
        os.close(top)
    assert count[0] <= most_opens
    assert len(os.listdir("/proc/self/fd")) == fds - 1


def test_deeper_than_counts_every_entry_and_stops_past_its_budget(tmp_path: Path) -> None:
    (tmp_path / "top" / "a").mkdir(parents=True)
    for i in range(50):
        (tmp_path / "top" / "a" / f".env{i}").write_text("")  # denied names count too
    top = os.open(tmp_path / "top", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert walk_mod.deeper_than(top, 1, max_entries=100) is True
        assert walk_mod.deeper_than(top, 2, max_entries=100) is False
        with pytest.raises(walk_mod.TooManyEntries):
            walk_mod.deeper_than(top, 2, max_entries=40)
    finally:
        os.close(top)


def test_a_descent_in_depth_first_order_opens_each_folder_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.security.handles import Descent

    paths = [("a",), ("a", "b"), ("a", "b", "c"), ("a", "d"), ("e",), ("e", "f", "g")]
    for p in paths:
        tmp_path.joinpath(*p).mkdir(parents=True, exist_ok=True)
    top = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with Descent(top) as d:
            for p in paths:
                fd = d.at(p)
                assert os.path.samestat(os.fstat(fd), os.stat(tmp_path.joinpath(*p)))
            assert d.opened == 7  # a, b, c, d, e, f, g: each once
            d.at(())
            assert d.fd == top and d.depth == 0
    finally:
        os.close(top)


@pytest.mark.parametrize(("max_entries", "too_many"), [(51, False), (50, True)])
def test_deeper_than_allows_exactly_its_budget_of_entries_in_all_its_folders(
        tmp_path: Path, max_entries: int, too_many: bool) -> None:
    """top holds a and b, a 25 files, b 24: 51 entries in all, no folder more than 25."""
    for name, files in (("a", 25), ("b", 24)):
        (tmp_path / "top" / name).mkdir(parents=True)
        for i in range(files):
            (tmp_path / "top" / name / f"f{i}").write_text("")
    top = os.open(tmp_path / "top", os.O_RDONLY | os.O_DIRECTORY)
    try:
        if too_many:
            with pytest.raises(walk_mod.TooManyEntries):
                walk_mod.deeper_than(top, 2, max_entries=max_entries)
        else:
            assert walk_mod.deeper_than(top, 2, max_entries=max_entries) is False
    finally:
        os.close(top)


def test_deeper_than_counts_a_link_to_a_folder_as_an_entry_and_never_enters_it(
        tmp_path: Path) -> None:
    (tmp_path / "far" / "a" / "b").mkdir(parents=True)
    (tmp_path / "top").mkdir()
    os.symlink(tmp_path / "far", tmp_path / "top" / "lnk")
    top = os.open(tmp_path / "top", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert walk_mod.deeper_than(top, 1, max_entries=10) is False
        assert walk_mod.deeper_than(top, 0, max_entries=10) is True
    finally:
        os.close(top)


def test_hidden_entries_are_counted_only_when_asked(small: Path) -> None:
    root = make_root(small)
    plain, counting = Walker(root, ()), Walker(root, (), count_hidden=True)
    assert [e.path for e in plain] == [e.path for e in counting]
    assert plain.hidden_entries == 0
    assert counting.hidden_entries == 3  # .env, a/.git, node_modules


def test_a_folder_opened_as_descriptor_0_is_walked(small: Path) -> None:
    """A process whose stdin is closed (a daemon) gets descriptor 0 for the next open: a
    folder on it is as valid as any."""
    root = make_root(small)
    fds: list[int] = []

    def keep(parts, fd, entries):
        fds.append(fd)
        return entries

    saved = os.dup(0)
    os.close(0)
    try:
        walker = Walker(root, ("b",), keep=keep)
        paths = [e.path for e in walker]
    finally:
        os.dup2(saved, 0)
        os.close(saved)
    assert fds[0] == 0
    assert paths == ["b/deep", "b/deep/three.py"] and walker.unreadable_dirs == 0


def test_the_servers_own_files_are_hidden_entries_when_they_are_counted(tmp_path: Path) -> None:
    from app.security.deny import DenyRules
    from app.security.protected import Protected

    (tmp_path / "sub").mkdir()
    (tmp_path / "config.toml").write_text("token")
    os.link(tmp_path / "config.toml", tmp_path / "sub" / "innocent.txt")
    (tmp_path / "sub" / "other.txt").write_text("x")
    ids = Protected()
    ids.hold_paths([str(tmp_path / "config.toml")])
    root = make_root(tmp_path)
    root.policy.rules = DenyRules(identities=ids)
    walker = Walker(root, (), count_hidden=True)
    assert [e.path for e in walker] == ["sub", "sub/other.txt"]
    assert walker.hidden_entries == 2  # config.toml and its other name
