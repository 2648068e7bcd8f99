"""move_file through the MCP SDK client: same root only, never the root, no
overwrite unless asked, links move as themselves, refusals change nothing."""

from __future__ import annotations

import os

import pytest

from app.fs.change import atomic
from app.security import ops
from tests.fs.conftest import call, make_disk, populate, populated_ws, refusal, roots_config
from tests.kit import loaded_root

MOVE_REFUSALS = [
    # permission per root and role
    ({"root": "ref", "source": "doc.md", "destination": "doc2.md"},
     "root 'ref' (role reference) grants [read], not write"),
    # the root itself, either side
    ({"source": "", "destination": "x"}, "invalid path: the root itself cannot be changed"),
    ({"source": ".", "destination": "x"}, "invalid path: the root itself cannot be changed"),
    ({"source": "notes.txt", "destination": ""}, "invalid path: the root itself cannot be changed"),
    # confinement: there is one root per call, so another root is only reachable by escaping
    ({"source": "notes.txt", "destination": "../src/notes.txt"}, "path escapes the root"),
    ({"source": "notes.txt", "destination": "../outside/notes.txt"}, "path escapes the root"),
    ({"source": "notes.txt", "destination": "link_out/notes.txt"}, "path escapes the root"),
    ({"source": "../outside/secret.txt", "destination": "stolen.txt"}, "path escapes the root"),
    ({"source": "link_out/secret.txt", "destination": "stolen.txt"}, "path escapes the root"),
    ({"root": "src", "source": "main.py", "destination": "../ws/main.py"},
     "path escapes the root"),
    # denied names, on either side
    ({"source": ".env", "destination": "env.txt"}, "matches deny pattern '.env'"),
    ({"source": ".git", "destination": "git"}, "matches deny pattern '.git'"),
    ({"source": "notes.txt", "destination": "dir/.env"}, "matches deny pattern '.env'"),
    ({"source": "notes.txt", "destination": ".git/notes.txt"}, "matches deny pattern '.git'"),
    ({"source": "notes.txt", "destination": ".mcp-trash/notes.txt"},
     "matches deny pattern '.mcp-trash'"),
    ({"source": "notes.txt", "destination": "x.key"}, "matches deny pattern '*.key'"),
    ({"source": "notes.txt", "destination": "gitlink/n.txt"}, "matches deny pattern '.git'"),
    ({"source": "gitlink/config", "destination": "config"}, "matches deny pattern '.git'"),
    # what is at the destination
    ({"source": "notes.txt", "destination": "dir/a.txt"},
     "destination 'dir/a.txt' already exists; pass overwrite=true to replace it"),
    ({"source": "notes.txt", "destination": "dir", "overwrite": True},
     "destination 'dir' already exists and is a directory"),
    ({"source": "notes.txt", "destination": "link_file", "overwrite": True}, "is a symbolic link"),
    ({"source": "notes.txt", "destination": "link_in"}, "is a symbolic link"),
    ({"source": "notes.txt", "destination": "fifo", "overwrite": True}, "not a regular file"),
    ({"source": "dir", "destination": "notes.txt", "overwrite": True},
     "a directory never replaces a file"),
    ({"source": "notes.txt", "destination": "no/such/place.txt"},
     "destination folder 'no/such' does not exist; create it first with create_directory"),
    # the source
    ({"source": "missing.txt", "destination": "x.txt"}, "no such file or directory: 'missing.txt'"),
    ({"source": "dir", "destination": "dir/sub/dir"}, "cannot move 'dir' into its own subtree"),
    ({"source": "dir", "destination": "link_in/sub/x"}, "cannot move 'dir' into its own subtree"),
    ({"source": "notes.txt", "destination": "notes.txt"}, "source and destination are the same"),
]


@pytest.mark.parametrize(("args", "message"), MOVE_REFUSALS)
async def test_move_refusal_names_the_rule_and_changes_nothing(disk, server, args, message):
    assert message in await refusal(disk, server, "move_file", **args)


async def test_rename_a_file(disk, server):
    data = (disk.ws / "notes.txt").read_bytes()
    is_error, res = await call(server, "move_file", source="notes.txt", destination="dir/n.txt")
    assert not is_error, res
    assert res == {"source": "notes.txt", "destination": "dir/n.txt", "type": "file",
                   "replaced": False, "kept_version": None, "note": None}
    assert not (disk.ws / "notes.txt").exists()
    assert (disk.ws / "dir" / "n.txt").read_bytes() == data


async def test_move_a_directory_with_its_contents(disk, server):
    is_error, res = await call(server, "move_file", source="dir", destination="moved")
    assert not is_error, res
    assert res["type"] == "dir"
    assert (disk.ws / "moved" / "sub" / "b.txt").read_text() == "beta\n"
    assert not (disk.ws / "dir").exists()


async def test_overwrite_replaces_an_existing_file_only_when_asked(disk, server):
    is_error, res = await call(server, "move_file", source="notes.txt", destination="dir/a.txt",
                               overwrite=True)
    assert not is_error, res
    assert res["replaced"] is True
    assert (disk.ws / "dir" / "a.txt").read_text() == "one\ntwo\nthree\n"


async def test_a_symlink_moves_as_itself_and_its_target_stays(disk, server):
    outside_before = sorted(os.listdir(disk.outside))
    is_error, res = await call(server, "move_file", source="link_out", destination="dir/lo")
    assert not is_error, res
    assert res["type"] == "symlink"
    moved = disk.ws / "dir" / "lo"
    assert moved.is_symlink() and os.readlink(moved) == str(disk.outside)
    assert sorted(os.listdir(disk.outside)) == outside_before
    # the moved link still leads nowhere an agent may go
    is_error, text = await call(server, "write_file", path="dir/lo/x.txt", content="x")
    assert is_error and text == "path escapes the root"


async def test_sourcecode_root_moves(disk, server):
    is_error, res = await call(server, "move_file", root="src", source="pkg",
                               destination="lib")
    assert not is_error, res
    assert (disk.src / "lib" / "mod.py").exists()


@pytest.mark.parametrize("fallback", [False, True], ids=["renameat2", "link-unlink-fallback"])
def test_no_replace_holds_when_the_destination_appears_first(tmp_path, monkeypatch, fallback):
    """The no-overwrite decision is made by the kernel at the rename, not by our check."""
    if fallback:  # as on a kernel or file system without RENAME_NOREPLACE
        monkeypatch.setattr(ops, "_renameat2", lambda: None)
    disk, root = populated_ws(tmp_path)
    with root.open_parent("notes.txt", op="t", perm="write") as src, root.open_parent(
        "dir/a.txt", op="t", perm="write"
    ) as dst, pytest.raises(FileExistsError):
        ops.rename_noreplace(src.fd, src.name, dst.fd, dst.name)
    assert (disk.ws / "dir" / "a.txt").read_text() == "alpha\n"
    assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"
    # and a free name is taken, for files, links and directories alike
    for source, dest in (("notes.txt", "n2"), ("link_out", "l2"), ("dir", "d2")):
        with root.open_parent(source, op="t", perm="write") as src, root.open_parent(
            dest, op="t", perm="write"
        ) as dst:
            ops.rename_noreplace(src.fd, src.name, dst.fd, dst.name)
    assert (disk.ws / "n2").read_text() == "one\ntwo\nthree\n"
    assert (disk.ws / "l2").is_symlink() and (disk.ws / "d2" / "a.txt").exists()
    assert not (disk.ws / "notes.txt").exists() and not (disk.ws / "link_out").is_symlink()


class _LateArrival:
    """`os` for `app.fs.change.atomic`, where any look at the destination name is answered first
    and then the destination appears: a check-then-rename would overwrite it."""

    def __init__(self, real, name: str, plant) -> None:
        self._real, self._name, self._plant = real, name, plant
        self.looks = 0
        outer = self

        class _Path:
            def __getattr__(self, attr: str):
                fn = getattr(real.path, attr)
                return outer._wrap(fn) if attr in ("exists", "lexists", "isfile") else fn

        self.path = _Path()

    def _wrap(self, fn, at: int = 0):
        def look(*args, **kwargs):
            answer = fn(*args, **kwargs)
            if os.fsdecode(args[at]).rsplit("/", 1)[-1] == self._name:
                self.looks += 1
                self._plant()
            return answer

        return look

    def __getattr__(self, attr: str):
        fn = getattr(self._real, attr)
        return self._wrap(fn) if attr in ("stat", "lstat", "access") else fn


@pytest.mark.parametrize("fallback", [False, True], ids=["renameat2", "link-unlink-fallback"])
def test_a_destination_that_appears_after_any_check_is_never_overwritten(
    tmp_path, monkeypatch, fallback
):
    """Whatever the move looks at first, the destination appears right after it: only a
    decision taken by the kernel at the rename (RENAME_NOREPLACE, or link()) keeps it."""
    if fallback:
        monkeypatch.setattr(ops, "_renameat2", lambda: None)
    disk = make_disk(tmp_path)
    populate(disk)
    late = disk.ws / "dir" / "late.txt"

    def plant() -> None:
        if not late.exists():
            late.write_text("appeared\n")

    spy = _LateArrival(os, "late.txt", plant)
    monkeypatch.setattr(atomic, "os", spy)
    real_lstat_at = ops.lstat_or_none
    monkeypatch.setattr(ops, "lstat_or_none", spy._wrap(real_lstat_at, at=1))
    root = loaded_root(roots_config(disk), "ws")
    with root.open_parent("notes.txt", op="t", perm="write") as src, root.open_parent(
        "dir/late.txt", op="t", perm="write"
    ) as dst:
        try:
            ops.rename_noreplace(src.fd, src.name, dst.fd, dst.name)
        except FileExistsError:
            moved = False
        else:
            moved = True
    if moved:  # nothing looked first, so nothing appeared: a plain move
        assert spy.looks == 0, "the destination appeared after a check and was overwritten"
        assert late.read_text() == "one\ntwo\nthree\n" and not (disk.ws / "notes.txt").exists()
    else:
        assert late.read_text() == "appeared\n"
        assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"


# -- no overwrite, decided at the rename: a race test that cannot miss ---------------------


_REAL_OPEN = os.open


class _Looks:
    """Every look at a name `late.txt` (stat, lstat, access, open; os.path's helpers call
    these) is counted; after the `plant_after`-th, the name appears, made by "another
    program". Whatever the move looks at, and however often, some run of the test makes
    the destination appear right after its last look."""

    def __init__(self, monkeypatch, target, plant_after: int | None) -> None:
        self.count = 0
        self.planted = False
        self.target, self.plant_after = target, plant_after
        for attr in ("stat", "lstat", "access", "open"):
            monkeypatch.setattr(os, attr, self._wrap(getattr(os, attr)))

    def _wrap(self, fn):
        def look(path, *args, **kwargs):
            try:
                return fn(path, *args, **kwargs)
            finally:  # a look that finds nothing (FileNotFoundError) is a look too
                if isinstance(path, str | bytes) and os.fsdecode(path).endswith("late.txt"):
                    self.count += 1
                    if self.count == self.plant_after:
                        self._plant()

        return look

    def _plant(self) -> None:
        self.planted = True
        fd = _REAL_OPEN(self.target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"appeared\n")
        os.close(fd)


@pytest.mark.parametrize("fallback", [False, True], ids=["renameat2", "link-unlink-fallback"])
def test_a_destination_appearing_after_any_look_of_move_file_is_never_overwritten(
    tmp_path, monkeypatch, fallback
):
    """move_file as a whole (not only its rename helper): for k = 1, 2, ... the destination
    appears right after the move's k-th look at it. A move that checks and then renames
    overwrites it for some k; one whose rename refuses an existing name never does."""
    from app.fs.change import move
    if fallback:
        monkeypatch.setattr(ops, "_renameat2", lambda: None)
    with monkeypatch.context() as m:  # how many looks a plain move takes
        disk, root = populated_ws(tmp_path / "count")
        looks = _Looks(m, disk.ws / "dir" / "late.txt", None)
        move.move_file(root, "notes.txt", "dir/late.txt")
        total = looks.count
    assert total >= 1
    for k in range(1, total + 2):
        with monkeypatch.context() as m:
            disk, root = populated_ws(tmp_path / f"k{k}")
            late = disk.ws / "dir" / "late.txt"
            looks = _Looks(m, late, k)
            try:
                move.move_file(root, "notes.txt", "dir/late.txt")
                moved = True
            except Exception as exc:  # the message is checked below
                moved, message = False, str(exc)
        if looks.planted:  # it appeared: it must still be there, untouched
            assert late.read_text() == "appeared\n" and not moved, (
                f"appeared after look {k} of {total} and was overwritten")
            assert message == "destination 'dir/late.txt' already exists; pass overwrite=true "\
                "to replace it"
            assert (disk.ws / "notes.txt").read_text() == "one\ntwo\nthree\n"
        else:
            assert moved and late.read_text() == "one\ntwo\nthree\n"


def test_a_move_without_overwrite_never_uses_a_plain_rename(tmp_path, monkeypatch):
    """Asserted directly: with renameat2 available, a move that may not replace anything
    reaches the kernel as renameat2(RENAME_NOREPLACE), files and folders alike, and never as
    rename(2), which replaces whatever is there."""
    from app.fs.change import move
    if ops._renameat2() is None:
        pytest.skip("no renameat2 on this platform")
    _, root = populated_ws(tmp_path)
    calls: list[str] = []
    real_fn = ops._renameat2()

    def renameat2(a, b, c, d, flags):
        calls.append(f"renameat2 flags={flags}")
        return real_fn(a, b, c, d, flags)

    def plain(*args, **kwargs):
        calls.append("rename")
        raise AssertionError("plain rename in a move that must not replace")

    monkeypatch.setattr(ops, "_renameat2", lambda: renameat2)
    monkeypatch.setattr(os, "rename", plain)
    monkeypatch.setattr(os, "replace", plain)
    move.move_file(root, "notes.txt", "n2.txt")
    move.move_file(root, "dir", "d2")
    move.move_file(root, "link_out", "l2")
    assert calls == [f"renameat2 flags={ops.RENAME_NOREPLACE}"] * 3
