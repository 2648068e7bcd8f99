"""app.fs.change.move on its own: what each system refusal of the rename is told as, what the
audit log calls a move, and the bound on how much a moved folder may hold to be checked."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.errors import (
    AlreadyExists,
    BadArgument,
    DeniedName,
    LoomError,
    NotARegularFile,
    OSRefusal,
    TooDeep,
)
from app.fs.change import exposure, locks, move
from app.security.deny import DenyRules
from app.security.paths import MAX_DEPTH
from app.security.policy import Recovery
from tests.kit import secure_root


@pytest.mark.parametrize(
    ("exc", "kind", "message"),
    [
        (FileExistsError(errno.EEXIST, "x"), AlreadyExists,
         "destination 'd/b' already exists; pass overwrite=true to replace it"),
        (OSError(errno.EINVAL, "x"), BadArgument, "cannot move 's/a' into its own subtree ('d/b')"),
        (OSError(errno.EXDEV, "x"), OSRefusal,
         "cannot move 's/a' to 'd/b': they are on different file systems inside the root"),
        (OSError(errno.ENOTEMPTY, "x"), AlreadyExists,
         "destination 'd/b' changed while moving; nothing was moved"),
        (OSError(errno.EISDIR, "x"), AlreadyExists,
         "destination 'd/b' changed while moving; nothing was moved"),
        (OSError(errno.ENOTDIR, "x"), AlreadyExists,
         "destination 'd/b' changed while moving; nothing was moved"),
    ],
)
def test_each_refusal_of_the_rename_is_told_for_what_it_is(exc, kind, message) -> None:
    err = move._move_error(exc, "s/a", "d/b")
    assert type(err) is kind and err.message == message


def test_any_other_refusal_names_the_source() -> None:
    err = move._move_error(OSError(errno.EIO, "x"), "s/a", "d/b")
    assert err.message.endswith(": 's/a'")


def test_the_exposing_refusal_names_both_paths_and_the_pattern() -> None:
    err = exposure.exposes("s/a", "d/b", "config/prod.yaml")
    assert isinstance(err, DeniedName) and str(err) == err.message == (
        "cannot move 's/a' to 'd/b': something inside it matches deny pattern "
        "'config/prod.yaml' and would not at its new path; nothing was moved"
    )


def test_a_move_is_audited_as_itself(tmp_path: Path) -> None:
    top = tmp_path / "r"
    (top / "d").mkdir(parents=True)
    (top / "a.txt").write_text("A")
    lines: list[tuple[str, str, str]] = []
    root = secure_root(top, audit=lambda decision, _r, rel, op, _rule: lines.append(
        (decision, rel, op)))
    move.move_file(root, "a.txt", "d/a.txt")
    with pytest.raises(LoomError):
        move.move_file(root, "d/a.txt", ".env")
    with pytest.raises(LoomError):
        move.move_file(root, ".git", "x")
    assert (top / "d" / "a.txt").read_text() == "A"
    assert lines and {op for _, _, op in lines} == {"move_file"}
    assert ("DENY", ".env", "move_file") in lines and ("DENY", ".git", "move_file") in lines


def test_a_folder_too_big_to_check_is_refused_only_above_the_bound(tmp_path, monkeypatch):
    top = tmp_path / "r"
    (top / "big" / "config").mkdir(parents=True)
    for i in range(4):
        (top / "big" / f"f{i}").write_text("x")
    root = secure_root(top, deny=["*/config/prod.yaml"])  # may deny below any folder
    monkeypatch.setattr(exposure, "MAX_CHECKED", 5)  # big holds 5 entries: still checked
    move.move_file(root, "big", "big2")
    monkeypatch.setattr(exposure, "MAX_CHECKED", 4)
    with pytest.raises(LoomError) as exc:
        move.move_file(root, "big2", "big3")
    assert exc.value.message == (
        "'big2' holds more than 4 entries: too many to check that moving it exposes "
        "nothing denied; move its parts instead"
    )
    assert (top / "big2").is_dir() and not os.path.lexists(top / "big3")


def test_moving_what_would_expose_a_denied_path_is_refused_and_audited_with_its_rule(tmp_path):
    top = tmp_path / "r"
    (top / "app" / "config").mkdir(parents=True)
    (top / "app" / "config" / "prod.yaml").write_text("secret")
    (top / "app" / "lib").mkdir()
    (top / "app" / "lib" / "x.py").write_text("x")
    lines: list[tuple] = []
    root = secure_root(top, deny=["app/config/prod.yaml"], audit=lambda *a: lines.append(a))
    with pytest.raises(DeniedName) as exc:
        move.move_file(root, "app", "other")
    assert exc.value.message == (
        "cannot move 'app' to 'other': something inside it matches deny pattern "
        "'app/config/prod.yaml' and would not at its new path; nothing was moved"
    )
    denies = [a for a in lines if a[0] == "DENY"]
    assert denies and denies[-1][2] == "app" and denies[-1][4] is not None
    assert "app/config/prod.yaml" in denies[-1][4]
    assert (top / "app" / "config" / "prod.yaml").exists() and not (top / "other").exists()
    move.move_file(root, "app/lib", "lib")  # nothing denied inside: it moves
    assert (top / "lib" / "x.py").exists()


def test_a_file_cannot_be_a_folder_of_its_new_path_and_twins_are_one_entry(tmp_path):
    top = tmp_path / "r"
    top.mkdir()
    (top / "f.txt").write_text("F")
    os.link(top / "f.txt", top / "twin.txt")
    root = secure_root(top)
    with pytest.raises(LoomError) as exc:
        move.move_file(root, "f.txt", "f.txt/inner")
    assert "own subtree" not in exc.value.message  # a file has no subtree: not a folder
    with pytest.raises(BadArgument) as same:
        move.move_file(root, "f.txt", "twin.txt", overwrite=True)
    assert same.value.message == "source and destination are the same entry"


def test_a_refused_rename_names_the_source(tmp_path, monkeypatch):
    top = tmp_path / "r"
    (top / "s").mkdir(parents=True)
    (top / "s" / "a").write_text("A")
    root = secure_root(top)

    def refuse(*args):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(move, "rename_noreplace", refuse)
    with pytest.raises(OSRefusal) as exc:
        move.move_file(root, "s/a", "b")
    assert exc.value.message.startswith("cannot move 's/a' to 'b'")


@pytest.mark.parametrize(
    ("destination", "folder"), [("nofolder/name/", "nofolder"), ("aX/X/", "aX")]
)
def test_a_missing_destination_folder_is_named(tmp_path, destination, folder):
    top = tmp_path / "r"
    top.mkdir()
    (top / "f.txt").write_text("F")
    with pytest.raises(LoomError) as exc:
        move.move_file(secure_root(top), "f.txt", destination)
    assert exc.value.message == (
        f"destination folder '{folder}' does not exist; create it first with create_directory"
    )


def test_moving_a_folder_onto_itself_is_the_same_entry_not_its_own_subtree(tmp_path):
    top = tmp_path / "r"
    (top / "d" / "in").mkdir(parents=True)
    with pytest.raises(BadArgument) as exc:
        move.move_file(secure_root(top), "d", "d", overwrite=True)
    assert exc.value.message == "source and destination are the same entry"
    assert (top / "d" / "in").is_dir()


def test_the_bound_counts_only_what_a_pattern_could_reach(tmp_path, monkeypatch):
    """Only folders a whole-path rule could reach are listed: a big part no pattern reaches
    (a whole moved folder, or one of its subfolders) is neither looked at nor counted."""
    top = tmp_path / "r"
    for folder in ("src", "config/big"):
        (top / folder).mkdir(parents=True)
        for i in range(6):
            (top / folder / f"f{i}").write_text("x")
    (top / "config" / "lib.yaml").write_text("x")
    root = secure_root(top, deny=["config/prod.yaml"])  # may deny below `config` only
    monkeypatch.setattr(exposure, "MAX_CHECKED", 3)  # config holds 2 entries; big ones hold 6
    move.move_file(root, "src", "src2")  # `src` cannot hold anything the rule denies
    move.move_file(root, "config", "config2")  # `config/big` cannot either
    assert (top / "src2" / "f5").exists() and (top / "config2" / "big" / "f5").exists()


# --- a folder the check cannot look into refuses the move (fail closed) ------------------
# The failures are injected at the check's two system calls (`exposure.open_folder`,
# `exposure.list_folder`), so the table runs as root too, where mode bits stop nothing;
# tests/security/test_move_deny.py has the same case with real permissions (not as root).

FAILURES = [
    (errno.EACCES, "permission denied by the operating system"),
    (errno.EMFILE, "too many open files"),
    (errno.ENOMEM, "enomem"),
    (errno.ENOENT, "no such file or directory"),  # the folder, or an entry, vanished
]


def _fail_at(monkeypatch, step: str, where: str, code: int) -> None:
    """Make the check's open or listing of folder `where` (a name, or "" for the top)
    fail with `code`."""
    real_open, real_list = exposure.open_folder, exposure.list_folder
    opened: dict[int, str] = {}

    def open_folder(name, dir_fd):
        if step == "opened" and name == where:
            raise OSError(code, os.strerror(code))
        fd = real_open(name, dir_fd)
        opened[fd] = name
        return fd

    def list_folder(fd):
        if step == "listed" and opened.get(fd) == where:
            raise OSError(code, os.strerror(code))
        return real_list(fd)

    monkeypatch.setattr(exposure, "open_folder", open_folder)
    monkeypatch.setattr(exposure, "list_folder", list_folder)


@pytest.mark.parametrize(("code", "why"), FAILURES)
@pytest.mark.parametrize("step", ["opened", "listed"])
@pytest.mark.parametrize(("where", "shown"), [("app", "app"), ("config", "app/config"),
                                             ("deep", "app/config/deep")])
def test_a_folder_the_check_cannot_look_into_refuses_the_move(
    tmp_path, monkeypatch, code, why, step, where, shown
):
    top = tmp_path / "r"
    (top / "app" / "config" / "deep").mkdir(parents=True)
    (top / "app" / "config" / "deep" / "prod.yaml").write_text("SECRET")
    lines: list[tuple] = []
    root = secure_root(top, deny=["app/*/prod.yaml"], audit=lambda *a: lines.append(a))
    _fail_at(monkeypatch, step, where, code)
    with pytest.raises(OSRefusal) as exc:
        move.move_file(root, "app", "other")
    assert exc.value.message == (
        f"cannot move 'app' to 'other': folder '{shown}' cannot be {step} ({why}), so it "
        "cannot be checked that the move exposes nothing denied; nothing was moved"
    )
    assert lines[-1][0] == "DENY" and lines[-1][2] == "app"
    assert (top / "app" / "config" / "deep" / "prod.yaml").exists() and not (top / "other").exists()


def test_an_entry_that_vanishes_while_listed_refuses_the_move(tmp_path, monkeypatch):
    """The entry is listed, then gone when its type is asked (no d_type on this file system)."""
    top = tmp_path / "r"
    (top / "app" / "sub").mkdir(parents=True)

    class Gone:
        name = "sub"

        def is_dir(self, follow_symlinks=True):
            raise FileNotFoundError(errno.ENOENT, "gone")

    monkeypatch.setattr(exposure.os, "scandir", lambda fd: contextlib.nullcontext(iter([Gone()])))
    with pytest.raises(OSRefusal) as exc:
        move.move_file(secure_root(top, deny=["app/*/x"]), "app", "other")
    assert "folder 'app' cannot be listed (no such file or directory)" in exc.value.message
    monkeypatch.undo()
    assert (top / "app" / "sub").is_dir() and not (top / "other").exists()


def test_a_folder_no_rule_could_reach_is_never_opened(tmp_path, monkeypatch):
    """Failing closed costs nothing where no pattern reaches: such folders are not looked at,
    so one that cannot be read does not stop the move."""
    top = tmp_path / "r"
    (top / "app" / "lib").mkdir(parents=True)
    (top / "src").mkdir()
    _fail_at(monkeypatch, "opened", "lib", errno.EACCES)
    root = secure_root(top, deny=["app/config/prod.yaml"])  # reaches app/config only
    move.move_file(root, "app", "other")
    _fail_at(monkeypatch, "opened", "src", errno.EACCES)
    move.move_file(root, "src", "src2")
    assert (top / "other" / "lib").is_dir() and (top / "src2").is_dir()


@pytest.mark.parametrize("held", [0, 1, 32])
def test_the_check_descends_wide_and_deep_trees_with_few_descriptors(tmp_path, monkeypatch, held):
    """Subfolders open from a held parent handle, or from the root's handle once MAX_HELD
    parents are held: either way every folder is looked into and no descriptor is left."""
    top = tmp_path / "r"
    for i in range(40):  # wider than MAX_HELD
        (top / "app" / f"w{i:02}" / "a" / "b").mkdir(parents=True)
    (top / "app" / "w39" / "a" / "b" / "prod.yaml").write_text("SECRET")
    monkeypatch.setattr(exposure, "MAX_HELD", held)
    root = secure_root(top, deny=["app/*/prod.yaml"])
    fds = _open_under(top)
    with pytest.raises(DeniedName):
        move.move_file(root, "app", "other")
    (top / "app" / "w39" / "a" / "b" / "prod.yaml").unlink()
    move.move_file(root, "app", "other")
    assert _open_under(top) == fds
    assert (top / "other" / "w39" / "a" / "b").is_dir()


# Which handle each folder is opened from: the move's `app` (from its parent), then
# app/{x,y,z}, each holding one folder `s`, listed in name order. A listed folder's handle is
# held (at most MAX_HELD at once) until its last queued subfolder is open, then closed; a
# subfolder whose parent was not held is opened from the root's handle by its path.
HELD_OPENS = [
    (0, [("parent", "app"), ("root", "app/x"), ("root", "app/y"), ("root", "app/z"),
         ("root", "app/x/s"), ("root", "app/y/s"), ("root", "app/z/s")]),
    # app held; x and y not (app is); z held once app's last subfolder is open
    (1, [("parent", "app"), ("parent", "app/x"), ("parent", "app/y"), ("parent", "app/z"),
         ("root", "app/x/s"), ("root", "app/y/s"), ("parent", "app/z/s")]),
    (2, [("parent", "app"), ("parent", "app/x"), ("parent", "app/y"), ("parent", "app/z"),
         ("parent", "app/x/s"), ("root", "app/y/s"), ("parent", "app/z/s")]),
    (32, [("parent", "app"), ("parent", "app/x"), ("parent", "app/y"), ("parent", "app/z"),
          ("parent", "app/x/s"), ("parent", "app/y/s"), ("parent", "app/z/s")]),
]


def _record_opens(monkeypatch, root) -> list[tuple[str, str]]:
    """("parent" or "root", path) of each folder the check opens, in order; listings sorted."""
    real_open, real_list, real_subdir = exposure.open_folder, exposure.list_folder, root.open_subdir
    where: dict[int, str] = {}  # each open descriptor's path
    opens: list[tuple[str, str]] = []

    def open_folder(name, dir_fd):
        fd = real_open(name, dir_fd)
        where[fd] = f"{where[dir_fd]}/{name}" if dir_fd in where else name
        opens.append(("parent", where[fd]))
        return fd

    def open_subdir(parts):
        fd = real_subdir(parts)
        where[fd] = "/".join(parts)
        opens.append(("root", where[fd]))
        return fd

    monkeypatch.setattr(exposure, "open_folder", open_folder)
    monkeypatch.setattr(exposure, "list_folder", lambda fd: sorted(real_list(fd)))
    monkeypatch.setattr(root, "open_subdir", open_subdir)
    return opens


@pytest.mark.parametrize(("held", "expected"), HELD_OPENS)
def test_each_folder_is_opened_from_its_held_parent_while_max_held_allow(
    tmp_path, monkeypatch, held, expected
):
    top = tmp_path / "r"
    for sub in ("x", "y", "z"):
        (top / "app" / sub / "s").mkdir(parents=True)
    root = secure_root(top, deny=["app/*/*/prod.yaml"])
    monkeypatch.setattr(exposure, "MAX_HELD", held)
    opens = _record_opens(monkeypatch, root)
    fds = _open_under(top)
    move.move_file(root, "app", "other")
    assert opens == expected
    assert _open_under(top) == fds and (top / "other" / "z" / "s").is_dir()


def test_at_most_32_parent_handles_are_held_at_once(tmp_path, monkeypatch):
    """app/w00..w39, each holding `a`: app and w00..w30 are held (32 handles), so the `a` of
    w31..w38 are opened from the root's handle; w39 is held again once app is closed."""
    top = tmp_path / "r"
    for i in range(40):
        (top / "app" / f"w{i:02}" / "a").mkdir(parents=True)
    root = secure_root(top, deny=["app/*/*/prod.yaml"])
    opens = _record_opens(monkeypatch, root)
    move.move_file(root, "app", "other")
    assert [p for how, p in opens if how == "root"] == [f"app/w{i}/a" for i in range(31, 39)]
    assert len(opens) == 81


# --- the exposure check against a reference: every entry below the moved folder, walked in full


class _Listing:
    """os.scandir with its entries in a chosen order (the kernel's order is unspecified)."""

    def __init__(self, order: str) -> None:
        self.order, self.real = order, os.scandir

    def __call__(self, fd):
        with self.real(fd) as it:
            entries = sorted(it, key=lambda e: e.name, reverse=self.order == "reversed")
        return contextlib.nullcontext(iter(entries))


def _exposed(root_dir: Path, rules: DenyRules, old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    """Something below `old` denied there by a whole-path rule (not by one of its names, which
    move with it) and not denied at the same place below `new`."""
    for here, dirs, files in os.walk(root_dir.joinpath(*old)):
        below = Path(here).relative_to(root_dir.joinpath(*old)).parts
        for name in dirs + files:
            rel = (*below, name)
            if any(rules.name(p) is not None for p in rel):
                continue
            if rules.prefixes((*old, *rel)) is not None and rules.prefixes((*new, *rel)) is None:
                return True
    return False


TREE_NAMES = ["config", "prod.yaml", "lib", ".env", "a"]
DENY_SETS = [
    ["config/prod.yaml"],
    ["*/config/prod.yaml"],
    ["src/config/*", "src/a"],
    ["src/*/prod.yaml", "dst/lib/prod.yaml"],
    ["src/lib", "dst/lib", "src/a"],  # lib denied at both places, a only where it is
]


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    # Up to 7 levels: a check that stops descending early passes every shallower tree.
    paths=st.lists(st.lists(st.sampled_from(TREE_NAMES), min_size=1, max_size=7), max_size=8),
    deny=st.sampled_from(DENY_SETS),
    order=st.sampled_from(["sorted", "reversed"]),
    into=st.sampled_from(["dst", "dst2", "src2"]),
)
# A sibling listed after an entry denied by its name, or after one denied at both places:
@example(paths=[[".env"], ["config", "prod.yaml"]], deny=DENY_SETS[3], order="sorted", into="dst")
@example(paths=[["lib"], ["a"]], deny=DENY_SETS[4], order="reversed", into="dst")
# Denied three and six levels down (`*` in a deny pattern crosses `/`):
@example(paths=[["a", "config", "prod.yaml"]], deny=DENY_SETS[3], order="sorted", into="dst")
@example(paths=[["lib"], ["a", "lib", "a", "config", "lib", "prod.yaml"]], deny=DENY_SETS[3],
         order="reversed", into="dst2")
def test_the_exposure_check_agrees_with_a_full_walk(tmp_path_factory, monkeypatch, paths, deny,
                                                    order, into):
    """Refused exactly when a full walk finds an entry that would leave its rule, whatever the
    order the folders list their entries in."""
    top = tmp_path_factory.mktemp("move")
    (top / "src").mkdir()
    for parts in paths:  # the last name is a file, unless a longer path made it a folder
        target = (top / "src").joinpath(*parts)
        with contextlib.suppress(FileExistsError, NotADirectoryError):  # a file in the way
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_text("x")
    root = secure_root(top, deny=deny)
    expected = _exposed(top, root.rules, ("src",), (into,))
    with monkeypatch.context() as m:
        m.setattr(move.os, "scandir", _Listing(order))
        try:
            move.move_file(root, "src", into)
            refused = False
        except DeniedName:
            refused = True
    assert refused == expected
    assert (top / into).is_dir() != refused and (top / "src").is_dir() == refused


def _open_under(top: Path) -> set[str]:
    """This process's descriptors on `top` or below: another test's objects collected meanwhile
    may close descriptors of their own, which a count of every descriptor would take for ours."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target == str(top) or target.startswith(f"{top}/"):
                found.add(f"{fd} {target}")
    return found


def test_the_exposing_refusal_keeps_its_pattern() -> None:
    assert exposure.exposes("s/a", "d/b", "config/prod.yaml").pattern == "config/prod.yaml"


def test_a_link_to_a_folder_inside_a_moved_folder_is_never_entered(tmp_path):
    top = tmp_path / "r"
    (top / "app").mkdir(parents=True)
    (top / "elsewhere").mkdir()
    (top / "elsewhere" / "secret").write_text("s")
    (top / "app" / "lnk").symlink_to("../elsewhere")  # a rule reaches below its name
    root = secure_root(top, deny=["app/lnk/secret"])
    move.move_file(root, "app", "moved")
    assert (top / "moved" / "lnk").is_symlink()


def test_a_folder_that_cannot_be_listed_is_named_whatever_its_path_holds(tmp_path, monkeypatch):
    top = tmp_path / "r"
    src = top / "a XX" / "XX b"  # spaces, and the text of no separator, are parts of names
    (src / "config").mkdir(parents=True)
    (src / "config" / "prod.yaml").write_text("SECRET")
    root = secure_root(top, deny=["a XX/XX b/*/prod.yaml"])
    _fail_at(monkeypatch, "listed", "config", errno.EACCES)
    with pytest.raises(OSRefusal) as exc:
        move.move_file(root, "a XX/XX b", "other")
    assert "folder 'a XX/XX b/config' cannot be listed" in exc.value.message



# --- what a move over a file returns, and what it keeps -----------------------------------


def test_a_move_over_a_file_keeps_it_as_a_version_recorded_as_a_move(tmp_path):
    top = tmp_path / "r"
    (top / "d").mkdir(parents=True)
    (top / "a.txt").write_text("NEW")
    (top / "d" / "b.txt").write_text("OLD")
    res = move.move_file(secure_root(top), "a.txt", "d/b.txt", overwrite=True)
    assert (res.source, res.destination, res.type, res.replaced, res.note) == (
        "a.txt", "d/b.txt", "file", True, None)
    assert res.kept_version is not None and res.kept_version.startswith(".mcp-trash/")
    assert (top / res.kept_version).read_text() == "OLD"
    record = json.loads((top / res.kept_version).with_name(".mcp-trash").read_text())
    assert (record["kind"], record["path"], record["name"], record["op"]) == (
        "version", "d/b.txt", "b.txt", "move")
    assert (top / "d" / "b.txt").read_text() == "NEW" and not (top / "a.txt").exists()


def test_a_move_over_a_file_too_big_to_keep_says_so(tmp_path):
    top = tmp_path / "r"
    top.mkdir()
    (top / "a.txt").write_text("NEW")
    (top / "b.txt").write_text("OLD!")
    root = secure_root(top)
    root.policy.recovery = Recovery(keep_versions=True, version_max_bytes=3)
    res = move.move_file(root, "a.txt", "b.txt", overwrite=True)
    assert (res.replaced, res.kept_version, res.note) == (True, None, (
        "the previous version (4 bytes) was not kept: above this root's limit for a kept "
        "version (3 bytes)"))
    assert (top / "b.txt").read_text() == "NEW"


def test_a_move_to_a_free_name_replaces_nothing(tmp_path):
    top = tmp_path / "r"
    top.mkdir()
    (top / "a.txt").write_text("A")
    res = move.move_file(secure_root(top), "a.txt", "b.txt")
    assert (res.replaced, res.kept_version, res.note) == (False, None, None)


def test_overwriting_something_other_than_a_file_is_refused(tmp_path):
    top = tmp_path / "r"
    top.mkdir()
    (top / "a.txt").write_text("A")
    os.mkfifo(top / "pipe")
    with pytest.raises(NotARegularFile) as exc:
        move.move_file(secure_root(top), "a.txt", "pipe", overwrite=True)
    assert exc.value.message == "not a regular file: destination 'pipe'"
    assert (top / "a.txt").exists() and stat.S_ISFIFO(os.lstat(top / "pipe").st_mode)


# --- durability and keys: both folders synced, both entries' keys held ----------------------


@pytest.mark.parametrize(("source", "destination", "synced"), [
    ("s/a.txt", "d/a.txt", ["d", "s"]),  # the destination's folder first
    ("s/a.txt", "s/b.txt", ["s"]),  # one folder: synced once
])
def test_a_move_syncs_each_folder_it_changed(tmp_path, monkeypatch, source, destination, synced):
    top = tmp_path / "r"
    (top / "s").mkdir(parents=True)
    (top / "d").mkdir()
    (top / "s" / "a.txt").write_text("A")
    seen: list[str] = []
    real = move.fsync_dir

    def fsync_dir(fd: int) -> None:
        seen.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(move, "fsync_dir", fsync_dir)
    move.move_file(secure_root(top), source, destination)
    assert seen == synced


@pytest.mark.parametrize("held", ["source", "destination"])
def test_a_move_waits_while_either_entry_is_being_changed(tmp_path, held):
    """The key of the source's name, or of the destination's, held by another change: the
    move waits for it, then goes on."""
    top = tmp_path / "r"
    (top / "s").mkdir(parents=True)
    (top / "d").mkdir()
    (top / "s" / "a.txt").write_text("A")
    folder, name = ("s", "a.txt") if held == "source" else ("d", "b.txt")
    st = os.stat(top / folder)
    done: list[object] = []
    with locks.TABLE.hold([("0name", st.st_dev, st.st_ino, name)]):
        worker = threading.Thread(target=lambda: done.append(
            move.move_file(secure_root(top), "s/a.txt", "d/b.txt")))
        worker.start()
        worker.join(timeout=1.0)
        assert worker.is_alive() and (top / "s" / "a.txt").exists()
    worker.join(timeout=30)
    assert done and (top / "d" / "b.txt").read_text() == "A"


# --- the depth bound: exactly MAX_DEPTH is allowed, and the refusals say what and why -------


def _chain(top: Path, levels: int) -> str:
    """A folder `levels` deep below `top` (made with the system's own calls): its path."""
    rel = "/".join(["d"] * levels)
    top.joinpath(*rel.split("/")).mkdir(parents=True)
    return rel


def _too_deep(src: str, dst: str, what: str) -> str:
    return (f"cannot move '{src}' to '{dst}': {what} would lie more than {MAX_DEPTH} levels "
            f"below the root (the server makes paths at most {MAX_DEPTH} levels deep); "
            "nothing was moved")


@pytest.fixture
def deep_top(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    top.mkdir()
    _chain(top, MAX_DEPTH - 1)  # d/…/d: its entries lie at MAX_DEPTH
    (top / "f.txt").write_text("F")
    (top / "empty").mkdir()
    (top / "full").mkdir()
    (top / "full" / "x").write_text("x")
    return top


AT_MAX = "/".join(["d"] * (MAX_DEPTH - 1))


@pytest.mark.parametrize("source", ["f.txt", "empty"])
def test_a_file_or_an_empty_folder_may_be_moved_to_exactly_max_depth(deep_top, source):
    move.move_file(secure_root(deep_top), source, f"{AT_MAX}/{source}")
    assert deep_top.joinpath(*AT_MAX.split("/"), source).exists()


@pytest.mark.parametrize(("source", "destination", "what"), [
    ("f.txt", f"{AT_MAX}/d/f.txt", "it"),  # the entry itself one past
    ("full", f"{AT_MAX}/full", "what it holds"),  # full at MAX_DEPTH, its x one past
])
def test_a_move_past_max_depth_says_what_would_lie_too_deep(deep_top, source, destination,
                                                           what):
    (deep_top.joinpath(*AT_MAX.split("/"), "d")).mkdir()
    with pytest.raises(TooDeep) as exc:
        move.move_file(secure_root(deep_top), source, destination)
    assert exc.value.message == _too_deep(source, destination, what)
    assert (deep_top / source).exists()


def test_a_folder_too_big_to_check_for_depth_is_refused(deep_top, monkeypatch):
    monkeypatch.setattr(move, "MAX_CHECKED", 0)
    with pytest.raises(BadArgument) as exc:
        move.move_file(secure_root(deep_top), "full", "d/full")
    assert exc.value.message == (
        "'full' holds more than 0 entries: too many to check how deep they would lie at "
        "'d/full'; move its parts instead"
    )
    assert (deep_top / "full" / "x").exists()


def test_a_folder_whose_depth_cannot_be_checked_is_refused(deep_top, monkeypatch):
    def refuse(fd):
        raise PermissionError(errno.EACCES, "denied")

    monkeypatch.setattr("app.security.walk.os.scandir", refuse)
    with pytest.raises(OSRefusal) as exc:
        move.move_file(secure_root(deep_top), "full", "d/full")
    monkeypatch.undo()
    assert exc.value.message == (
        "cannot move 'full' to 'd/full': a folder inside it cannot be opened or listed "
        "(permission denied by the operating system), so how deep it goes cannot be checked; "
        "nothing was moved"
    )
    assert (deep_top / "full" / "x").exists()


def test_a_folder_moved_into_its_own_subtree_is_told_so_before_any_other_check(tmp_path):
    """`d` holds entries MAX_DEPTH levels down, so it could not go one level deeper either:
    the own-subtree refusal comes first, before anything is walked."""
    top = tmp_path / "r"
    top.mkdir()
    _chain(top, MAX_DEPTH)
    with pytest.raises(BadArgument) as exc:
        move.move_file(secure_root(top), "d", "d/d/moved")
    assert exc.value.message == "cannot move 'd' into its own subtree ('d/d/moved')"
