"""Patch texts parsed: V4A's grammar and its corners, unified diffs as diff, diff -ruN and git
write them, the bounds, malformed input refused naming its line; and unified diffs made by
the repo's own writer parse back to hunks that rebuild both texts."""

from __future__ import annotations

import difflib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument, TooLarge
from app.fs.change import patch_types, patch_unified
from app.fs.change.patch_parse import parse, split_lines
from app.fs.change.patch_types import ADD, DELETE, UPDATE, FilePatch, Hunk
from app.fs.change.patch_unified import is_epoch, unquote
from app.fs.control import NoControl
from app.fs.text import udiff


def v4a(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def only(text: str) -> FilePatch:
    files = parse(text).files
    assert len(files) == 1
    return files[0]


# -- V4A ---------------------------------------------------------------------------------

V4A_CASES = [
    # (patch body, (op, path, move_to), [(old, new, scopes, at_end), ...])
    (["*** Add File: a.txt", "+one", "+two"], (ADD, "a.txt", None),
     [((), ("one", "two"), (), False)]),
    # an added line that starts with a space keeps it
    (["*** Add File: a.py", "+ indented", "+"], (ADD, "a.py", None),
     [((), (" indented", ""), (), False)]),
    (["*** Add File: empty.txt"], (ADD, "empty.txt", None), []),
    (["*** Delete File: old.txt"], (DELETE, "old.txt", None), []),
    # @@ without a scope line
    (["*** Update File: a.py", "@@", " a", "-b", "+B"], (UPDATE, "a.py", None),
     [(("a", "b"), ("a", "B"), (), False)]),
    # @@ with a scope line
    (["*** Update File: a.py", "@@ def f():", "-    return 1", "+    return 2"],
     (UPDATE, "a.py", None), [(("    return 1",), ("    return 2",), ("def f():",), False)]),
    # stacked scopes, outermost first
    (["*** Update File: a.py", "@@ class A:", "@@     def f(self):", "-x", "+y"],
     (UPDATE, "a.py", None), [(("x",), ("y",), ("class A:", "def f(self):"), False)]),
    # the first hunk may omit its @@
    (["*** Update File: a.py", " a", "-b", "+c"], (UPDATE, "a.py", None),
     [(("a", "b"), ("a", "c"), (), False)]),
    # *** End of File anchors the hunk at the file's end
    (["*** Update File: a.py", "@@", " last", "+after", "*** End of File"],
     (UPDATE, "a.py", None), [(("last",), ("last", "after"), (), True)]),
    # two hunks; an empty line is an empty context line
    (["*** Update File: a.py", "@@", "-a", "+A", "", "@@ def g():", "-b", "+B"],
     (UPDATE, "a.py", None),
     [(("a", ""), ("A", ""), (), False), (("b",), ("B",), ("def g():",), False)]),
    # a move with hunks, and a move alone (a rename)
    (["*** Update File: a.py", "*** Move to: b/c.py", "@@", "-x", "+y"],
     (UPDATE, "a.py", "b/c.py"), [(("x",), ("y",), (), False)]),
    (["*** Update File: a.py", "*** Move to: b.py"], (UPDATE, "a.py", "b.py"), []),
    # pure insertion, context only
    (["*** Update File: a.py", "@@ import os", "+import re"], (UPDATE, "a.py", None),
     [((), ("import re",), ("import os",), False)]),
    (["*** Update File: a.py", "@@", " same"], (UPDATE, "a.py", None),
     [(("same",), ("same",), (), False)]),
    # marker lines may carry trailing spaces; paths are trimmed
    (["*** Update File:   sp ace.py  ", "@@   ", "-a", "+b"], (UPDATE, "sp ace.py", None),
     [(("a",), ("b",), (), False)]),
]


@pytest.mark.parametrize(("body", "section", "hunks"), V4A_CASES)
def test_v4a_sections_parse_to_their_ops_and_hunks(
    body: list[str], section: tuple[str, str, str | None],
    hunks: list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]],
) -> None:
    got = only(v4a(*body))
    assert (got.op, got.path, got.move_to) == section
    assert [(h.old, h.new, h.scopes, h.at_end) for h in got.hunks] == hunks


def test_v4a_several_files_in_order_with_their_header_lines() -> None:
    patch = parse(v4a("*** Add File: hello.txt", "+Hello world", "*** Update File: src/app.py",
                      "*** Move to: src/main.py", "@@ def greet():", '-print("Hi")',
                      '+print("Hello, world!")', "*** Delete File: obsolete.txt"))
    assert patch.format == "v4a"
    assert [(f.op, f.path, f.line) for f in patch.files] == [
        (ADD, "hello.txt", 2), (UPDATE, "src/app.py", 4), (DELETE, "obsolete.txt", 9)]
    assert patch.files[0].content == "Hello world\n"
    assert patch.files[1].hunks[0].line == 6


def test_v4a_texts_end_each_line_with_a_newline() -> None:
    hunk = only(v4a("*** Update File: a", "@@", " a", "-b", "+c")).hunks[0]
    assert (hunk.old_text, hunk.new_text) == ("a\nb\n", "a\nc\n")


V4A_REFUSALS = [
    (["*** Add File: a.txt", " one"], 3, "every line starts with '+'"),
    (["*** Add File: a.txt", "+one", "", "+two"], 4, "every line starts with '+'"),
    (["*** Add File:"], 2, "names no path"),
    (["*** Update File: a.py"], 2, "has no hunk"),
    (["*** Update File: a.py", "@@"], 3, "empty hunk"),
    (["*** Update File: a.py", "@@", "@@", "-a"], 3, "empty hunk: '@@' followed by another"),
    (["*** Update File: a.py", "@@", "*** End of File"], 3, "empty hunk"),
    (["*** Update File: a.py", "@@", "-a", "*** End of File", "-b"], 6, "expected '@@'"),
    (["*** Update File: a.py", "@@", "-a", "!bang"], 5, "starts with ' ', '-' or '+'"),
    (["*** Delete File: a.py", "-a"], 3, "expected '*** Add File:'"),
    (["*** Frobnicate File: a.py"], 2, "expected '*** Add File:'"),
    (["garbage"], 2, "got 'garbage'"),
]


@pytest.mark.parametrize(("body", "line", "why"), V4A_REFUSALS)
def test_v4a_malformed_sections_are_refused_naming_their_line(
    body: list[str], line: int, why: str
) -> None:
    with pytest.raises(BadArgument, match=f"^patch line {line}: .*{_re(why)}"):
        parse(v4a(*body))


@pytest.mark.parametrize(("text", "why"), [
    ("*** Begin Patch\n*** Add File: a\n+x\n",
     "patch line 3: the patch ends without '*** End Patch'"),
    ("*** Begin Patch\n", "patch line 1: the patch ends without"),
    ("*** Begin Patch\n*** End Patch\n", "the patch changes no file"),
    ("*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore\n", "patch line 4: text after"),
    ("*** Update File: a\n@@\n-a\n+b\n*** End Patch\n", "patch line 1: a V4A patch starts with"),
    ("", "the patch is empty"),
    ("\n  \n\n", "the patch is empty"),
    ("hello\nworld\n", "patch line 1: no file in the patch"),
])
def test_truncated_or_missing_envelopes_and_garbage_are_refused(text: str, why: str) -> None:
    with pytest.raises(BadArgument, match=_re(why)):
        parse(text)


def test_a_crlf_patch_reads_as_the_same_patch() -> None:
    body = ("*** Update File: a.py", "@@ def f():", " a", "-b", "+c", "*** Add File: n", "+x")
    assert parse(v4a(*body).replace("\n", "\r\n")) == parse(v4a(*body))
    uni = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert parse(uni.replace("\n", "\r\n")) == parse(uni)


def test_a_carriage_return_on_some_lines_only_is_the_texts_own() -> None:
    hunk = only("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\r\n+b\r\n").hunks[0]
    assert (hunk.old, hunk.new) == (("a\r",), ("b\r",))


def test_a_markdown_fence_around_the_patch_is_dropped() -> None:
    got = parse("```diff\n" + v4a("*** Delete File: a") + "```\n")
    assert [(f.op, f.path, f.line) for f in got.files] == [(DELETE, "a", 3)]


def test_lines_are_cut_at_newlines_only() -> None:
    assert split_lines("a\x0bb\u2028c\nd\x1c\n") == ["a\x0bb\u2028c", "d\x1c"]


# -- unified -----------------------------------------------------------------------------

DIFF_U = """\
--- lib/a.py\t2026-12-01 10:00:00.000000000 +0100
+++ lib/a.py\t2026-12-02 10:00:00.000000000 +0100
@@ -1,4 +1,4 @@ def f():
 one
-two
+TWO
 three
 four
@@ -10 +10,2 @@
-ten
+ten
+eleven
"""

DIFF_RUN = """\
Only in old: gone.txt
diff -ruN old/keep.txt new/keep.txt
--- old/keep.txt\t2026-12-01 10:00:00.000000000 +0000
+++ new/keep.txt\t2026-12-02 10:00:00.000000000 +0000
@@ -1 +1 @@
-a
+b
diff -ruN old/added.txt new/added.txt
--- old/added.txt\t1970-01-01 00:00:00.000000000 +0000
+++ new/added.txt\t2026-12-02 10:00:00.000000000 +0000
@@ -0,0 +1,2 @@
+x
+y
diff -ruN old/sub/removed.txt new/sub/removed.txt
--- old/sub/removed.txt\t2026-12-01 10:00:00.000000000 +0000
+++ new/sub/removed.txt\t1969-12-31 19:00:00.000000000 -0500
@@ -1 +0,0 @@
-z
"""

GIT = """\
From 1234 Mon Sep 17 00:00:00 2001
Subject: [PATCH] things

 x.py | 2 +-
diff --git a/x.py b/x.py
index 83db48f..bf269f4 100644
--- a/x.py
+++ b/x.py
@@ -1,3 +1,3 @@
 a
-b
+B
 c
diff --git a/old name.txt b/new name.txt
similarity index 100%
rename from old name.txt
rename to new name.txt
diff --git a/m.py b/n.py
similarity index 80%
rename from m.py
rename to n.py
index 1..2 100644
--- a/m.py
+++ b/n.py
@@ -1 +1 @@
-m
+n
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+new
\\ No newline at end of file
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 1..0
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-bye
-now
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"
index 1..2 100644
--- "a/caf\\303\\251.txt"
+++ "b/caf\\303\\251.txt"
@@ -1 +1 @@
-a
+b
--\x20
2.43.0
"""


def sections(text: str) -> list[tuple[str, str, str | None, int]]:
    return [(f.op, f.path, f.move_to, len(f.hunks)) for f in parse(text).files]


def test_diff_u_with_dates_and_two_hunks() -> None:
    got = only(DIFF_U)
    assert (got.op, got.path) == (UPDATE, "lib/a.py")
    first, second = got.hunks
    assert (first.old_start, first.new_start, first.old, first.new) == (
        1, 1, ("one", "two", "three", "four"), ("one", "TWO", "three", "four"))
    assert (second.old_start, second.old, second.new) == (10, ("ten",), ("ten", "eleven"))


def test_diff_ruN_epoch_headers_are_added_and_removed_files() -> None:
    assert sections(DIFF_RUN) == [
        (UPDATE, "keep.txt", None, 1), (ADD, "added.txt", None, 1),
        (DELETE, "sub/removed.txt", None, 1)]
    assert parse(DIFF_RUN).files[1].content == "x\ny\n"


def test_git_diff_renames_new_deleted_quoted_and_mode_only() -> None:
    assert sections(GIT) == [
        (UPDATE, "x.py", None, 1),
        (UPDATE, "old name.txt", "new name.txt", 0),
        (UPDATE, "m.py", "n.py", 1),
        (ADD, "new.txt", None, 1),
        (ADD, "empty.txt", None, 0),
        (DELETE, "gone.txt", None, 1),
        # run.sh: a mode change only, left out
        (UPDATE, "café.txt", None, 1),
    ]
    files = parse(GIT).files
    assert files[3].content == "new"  # no newline at its end
    assert files[4].content == ""
    assert files[5].hunks[0].old_text == "bye\nnow\n"


NO_EOL_CASES = [
    # (hunk body, old_text, new_text)
    (["@@ -1 +1 @@", "-a", "\\ No newline at end of file", "+a"], "a", "a\n"),
    (["@@ -1 +1 @@", "-a", "+a", "\\ No newline at end of file"], "a\n", "a"),
    (["@@ -1,2 +1,2 @@", "-a", "+b", " c", "\\ No newline at end of file"], "a\nc", "b\nc"),
    (["@@ -1 +1 @@", "-a", "\\ Kein Zeilenumbruch am Dateiende.", "+b",
      "\\ Kein Zeilenumbruch am Dateiende."], "a", "b"),
]


@pytest.mark.parametrize(("body", "old", "new"), NO_EOL_CASES)
def test_no_newline_at_end_of_file_marks_its_side(body: list[str], old: str, new: str) -> None:
    hunk = only("\n".join(["--- a/x", "+++ b/x", *body]) + "\n").hunks[0]
    assert (hunk.old_text, hunk.new_text) == (old, new)


@pytest.mark.parametrize(("old", "new", "path"), [
    ("a/x.py", "b/x.py", "x.py"),
    ("x.py", "x.py", "x.py"),
    ("x.py.orig", "x.py", "x.py"),
    ("src/x.py", "src/x.py", "src/x.py"),
    ("old/src/x.py", "new/src/x.py", "src/x.py"),
    ("a/one.py", "b/two.py", "two.py"),
])
def test_prefixes_dropped_only_when_both_names_carry_one(old: str, new: str, path: str) -> None:
    assert only(f"--- {old}\n+++ {new}\n@@ -1 +1 @@\n-a\n+b\n").path == path


def test_a_bare_at_at_takes_the_lines_up_to_the_next_header() -> None:
    text = "--- a/x\n+++ b/x\n@@\n a\n\n-b\n+c\n\n\n--- a/y\n+++ b/y\n@@ @@\n-y\n+Y\n"
    first, second = parse(text).files
    assert (first.hunks[0].old, first.hunks[0].new) == (("a", "", "b"), ("a", "", "c"))
    assert first.hunks[0].old_start is None
    assert (second.path, second.hunks[0].old) == ("y", ("y",))


UNIFIED_REFUSALS = [
    # counts that lie: too few lines, then too many
    ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n", 3, "truncated"),
    ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\nnot a hunk line\n", 7,
     "the hunk at line 3 ends 1 old and 1 new line(s) short"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n", 6, "goes on past its header's counts"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n+c\n", 5, "more old lines than its header"),
    ("--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n+a\n+b\n", 5, "more new lines than its header"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n-b\n+c\n", 6,
     "more old lines"),
    ("--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n\\ No newline at end of file\n-b\n+c\n", 6,
     "a line after '\\ No newline at end of file'"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", 4, "follows no line"),
    ("--- a/x\n+++ b/x\n@@ -1,a +1 @@\n-a\n+b\n", 3, "malformed hunk header"),
    ("--- a/x\n+++ b/x\n@@\n\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", 3, "empty hunk"),
    ("--- a/x\n+++ b/x\n", 1, "'x' has no hunk"),
    ("@@ -1 +1 @@\n-a\n+b\n", 1, "a hunk before any file header"),
    ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", 1, "both names"),
    ("--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", 1, "an added file, yet a hunk of it"),
    ("--- a/x\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", 1, "a removed file, yet a hunk of it"),
    ("diff --git a/i.png b/i.png\nindex 1..2\nBinary files a/i.png and b/i.png differ\n", 3,
     "binary patches are not supported"),
    ("diff --git a/x b/y\nsimilarity index 90%\ncopy from x\ncopy to y\n", 1, "copies"),
]


@pytest.mark.parametrize(("text", "line", "why"), UNIFIED_REFUSALS)
def test_malformed_unified_diffs_are_refused_naming_their_line(
    text: str, line: int, why: str
) -> None:
    with pytest.raises(BadArgument, match=f"^patch line {line}: .*{_re(why)}"):
        parse(text)


@pytest.mark.parametrize(("date", "epoch"), [
    ("1970-01-01 00:00:00.000000000 +0000", True),
    ("1970-01-01 00:00:00 +0000", True),
    ("1970-01-01 01:00:00.000000000 +0100", True),
    ("1969-12-31 19:00:00.000000000 -0500", True),
    ("Thu Jan  1 00:00:00 1970", True),
    ("1970-01-01 00:00:00.000000001 +0000", False),
    ("1970-01-01 00:00:01 +0000", False),
    ("2026-12-03 12:00:00.000000000 +0000", False),
    ("", False),
])
def test_epoch_dates_in_any_zone(date: str, epoch: bool) -> None:
    assert is_epoch(date) is epoch


def test_an_epoch_dated_side_with_lines_is_a_real_file() -> None:
    text = ("--- a/x\t1970-01-01 00:00:00 +0000\n+++ b/x\t1970-01-01 00:00:00 +0000\n"
            "@@ -1 +1 @@\n-a\n+b\n")
    assert only(text).op == UPDATE


@pytest.mark.parametrize(("quoted", "name"), [
    ('"a/caf\\303\\251"', "a/café"), ('"a/t\\tb"', "a/t\tb"), ('"a/q\\"x"', 'a/q"x'),
    ("plain", "plain"), ('"', '"'),
])
def test_git_quoted_names(quoted: str, name: str) -> None:
    assert unquote(quoted) == name


# -- bounds ------------------------------------------------------------------------------


def test_a_patch_of_one_mebibyte_is_accepted() -> None:
    line = "+" + "x" * 1023
    text = v4a("*** Add File: big.txt", *[line] * 1024)
    assert len(text.encode()) > 1 << 20
    assert len(only(text).content) == 1024 * 1024


def test_bounds_on_size_files_and_hunks(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TooLarge, match=f"at most {patch_types.MAX_PATCH_BYTES}"):
        parse(v4a("*** Add File: a", "+" + "x" * patch_types.MAX_PATCH_BYTES))
    monkeypatch.setattr("app.fs.change.patch_parse.MAX_FILES", 2)
    with pytest.raises(TooLarge, match="more than 2 file sections"):
        parse(v4a(*["*** Delete File: f"] * 3))
    with pytest.raises(TooLarge, match="3 file sections; at most 2"):
        parse("".join(f"--- a/{k}\n+++ b/{k}\n@@ -1 +1 @@\n-a\n+b\n" for k in range(3)))
    monkeypatch.setattr("app.fs.change.patch_parse.MAX_HUNKS", 2)
    with pytest.raises(TooLarge, match="more than 2 hunks"):
        parse(v4a("*** Update File: a", *["@@", "-a", "+b"] * 3))
    with pytest.raises(TooLarge, match="3 hunks; at most 2"):
        parse("--- a/x\n+++ b/x\n" + "@@ -1 +1 @@\n-a\n+b\n" * 3)


# -- property: the repo's own unified diffs parse back ------------------------------------

LINES = st.lists(st.sampled_from(["a", "b", "c", "", " x", "-y", "+z", "@@", "\\q", "a\r"]),
                 max_size=25)


def made_patch(old: str, new: str) -> str:
    kept, cut, _ = udiff.write(udiff.hunks(old, new, udiff.Pairs(), NoControl()), None)
    assert not cut
    return "--- a/f.txt\n+++ b/f.txt\n" + "".join(kept)


def rebuilt(old: str, hunks: tuple[Hunk, ...]) -> str:
    """`old` with the hunks applied by their line numbers, each checked to be there."""
    src = udiff.lines(old)
    out: list[str] = []
    pos = 0  # lines of src used
    for h in hunks:
        assert h.old_start is not None
        at = h.old_start - 1 if h.old else h.old_start
        out += src[pos:at]
        assert "".join(src[at:at + len(h.old)]) == h.old_text, "old lines are where they say"
        out.append(h.new_text)
        pos = at + len(h.old)
    return "".join(out + src[pos:])


@settings(max_examples=300, deadline=None)
@given(LINES, LINES, st.booleans(), st.booleans())
def test_the_repo_unified_diffs_parse_back_to_hunks_rebuilding_both_texts(
    a: list[str], b: list[str], a_eol: bool, b_eol: bool
) -> None:
    old = "\n".join(a) + ("\n" if a and a_eol else "")
    new = "\n".join(b) + ("\n" if b and b_eol else "")
    if old == new:
        return
    got = only(made_patch(old, new))
    assert got.op == UPDATE and got.path == "f.txt"
    assert rebuilt(old, got.hunks) == new


def test_the_property_also_holds_against_difflib_headers() -> None:
    old, new = "a\nb\nc\nd\n", "a\nB\nc\nd\ne\n"
    text = "".join(difflib.unified_diff(udiff.lines(old), udiff.lines(new), "a/f", "b/f"))
    assert rebuilt(old, only(text).hunks) == new


def _re(text: str) -> str:
    return re.escape(text)


PIECES = st.sampled_from([
    "*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Update File: a",
    "*** Delete File: a", "*** Move to: b", "*** End of File", "@@", "@@ def f():",
    "@@ -1,2 +1,2 @@", "@@ -0,0 +1 @@", "@@ -1 +0,0 @@", "--- a/x", "+++ b/x", "--- /dev/null",
    "+++ /dev/null", "diff --git a/x b/x", "diff --git a/x b/y", "rename from x", "rename to y",
    "new file mode 100644", "deleted file mode 100644", "\\ No newline at end of file",
    " ctx", "-old", "+new", "", "```", "garbage", "-- ", '--- "a/q\\"', "\r",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=14))
def test_any_text_parses_or_is_refused_with_a_line(pieces: list[str]) -> None:
    try:
        patch = parse("\n".join(pieces) + "\n")
    except BadArgument as exc:
        assert exc.message.startswith(("patch line ", "the patch ")), exc.message
        return
    for f in patch.files:
        assert f.op in (ADD, DELETE, UPDATE) and f.path
        assert f.op != ADD or not any(h.old for h in f.hunks)


# -- unified diffs' names, one function at a time ----------------------------------------


@pytest.mark.parametrize(("head", "pair"), [
    ("a/x b/x", ("a/x", "b/x")),
    ("a/my file b/my file", ("a/my file", "b/my file")),
    ("x.py x.py", ("x.py", "x.py")),  # --no-prefix
    ("old/d/x new/d/x", ("old/d/x", "new/d/x")),
    ("a/m.py b/n.py", ("a/m.py", "b/n.py")),  # a rename: the rests differ
    ("a/m x.py b/n y.py", ("a/m x.py", "b/n y.py")),
    ('"a/t\\"q" "b/t\\"q"', ('a/t"q', 'b/t"q')),
    ('"a/caf\\303\\251" "b/caf\\303\\251"', ("a/café", "b/café")),
    ('"a/x\\\\" "b/x\\\\"', ("a/x\\", "b/x\\")),
    ('"a/unterminated b/x', None),
    ('"a/x"b/x', None),
    ("foo bar", None),
    ("single", None),
])
def test_the_two_names_of_a_diff_git_line(head: str, pair: tuple[str, str] | None) -> None:
    assert patch_unified._git_pair(head) == pair


@pytest.mark.parametrize(("quoted", "name"), [
    ('"\\a\\b\\t\\n\\v\\f\\r\\"\\\\"', '\a\b\t\n\v\f\r"\\'),
    ('"\\101\\102C"', "ABC"),
    ('"\\q\\9"', "q9"),  # an escape git never writes: the character itself
    ('"end\\"', 'end\\'),  # a backslash last: kept
    ('"\\303"', "\ufffd"),  # a lone byte of UTF-8: replaced, never a crash
    ('"\ud800"', "\ufffd\ufffd\ufffd"),  # a lone surrogate kept through the bytes
    ('""', ""),
    ('"x', '"x'),
    ('x"', 'x"'),
])
def test_git_quoting_undone(quoted: str, name: str) -> None:
    assert unquote(quoted) == name


@pytest.mark.parametrize(("a", "b", "prefixes"), [
    ("a/x", "b/x", ("a/", "b/")),
    ("old/d/x", "new/d/x", ("old/", "new/")),
    ("a/x", "b/y", ("a/", "b/")),
    ("c/x", "d/y", ("", "")),
    ("x", "x", ("", "")),
    ("d/x", "d/x", ("", "")),
    ("/x", "/x", ("", "")),  # an empty first folder is none
])
def test_prefixes_of_two_names(a: str, b: str, prefixes: tuple[str, str]) -> None:
    assert patch_unified._prefixes(a, b) == prefixes


@pytest.mark.parametrize(("text", "path"), [
    ("--- a/x  \n+++ b/x  \n@@ -1 +1 @@\n-a\n+b\n", "x"),  # trailing spaces dropped
    ("--- a/x\t2026-01-01\n+++ b/x\t2026-01-02\n@@ -1 +1 @@\n-a\n+b\n", "x"),
    ("diff --git a/x b/x\nnew file mode 100644\n", "x"),
    ('diff --git "a/sp ace" "b/sp ace"\nnew file mode 100644\n', "sp ace"),
    ("diff --git x x\nnew file mode 100644\n", "x"),
    ("diff --git a/gone b/gone\ndeleted file mode 100644\n", "gone"),
    ("diff --git a/d/x b/d/x\nindex 1..2\n--- a/d/x\n+++ b/d/x\n@@ -1 +1 @@\n-a\n+b\n", "d/x"),
    ("diff --git x y\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n",
     "x"),  # git's line tells nothing: git's usual b/ dropped
])
def test_which_file_a_section_names(text: str, path: str) -> None:
    assert only(text).path == path


def test_sections_and_hunks_carry_their_patch_lines() -> None:
    files = parse("junk\n" + GIT.split("diff --git a/old name.txt")[0]
                  + "--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n").files
    assert [(f.line, [h.line for h in f.hunks]) for f in files] == [(6, [10]), (15, [17])]


@pytest.mark.parametrize(("text", "why"), [
    ("diff --git foo bar\nnew file mode 100644\n", "patch line 1: cannot tell which file "
                                                  "this section is about"),
    ("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n"
     "@@ -0,0 +2 @@\n+b\n", "patch line 1: 'x' is an added file, yet a hunk of it has old lines"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n",
     "patch line 4: '\\ No newline at end of file' follows no line"),
    ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\nzz\n", "patch line 5: the hunk at line 3 ends 1 "
                                                   "old and 1 new line(s) short of its header's "
                                                   "counts (got 'zz')"),
])
def test_unified_refusals_word_for_word(text: str, why: str) -> None:
    with pytest.raises(BadArgument) as got:
        parse(text)
    assert got.value.message == why


@pytest.mark.parametrize(("body", "old", "new", "eol"), [
    (["@@ -1,2 +1,2 @@", " a", " b", "\\ No newline at end of file"], ("a", "b"), ("a", "b"),
     (False, False)),
    (["@@ -1 +1 @@", "-a", "+b"], ("a",), ("b",), (True, True)),
    (["@@ -1 +1,2 @@", "-a", "+b", "+c", "\\ No newline at end of file"], ("a",), ("b", "c"),
     (True, False)),
])
def test_a_hunks_sides_and_their_final_newlines(
    body: list[str], old: tuple[str, ...], new: tuple[str, ...], eol: tuple[bool, bool]
) -> None:
    hunk = only("\n".join(["--- a/x", "+++ b/x", *body]) + "\n").hunks[0]
    assert (hunk.old, hunk.new, (hunk.old_eol, hunk.new_eol)) == (old, new, eol)


@pytest.mark.parametrize(("date", "epoch"), [
    ("1970-01-01 01:30:00 +0130", True), ("1970-01-01 00:30:00 +0130", False),
    ("1969-12-31 22:30:00 -0130", True),
])
def test_epoch_in_zones_with_minutes(date: str, epoch: bool) -> None:
    assert is_epoch(date) is epoch


@pytest.mark.parametrize(("text", "why"), [
    ("Binary files a/i.png and b/i.png differ\n",
     "patch line 1: binary patches are not supported"),
    ("x\n@@ -1 +1 @@\n", "patch line 2: a hunk before any file header ('--- a/x' then "
                         "'+++ b/x')"),
    ("just words\n", "patch line 1: no file in the patch: expected a unified diff ('--- a/x', "
                     "'+++ b/x', '@@ -1,2 +1,2 @@') or a V4A patch ('*** Begin Patch')"),
    ("--- /dev/null\n+++ /dev/null\n", "patch line 1: both names of this file are /dev/null"),
    ("--- a/x\n+++ b/x\n@@ -1,z +1 @@\n",
     "patch line 3: malformed hunk header '@@ -1,z +1 @@'; expected '@@ -l,s +l,s @@'"),
    ("--- a/x\n+++ b/x\n@@ -1,3 +1,2 @@\n a\n-b\n", "patch line 3: the hunk is truncated: the "
                                                  "patch ends 1 old and 1 new line(s) short of "
                                                  "its header's counts"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n b\n", "patch line 6: the hunk at line 3 goes on "
                                                  "past its header's counts (-1,1 +1,1)"),
    ("--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n-a\n-b\n+b\n+c\n+d\n-e\n",
     "patch line 9: the hunk at line 3 goes on past its header's counts (-1,2 +1,3)"),
    ("--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n\\ No newline at end of file\n-b\n+c\n",
     "patch line 6: a line after '\\ No newline at end of file' on the same side"),
    ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n",
     "patch line 5: the hunk at line 3 has more old lines than its header counts"),
])
def test_more_unified_refusals_word_for_word(text: str, why: str) -> None:
    with pytest.raises(BadArgument) as got:
        parse(text)
    assert got.value.message == why


@pytest.mark.parametrize(("text", "hunk"), [
    # an empty line inside a counted hunk is an empty context line
    ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", (("a", "", "b"), ("a", "", "c"))),
    # a bare @@ with additions only, and one whose blank line is followed by more hunk lines
    ("--- a/x\n+++ b/x\n@@\n+x\n", ((), ("x",))),
    ("--- a/x\n+++ b/x\n@@\n-a\n\n+c\n", (("a", ""), ("", "c"))),
    ("--- a/x\n+++ b/x\n@@\n-a\n\n\\ No newline at end of file\n", (("a", ""), ("",))),
    # a bare hunk stops at the next section's header
    ("--- a/x\n+++ b/x\n@@\n-a\n+b\ndiff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n",
     (("a",), ("b",))),
])
def test_hunk_lines_as_read(text: str, hunk: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    got = parse(text).files[0].hunks[0]
    assert (got.old, got.new) == hunk


@pytest.mark.parametrize(("text", "section"), [
    ("--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n", (ADD, "x")),
    ("--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", (DELETE, "x")),
    ("--- /dev/null\n+++ x\n@@ -0,0 +1 @@\n+a\n", (ADD, "x")),
    ("--- c/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n", (DELETE, "c/x")),
])
def test_a_lone_name_against_dev_null(text: str, section: tuple[str, str]) -> None:
    got = only(text)
    assert (got.op, got.path) == section
