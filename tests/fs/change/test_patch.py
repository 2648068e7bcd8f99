"""apply_patch in process, on real folders: every operation in both formats, all or nothing
(a bad hunk changes nothing; a failure midway puts back what was done), permissions, deny
rules, depth, dry runs, kept versions, encodings and line endings kept, and the answer's
diff applied to the old tree giving the new one."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import (
    AlreadyExists,
    BadArgument,
    DeniedName,
    EscapesRoot,
    FileChanged,
    IsSymlink,
    LoomError,
    NotFound,
    PermissionRefused,
    TooDeep,
)
from app.fs.change.match import all_crlf
from app.fs.change.patch import PatchResult, apply_patch, with_diff
from app.fs.control import NoControl
from app.fs.text import udiff
from app.security.paths import MAX_DEPTH
from app.security.resolve import Root
from tests.fs.conftest import Cancelled
from tests.kit import secure_root

APP = 'class A:\n    def greet(self):\n        print("Hi")\n        return 1\n'


def v4a(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def tree(top: Path) -> dict[str, bytes]:
    """Every file under `top` (the trash left out) and its bytes."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != ".mcp-trash")
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(top))] = p.read_bytes()
    return out


@pytest.fixture
def top(tmp_path: Path) -> Path:
    top = tmp_path / "r"
    (top / "src").mkdir(parents=True)
    (top / "src" / "app.py").write_text(APP)
    (top / "notes.txt").write_text("one\ntwo\nthree\n")
    (top / "old.txt").write_text("bye\n")
    return top


def run(root: Root, patch: str, dry_run: bool = False, control: object = None) -> PatchResult:
    done, steps = apply_patch(root, patch, dry_run=dry_run,
                              control=control or NoControl())  # type: ignore[arg-type]
    return with_diff(done, steps, 100_000, NoControl())


def summary(res: PatchResult) -> list[tuple[str, str, str | None]]:
    return [(f.path, f.change, f.moved_from) for f in res.files]


# -- every operation ---------------------------------------------------------------------

FOUR_OPS_V4A = v4a(
    "*** Add File: new/deep/hello.txt", "+Hello", "+ world",
    "*** Update File: src/app.py", "*** Move to: src/main.py", "@@ def greet(self):",
    '-        print("Hi")', '+        print("Hello")',
    "*** Delete File: old.txt",
    "*** Update File: notes.txt", "@@", " one", "-two", "+2",
)

FOUR_OPS_GIT = """\
diff --git a/new/deep/hello.txt b/new/deep/hello.txt
new file mode 100644
--- /dev/null
+++ b/new/deep/hello.txt
@@ -0,0 +1,2 @@
+Hello
+ world
diff --git a/src/app.py b/src/main.py
similarity index 80%
rename from src/app.py
rename to src/main.py
--- a/src/app.py
+++ b/src/main.py
@@ -2,3 +2,3 @@ class A:
     def greet(self):
-        print("Hi")
+        print("Hello")
         return 1
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/notes.txt b/notes.txt
--- a/notes.txt
+++ b/notes.txt
@@ -1,3 +1,3 @@
 one
-two
+2
 three
"""


@pytest.mark.parametrize(("patch", "line"), [(FOUR_OPS_V4A, 3), (FOUR_OPS_GIT, 2)],
                         ids=["v4a", "git"])
def test_add_move_delete_and_update_in_one_patch(top: Path, patch: str, line: int) -> None:
    res = run(secure_root(top), patch)
    assert summary(res) == [("new/deep/hello.txt", "added", None),
                            ("src/main.py", "moved", "src/app.py"),
                            ("old.txt", "deleted", None), ("notes.txt", "modified", None)]
    assert tree(top) == {
        "new/deep/hello.txt": b"Hello\n world\n",
        "src/main.py": APP.replace('"Hi"', '"Hello"').encode(),
        "notes.txt": b"one\n2\nthree\n",
    }
    added, moved, deleted, modified = res.files
    assert added.kept_version is None and added.matches == []
    assert [(m.line, m.match) for m in moved.matches] == [(line, "exact")]
    for f, old in ((moved, APP), (deleted, "bye\n"), (modified, "one\ntwo\nthree\n")):
        assert f.kept_version is not None and f.kept_version.startswith(".mcp-trash/")
        assert (top / f.kept_version).read_text() == old


def test_the_answers_diff_applied_to_the_old_tree_gives_the_new_one(
    top: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(top, copy)
    res = run(secure_root(top), FOUR_OPS_V4A)
    again = run(secure_root(copy), res.diff)
    assert tree(copy) == tree(top)
    assert summary(again) == summary(res)


def test_a_move_without_hunks_is_a_rename_and_keeps_the_file(top: Path) -> None:
    before = os.stat(top / "notes.txt").st_ino
    res = run(secure_root(top), v4a("*** Update File: notes.txt", "*** Move to: a/b/n.txt"))
    assert summary(res) == [("a/b/n.txt", "moved", "notes.txt")]
    assert os.stat(top / "a/b/n.txt").st_ino == before and not (top / "notes.txt").exists()
    assert res.files[0].kept_version is None
    assert "rename from notes.txt\nrename to a/b/n.txt\n" in res.diff


def test_hunks_are_placed_by_the_levels_and_say_how(top: Path) -> None:
    res = run(secure_root(top), v4a("*** Update File: src/app.py", "@@ def greet(self):",
                                    '-print("Hi")', '+print("Hello")', "+x = 2"))
    assert [(m.line, m.match) for m in res.files[0].matches] == [(3, "indentation")]
    assert (top / "src/app.py").read_text() == APP.replace(
        '        print("Hi")\n', '        print("Hello")\n        x = 2\n')


def test_unified_line_numbers_choose_among_places_that_match(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x\nsame\ny\nsame\nz\n")
    run(secure_root(tmp_path), "--- a/f\n+++ b/f\n@@ -4 +4 @@\n-same\n+SECOND\n")
    assert (tmp_path / "f").read_text() == "x\nsame\ny\nSECOND\nz\n"


def test_v4a_refuses_a_hunk_that_matches_twice(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("same\nsame\n")
    with pytest.raises(BadArgument, match=r"nothing was changed: 'f' hunk 1 of 1 "):
        run(secure_root(tmp_path), v4a("*** Update File: f", "@@", "-same", "+x"))
    assert (tmp_path / "f").read_text() == "same\nsame\n"


def test_two_update_sections_of_one_file_apply_in_turn(top: Path) -> None:
    run(secure_root(top), v4a("*** Update File: notes.txt", "@@", "-three", "+3",
                              "*** Update File: notes.txt", "@@", "-one", "+1"))
    assert (top / "notes.txt").read_text() == "1\ntwo\n3\n"


def test_end_of_file_and_a_missing_final_newline_kept(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("a\nb\na\nb")
    run(secure_root(tmp_path), v4a("*** Update File: f", "@@", " a", "-b", "+B", "+c",
                                   "*** End of File"))
    assert (tmp_path / "f").read_text() == "a\nb\na\nB\nc"


def test_insertion_after_a_scope_line(top: Path) -> None:
    run(secure_root(top), v4a("*** Update File: notes.txt", "@@ two", "+two and a half"))
    assert (top / "notes.txt").read_text() == "one\ntwo\ntwo and a half\nthree\n"


@pytest.mark.parametrize(("raw", "new"), [
    (b"a\r\nb\r\nc\r\n", b"a\r\nB\r\nc\r\n"),
    ("\ufeffa\nb\nc\n".encode(), "\ufeffa\nB\nc\n".encode()),
    ("\ufeffa\r\nb\r\nc\r\n".encode("utf-16-le"), "\ufeffa\r\nB\r\nc\r\n".encode("utf-16-le")),
    ("a\nb\nc\n".encode("gb18030") + "é\n".encode("gb18030"),
     "a\nB\nc\n".encode("gb18030") + "é\n".encode("gb18030")),
])
def test_encoding_bom_and_line_endings_kept(tmp_path: Path, raw: bytes, new: bytes) -> None:
    (tmp_path / "f").write_bytes(raw)
    run(secure_root(tmp_path), v4a("*** Update File: f", "@@", " a", "-b", "+B"))
    assert (tmp_path / "f").read_bytes() == new


# -- all or nothing ----------------------------------------------------------------------


def test_one_bad_hunk_changes_nothing(top: Path) -> None:
    before = tree(top)
    bad = FOUR_OPS_V4A.replace(" one\n-two", " one\n-no such line")
    with pytest.raises(BadArgument, match=r"'notes.txt' hunk 1 of 1 .*not found"):
        run(secure_root(top), bad)
    assert tree(top) == before
    assert not (top / ".mcp-trash").exists()  # not even a version kept


class CancelOnceChanged:
    """A client that goes away once `path` no longer holds `old`: midway through writing."""

    def __init__(self, path: Path) -> None:
        self.path, self.old = path, path.read_bytes()

    def check(self) -> None:
        if not self.path.exists() or self.path.read_bytes() != self.old:
            raise Cancelled()

    def progress(self, *a: object) -> None:
        pass


def test_a_failure_midway_puts_back_every_file_written(top: Path) -> None:
    before = tree(top)
    # Cancelled once the third file (old.txt) is in the trash: the add, the move and the
    # delete are put back, the fourth file never written.
    with pytest.raises(Cancelled):
        run(secure_root(top), FOUR_OPS_V4A, control=CancelOnceChanged(top / "old.txt"))
    assert tree(top) == before
    assert not (top / "new").exists()  # the folders the add made are gone too


def test_nothing_is_written_on_a_dry_run(top: Path) -> None:
    before = tree(top)
    res = run(secure_root(top), FOUR_OPS_V4A, dry_run=True)
    assert res.dry_run and tree(top) == before and not (top / ".mcp-trash").exists()
    assert [f.kept_version for f in res.files] == [None] * 4
    assert "+Hello\n" in res.diff and "-two\n+2\n" in res.diff


# -- refusals ----------------------------------------------------------------------------

REFUSALS = [
    (v4a("*** Add File: notes.txt", "+x"), AlreadyExists, "'notes.txt' already exists"),
    (v4a("*** Delete File: gone.txt"), NotFound, "no such file: 'gone.txt'"),
    (v4a("*** Update File: gone.txt", "@@", "-a", "+b"), NotFound, "no such file: 'gone.txt'"),
    (v4a("*** Update File: notes.txt", "*** Move to: old.txt"), AlreadyExists,
     "'old.txt' already exists"),
    (v4a("*** Update File: notes.txt", "*** Move to: notes.txt"), BadArgument, "moved to itself"),
    (v4a("*** Delete File: notes.txt", "*** Update File: notes.txt", "@@", "-one", "+1"),
     BadArgument, "'notes.txt' is named by two sections of the patch (lines 4 and 5)"),
    (v4a("*** Add File: .env", "+SECRET=1"), DeniedName, "matches deny pattern '.env'"),
    (v4a("*** Update File: notes.txt", "*** Move to: .git/x"), DeniedName, "'.git'"),
    (v4a("*** Add File: ../escape.txt", "+x"), EscapesRoot, "escapes the root"),
    (v4a("*** Update File: link.txt", "@@", "-one", "+1"), IsSymlink, "symbolic link"),
    (v4a("*** Delete File: src"), LoomError, "is a directory"),
    (v4a("*** Add File: " + "/".join(["d"] * MAX_DEPTH) + "/f.txt", "+x"), TooDeep,
     f"at most {MAX_DEPTH} levels deep"),
    (v4a("*** Update File: notes.txt", "*** Move to: " + "/".join(["d"] * MAX_DEPTH) + "/n"),
     TooDeep, f"at most {MAX_DEPTH} levels deep"),
    ("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-not what it holds\n", BadArgument,
     "'old.txt' (patch line 1) does not hold what the patch removes"),
]


@pytest.mark.parametrize(("patch", "kind", "why"), REFUSALS)
def test_refusals_change_nothing(top: Path, patch: str, kind: type[LoomError], why: str) -> None:
    (top / "link.txt").symlink_to("notes.txt")
    # every refused patch also carries a change that would have been fine on its own
    patch = patch.replace("*** Begin Patch\n", "*** Begin Patch\n*** Add File: fine.txt\n+ok\n"
                          ) if patch.startswith("*** Begin") else patch
    before = tree(top)
    with pytest.raises(kind, match=why.replace("(", r"\(").replace(")", r"\)")):
        run(secure_root(top), patch)
    assert tree(top) == before


@pytest.mark.parametrize(("permissions", "patch", "why"), [
    (["read", "write"], v4a("*** Update File: notes.txt", "@@", "-one", "+1",
                            "*** Delete File: old.txt"), "not delete"),
    (["read", "delete"], v4a("*** Delete File: old.txt", "*** Add File: n.txt", "+x"),
     "not write"),
    (["read"], v4a("*** Update File: notes.txt", "@@", "-one", "+1"), "not write"),
])
def test_each_operation_needs_its_permission(top: Path, permissions: list[str], patch: str,
                                             why: str) -> None:
    before = tree(top)
    with pytest.raises(PermissionRefused, match=why):
        run(secure_root(top, permissions=permissions), patch)
    assert tree(top) == before


def test_a_delete_only_patch_needs_only_delete(top: Path) -> None:
    res = run(secure_root(top, permissions=["read", "delete"]), v4a("*** Delete File: old.txt"))
    assert summary(res) == [("old.txt", "deleted", None)] and not (top / "old.txt").exists()


def test_a_deny_rule_of_the_root_applies_to_every_path(top: Path) -> None:
    root = secure_root(top, deny=["*.secret"])
    for patch in (v4a("*** Add File: a.secret", "+x"),
                  v4a("*** Update File: notes.txt", "*** Move to: n.secret")):
        with pytest.raises(DeniedName, match=r"\*\.secret"):
            run(root, patch)
    assert not (top / "a.secret").exists() and (top / "notes.txt").exists()


# -- properties: the repo's own diffs applied --------------------------------------------

LINES = st.lists(st.sampled_from(["a", "b", "", "  a", "x y", "@@", "*** x", "\\q", "a\r"]),
                 max_size=20)


def text_of(lines: list[str], eol: bool) -> str:
    return "\n".join(lines) + ("\n" if lines and eol else "")


def made_diff(old: str, new: str) -> list[str]:
    kept, _, _ = udiff.write(udiff.hunks(old, new, udiff.Pairs(), NoControl()), None)
    return kept


def patched(old: str, patch: str) -> tuple[str | None, str]:
    """(the file after the patch, or None when it was refused; the file on disk after)."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "f.txt").write_bytes(old.encode())
        try:
            run(secure_root(d), patch)
            got: str | None = (Path(d) / "f.txt").read_bytes().decode()
        except BadArgument:
            got = None
        return got, (Path(d) / "f.txt").read_bytes().decode()


@settings(max_examples=150, deadline=None)
@given(LINES, LINES, st.booleans(), st.booleans())
def test_a_unified_diff_of_two_texts_turns_the_one_into_the_other(
    a: list[str], b: list[str], a_eol: bool, b_eol: bool
) -> None:
    old, new = text_of(a, a_eol), text_of(b, b_eol)
    if old == new or all_crlf(old):  # a file CRLF throughout keeps its line ends
        return
    got, _ = patched(old, "--- a/f.txt\n+++ b/f.txt\n" + "".join(made_diff(old, new)))
    assert got == new


@settings(max_examples=150, deadline=None)
@given(LINES, LINES)
def test_a_v4a_patch_lands_where_it_was_made_or_changes_nothing(
    a: list[str], b: list[str]
) -> None:
    """The same hunks without their line numbers: placed only where each matches once, so
    the patch gives the new text or is refused with the file as it was; never elsewhere."""
    old, new = text_of(a, True), text_of(b, True)
    if old == new or all_crlf(old):
        return
    body = ["@@" if x.startswith("@@") else x.rstrip("\n") for x in made_diff(old, new)]
    got, after = patched(old, v4a("*** Update File: f.txt", *body))
    assert got == new or (got is None and after == old)


# -- placement corners -------------------------------------------------------------------

PLACEMENTS = [
    # (file, patch, file after)
    ("class A:\n    def f(self):\n        return 1\nclass B:\n    def f(self):\n        return 1\n",
     v4a("*** Update File: f", "@@ class B:", "@@     def f(self):", "-        return 1",
         "+        return 2"),
     "class A:\n    def f(self):\n        return 1\n"
     "class B:\n    def f(self):\n        return 2\n"),
    ("a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+new\n", "a\nb\nnew\nc\n"),
    ("a\nb\nc\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+top\n", "top\na\nb\nc\n"),
    ("a\nb\n", v4a("*** Update File: f", "@@", "+end"), "a\nb\nend\n"),
    ("a\nb", "--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"),
    ("a\r\nb\r\n", v4a("*** Update File: f", "@@ a", "+a2"), "a\r\na2\r\nb\r\n"),
    # blank lines at the hunk's ends are not part of the match (line_endings level)
    ("x\ny\nz\n", v4a("*** Update File: f", "@@", "", " y", "-z", "+Z", ""), "x\ny\nZ\n"),
]


@pytest.mark.parametrize(("old", "patch", "new"), PLACEMENTS)
def test_placement_corners(tmp_path: Path, old: str, patch: str, new: str) -> None:
    (tmp_path / "f").write_bytes(old.encode())
    run(secure_root(tmp_path), patch)
    assert (tmp_path / "f").read_bytes() == new.encode()


@pytest.mark.parametrize(("patch", "why"), [
    (v4a("*** Update File: f", "@@ def nowhere():", "-a", "+b"),
     "hunk 1 of 1 (patch line 3): its scope line 'def nowhere():'"),
    (v4a("*** Update File: f", "@@", "-b", "+B", "@@", "-a", "+A"),
     "hunk 2 of 2 (patch line 6): its old lines not found"),  # hunks are placed in order
    ("--- a/f\n+++ b/f\n@@ -9,0 +10 @@\n+x\n", "the file has fewer than 9 lines"),
    (v4a("*** Update File: f", "@@", "-a", "+A", "*** Update File: link_f", "@@", "-b", "+B"),
     "'f' is named by two sections of the patch"),
])
def test_placement_refusals_name_the_hunk(tmp_path: Path, patch: str, why: str) -> None:
    (tmp_path / "f").write_text("a\nb\n")
    (tmp_path / "link_f").symlink_to("f")
    if "link_f" in patch:  # a link to the file is refused for what it is
        why = "is a symbolic link"
    with pytest.raises(LoomError, match=re.escape(why)):
        run(secure_root(tmp_path), patch)
    assert (tmp_path / "f").read_text() == "a\nb\n"


def test_two_paths_to_one_file_through_a_folder_link_are_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("a\nb\n")
    (tmp_path / "alias").symlink_to("d")
    with pytest.raises(BadArgument, match="named by two sections"):
        run(secure_root(tmp_path), v4a("*** Update File: d/f", "@@", "-a", "+A",
                                       "*** Update File: alias/f", "@@", "-b", "+B"))
    assert (tmp_path / "d" / "f").read_text() == "a\nb\n"


def test_a_rename_and_a_replacement_are_put_back_too(top: Path) -> None:
    before = tree(top)
    patch = v4a("*** Update File: notes.txt", "@@", "-one", "+1",
                "*** Update File: old.txt", "*** Move to: x/y/old.txt",
                "*** Add File: fine.txt", "+ok")
    with pytest.raises(Cancelled):  # after the rename, before the add
        run(secure_root(top), patch, control=CancelOnceChanged(top / "old.txt"))
    assert tree(top) == before and not (top / "x").exists()


class WriteWhenChanged:
    """Another program writing `other` once `first` has been changed by the patch."""

    def __init__(self, first: Path, other: Path) -> None:
        self.first, self.old, self.other = first, first.read_bytes(), other

    def check(self) -> None:
        if self.first.read_bytes() != self.old and self.other.read_text() != "theirs\n":
            self.other.write_text("theirs\n")

    def progress(self, *a: object) -> None:
        pass


def test_a_file_changed_by_another_program_midway_undoes_the_patch(top: Path) -> None:
    patch = v4a("*** Update File: notes.txt", "@@", "-one", "+1",
                "*** Update File: old.txt", "@@", "-bye", "+BYE")
    with pytest.raises(FileChanged, match="'old\\.txt' changed since the patch read it"):
        run(secure_root(top), patch, control=WriteWhenChanged(top / "notes.txt", top / "old.txt"))
    assert (top / "notes.txt").read_text() == "one\ntwo\nthree\n"  # put back
    assert (top / "old.txt").read_text() == "theirs\n"  # theirs, never overwritten
