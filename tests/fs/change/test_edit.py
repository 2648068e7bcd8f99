"""edit_file through the MCP SDK client: uniqueness, order, all-or-nothing, diff,
encodings and line endings kept, dry run, lost-update guard, refusals."""

from __future__ import annotations

import codecs
import hashlib
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.change.edit import TextEdit, apply_tracked, decode
from app.tools import render_files
from tests.fs.conftest import MAX_OUTPUT, MAX_READ, call, refusal, temp_leftovers


def edits(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"old_text": o, "new_text": n} for o, n in pairs]


# -- refusals --------------------------------------------------------------------------

EDIT_REFUSALS = [
    # uniqueness: the error says 0 or the count
    ({"path": "notes.txt", "edits": edits(("four", "4"))},
     "edit: old_text not found in 'notes.txt' (0 occurrences)"),
    ({"path": "notes.txt", "edits": edits(("o", "0"))},
     "edit: old_text occurs 2 times in 'notes.txt'; it must occur exactly once"),
    ({"path": "rep.txt", "edits": edits(("ab", "x"))}, "old_text occurs 3 times"),
    ({"path": "rep.txt", "edits": edits(("aa", "x"))}, "old_text occurs 2 times"),  # overlapping
    # all or nothing: the second edit fails, the first is not applied either
    ({"path": "notes.txt", "edits": edits(("one", "1"), ("one", "uno"))},
     "edit 2 of 2: old_text not found in 'notes.txt' (0 occurrences) (edits apply in order"),
    ({"path": "notes.txt", "edits": edits(("one", "1"), ("two", "2"), ("e", "E"))},
     "edit 3 of 3: old_text occurs 2 times"),
    # permission, confinement, deny
    ({"root": "ref", "path": "doc.md", "edits": edits(("Doc", "D"))},
     "root 'ref' (role reference) grants [read], not write"),
    ({"path": "../outside/secret.txt", "edits": edits(("outside", "x"))}, "path escapes the root"),
    ({"path": "link_out/secret.txt", "edits": edits(("outside", "x"))}, "path escapes the root"),
    ({"path": ".env", "edits": edits(("SECRET", "X"))}, "matches deny pattern '.env'"),
    ({"path": ".git/config", "edits": edits(("core", "x"))}, "matches deny pattern '.git'"),
    ({"path": "gitlink/config", "edits": edits(("core", "x"))}, "matches deny pattern '.git'"),
    ({"path": "secret_link", "edits": edits(("SECRET", "X"))}, "is a symbolic link"),
    ({"path": "link_file", "edits": edits(("one", "1"))}, "is a symbolic link"),
    # what is there
    ({"path": "missing.txt", "edits": edits(("a", "b"))},
     "no such file or directory: 'missing.txt'"),
    ({"path": "dir", "edits": edits(("a", "b"))}, "not a regular file: 'dir' is a directory"),
    ({"path": "fifo", "edits": edits(("a", "b"))}, "not a regular file"),
    ({"path": "bin.dat", "edits": edits(("a", "b"))}, "'bin.dat' looks binary"),
    ({"path": "latin1.txt", "edits": edits(("caf", "x"))}, "not text in a supported encoding"),
    ({"path": "big.txt", "edits": edits(("x", "y"))},
     f"'big.txt' is {MAX_READ + 1} bytes, above this root's max_read_bytes ({MAX_READ})"),
    ({"path": "almost.txt", "edits": edits(("!", "!!"))},
     f"the edited file would be {MAX_READ + 1} bytes"),
    # lost-update guard
    ({"path": "notes.txt", "edits": edits(("one", "1")), "expected_sha256": "f" * 64},
     "file changed since it was read"),
    ({"path": "gone.txt", "edits": edits(("one", "1")), "expected_sha256": "f" * 64},
     "file changed since it was read"),
    # bad arguments at the edge
    ({"path": "notes.txt", "edits": []}, "edits"),
    ({"path": "notes.txt", "edits": edits(("", "x"))}, "old_text"),
]


@pytest.mark.parametrize("content", ["", "one\n"])
async def test_an_empty_old_text_is_an_argument_error_not_an_edit(disk, server, content):
    # An empty old_text "occurs" everywhere (or once in an empty file, where it would
    # be applied): the input check refuses it before the file is looked at.
    (disk.ws / "e.txt").write_text(content)
    before = disk.snapshot()
    is_error, text = await call(server, "edit_file", path="e.txt", edits=edits(("", "x")))
    assert disk.snapshot() == before
    assert is_error and "old_text" in text
    assert "occur" not in text and "e.txt" not in text  # not the edit's own verdict


def add_edit_fixtures(disk) -> None:
    ws = disk.ws
    (ws / "rep.txt").write_text("ab ab ab aaa\n")
    (ws / "bin.dat").write_bytes(b"a\x00b" * 10)
    (ws / "latin1.txt").write_bytes("café crème\n".encode("latin-1") + b"\xff\xfe\xfd")
    (ws / "big.txt").write_bytes(b"x" * (MAX_READ + 1))
    (ws / "almost.txt").write_bytes(b"!" + b"." * (MAX_READ - 1))


@pytest.mark.parametrize(("args", "message"), EDIT_REFUSALS)
async def test_edit_refusal_names_the_problem_and_changes_nothing(disk, server, args, message):
    add_edit_fixtures(disk)
    assert message in await refusal(disk, server, "edit_file", **args)


async def test_edit_of_a_file_changed_by_someone_else_is_refused(disk, server):
    digest = hashlib.sha256((disk.ws / "notes.txt").read_bytes()).hexdigest()
    (disk.ws / "notes.txt").write_text("one\nTWO\nthree\n")
    is_error, text = await call(server, "edit_file", path="notes.txt",
                                edits=edits(("one", "1")), expected_sha256=digest)
    assert is_error and text == "file changed since it was read"
    assert (disk.ws / "notes.txt").read_text() == "one\nTWO\nthree\n"


# -- what it does -------------------------------------------------------------------------


async def test_edits_apply_in_order_and_return_a_unified_diff(disk, server):
    target = disk.ws / "notes.txt"
    target.chmod(0o640)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    # the second edit finds text the first one wrote
    is_error, res = await call(server, "edit_file", path="notes.txt", expected_sha256=digest,
                               edits=edits(("two", "deux"), ("deux\nthree", "deux\ntrois")))
    assert not is_error, res
    assert target.read_text() == "one\ndeux\ntrois\n"
    assert res["written"] is True and res["dry_run"] is False and res["encoding"] == "utf-8"
    assert res["diff"] == (
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+deux\n+trois\n"
    )
    assert res["sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
    assert res["diff_truncated"] is False and res["note"] is None
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert temp_leftovers(disk.ws) == []


async def test_dry_run_returns_the_diff_and_writes_nothing(disk, server):
    before = disk.snapshot()
    is_error, res = await call(server, "edit_file", path="notes.txt", dry_run=True,
                               edits=edits(("two", "2")))
    assert not is_error, res
    assert res["written"] is False and res["dry_run"] is True
    assert "-two\n+2\n" in res["diff"]
    assert "dry run: nothing was written" in res["note"]
    assert res["sha256"] == hashlib.sha256(b"one\n2\nthree\n").hexdigest()
    assert disk.snapshot() == before


async def test_edit_through_an_in_root_directory_link(disk, server):
    is_error, res = await call(server, "edit_file", path="link_in/a.txt",
                               edits=edits(("alpha", "ALPHA")))
    assert not is_error, res
    assert res["path"] == "link_in/a.txt"
    assert (disk.ws / "dir" / "a.txt").read_text() == "ALPHA\n"


async def test_sourcecode_root_edits(disk, server):
    is_error, res = await call(server, "edit_file", root="src", path="main.py",
                               edits=edits(("hello", "bye")))
    assert not is_error, res
    assert (disk.src / "main.py").read_text() == "print('bye')\n"


async def test_an_edit_that_changes_nothing_writes_nothing(disk, server):
    ino = (disk.ws / "notes.txt").stat().st_ino
    is_error, res = await call(server, "edit_file", path="notes.txt", edits=edits(("two", "two")))
    assert not is_error, res
    assert res["written"] is False and "nothing was written" in res["note"]
    assert (disk.ws / "notes.txt").stat().st_ino == ino


# -- encodings and line endings ------------------------------------------------------------

ENCODED = [
    ("utf-8-sig", codecs.BOM_UTF8, "utf-8"),
    ("utf-16-le", codecs.BOM_UTF16_LE, "utf-16-le"),
    ("utf-16-be", codecs.BOM_UTF16_BE, "utf-16-be"),
    ("utf-32-le", codecs.BOM_UTF32_LE, "utf-32-le"),
    ("gb18030", b"", "gb18030"),
]


@pytest.mark.parametrize(("label", "bom", "codec"), ENCODED)
async def test_edit_keeps_the_file_encoding_and_bom(disk, server, label, bom, codec):
    text = "第一行 naïve\nzweite Zeile\n"
    (disk.ws / "enc.txt").write_bytes(bom + text.encode(codec))
    is_error, res = await call(server, "edit_file", path="enc.txt",
                               edits=edits(("zweite", "二番目")))
    assert not is_error, res
    assert res["encoding"] == label
    expected = bom + text.replace("zweite", "二番目").encode(codec)
    assert (disk.ws / "enc.txt").read_bytes() == expected


async def test_crlf_file_keeps_crlf_when_the_edit_says_lf(disk, server):
    (disk.ws / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    is_error, res = await call(server, "edit_file", path="win.txt",
                               edits=edits(("a\nb", "a\nB\nb2")))
    assert not is_error, res
    assert (disk.ws / "win.txt").read_bytes() == b"a\r\nB\r\nb2\r\nc\r\n"


async def test_mixed_line_endings_are_left_alone(disk, server):
    (disk.ws / "mixed.txt").write_bytes(b"a\r\nb\nc\n")
    is_error, res = await call(server, "edit_file", path="mixed.txt", edits=edits(("b\nc", "x\ny")))
    assert not is_error, res
    assert (disk.ws / "mixed.txt").read_bytes() == b"a\r\nx\ny\n"


async def test_file_without_final_newline_diff_says_so(disk, server):
    (disk.ws / "nofinal.txt").write_text("a\nb")
    is_error, res = await call(server, "edit_file", path="nofinal.txt", edits=edits(("b", "c")))
    assert not is_error, res
    assert "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n" in res["diff"]
    assert (disk.ws / "nofinal.txt").read_text() == "a\nc"


# -- bounded output ------------------------------------------------------------------------


async def test_a_long_diff_is_cut_to_max_output_chars_with_a_note(disk, server):
    lines = "".join(f"line {i:04d} {'x' * 40}\n" for i in range(600))  # ~31 KB, under MAX_READ
    (disk.ws / "long.txt").write_text(lines)
    async with server.session() as s:
        res = await s.call_tool("edit_file", {
            "path": "long.txt", "edits": edits((lines, lines.replace("x", "y")))})
    assert not res.is_error
    text = res.content[0].text
    assert len(text) <= MAX_OUTPUT
    data = res.structured_content
    assert data["diff_truncated"] is True and data["written"] is True
    assert "diff cut to fit max_output_chars (1203 lines in full)" in data["note"]
    assert "the edits were applied in full" in data["note"]
    assert data["diff"].startswith("--- a/long.txt\n+++ b/long.txt\n@@ -1,600 +1,600 @@\n")
    assert (disk.ws / "long.txt").read_text() == lines.replace("x", "y")


# -- properties of the pure parts ------------------------------------------------------------


def occurrences(text: str, sub: str) -> int:
    """Overlapping occurrences, the way a reader would count them."""
    return sum(text.startswith(sub, i) for i in range(len(text)))


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab\n", max_size=30), old=st.text(alphabet="ab\n", min_size=1,
       max_size=4), new=st.text(alphabet="xy", max_size=3))
def test_an_edit_applies_exactly_when_old_text_occurs_once(text, old, new):
    """Exact when old_text occurs once; refused when it occurs more; when it does not
    occur at all only a looser level may place it (tests/fs/change/test_match.py)."""
    count = occurrences(text, old)
    try:
        result, _spans, found = apply_tracked(text, [TextEdit(old_text=old, new_text=new)], "f")
    except BadArgument as exc:
        assert count != 1
        assert ("occurs" in exc.message) == (count >= 2)
        return
    if count:
        assert count == 1 and found[0].match == "exact"
        assert result == text.replace(old, new, 1)
    else:
        assert found[0].match != "exact"


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=50),
       codec=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32", "gb18030"]))
def test_decode_gives_back_the_text_and_its_exact_bytes(text, codec):
    if "\x00" in text:
        return  # a NUL near the start is how binary files are told apart
    try:
        raw = text.encode(codec)
    except UnicodeEncodeError:
        return  # lone surrogates: not text any encoder writes
    got, enc = decode(raw, "f")
    assert enc.encode(got) == raw  # every byte outside an edit stays as it was
    if codec == "gb18030":  # its bytes may also be valid UTF-8, which is tried first
        assert enc.label in ("utf-8", "gb18030")
    else:
        assert got == text


# -- the diff's size: the changed lines and their context, not the whole file ----------------

THOUSAND = "".join(f"line {i:04}\n" for i in range(1000))


@pytest.mark.parametrize(
    ("edits_made", "hunks", "lines"),
    [
        # (old, new) pairs on the 1,000-line file; hunks and lines of the expected diff
        ([("line 0500\n", "line 500 changed\n")], 1, 11),  # 2 headers, @@, 3 + -+ + 3
        ([("line 0000\n", "first\n")], 1, 8),  # no context above
        ([("line 0999\n", "last\n")], 1, 8),  # none below
        ([("line 0100\n", "a\n"), ("line 0900\n", "b\n")], 2, 20),  # two far apart
        ([("line 0500\n", "x\n"), ("line 0504\n", "y\n")], 1, 16),  # contexts meet: one hunk
        ([("line 0500\nline 0501\n", "")], 1, 11),  # two lines removed
        ([("line 0500\n", "a\nb\nc\n")], 1, 13),  # one line becomes three
    ],
)
def test_a_small_edit_of_a_long_file_gives_a_small_diff(tmp_path, edits_made, hunks, lines):
    """The diff is difflib's unified diff of the whole file (the reference), and its size is
    what the edit touched: a one-line edit of 1,000 lines is 11 lines, never the file twice
    over ("all removed, all added"), whatever the budget."""
    import difflib

    from app.fs.change.edit import edit_file
    from tests.security.conftest import make_root

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "long.txt").write_text(THOUSAND)
    root = make_root(tmp_path / "r")
    out = edit_file(root, "long.txt", [TextEdit(old_text=o, new_text=n) for o, n in edits_made],
                    max_output_chars=1_000_000, dry_run=True)
    after = THOUSAND
    for o, n in edits_made:
        after = after.replace(o, n, 1)
    reference = "".join(difflib.unified_diff(
        THOUSAND.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile="a/long.txt", tofile="b/long.txt"))
    assert out.diff == reference
    assert out.diff.count("\n") == lines and out.diff.count("\n@@ ") == hunks
    assert not out.diff_truncated and out.note == "dry run: nothing was written"


# -- matching levels, through the tool (the levels themselves: test_match.py) ---------------


async def test_a_slipped_edit_lands_and_the_file_keeps_its_bom_line_ends_and_last_line(
    disk, server
):
    target = disk.ws / "slipped.py"
    target.write_bytes(b"\xef\xbb\xbfdef f():\r\n\tif x:\r\n\t\treturn 1\r\n\treturn 2")
    is_error, res = await call(server, "edit_file", path="slipped.py", edits=edits(
        ("if x:\n    return 1", "if x:\n    return 5"),
        ("3         return 5\n4     return 2\n", "3         return 5\n4     return 3\n")))
    assert not is_error, res
    assert target.read_bytes() == (
        b"\xef\xbb\xbfdef f():\r\n\tif x:\r\n\t\treturn 5\r\n\treturn 3")
    assert res["matches"] == [{"line": 2, "match": "indentation"},
                              {"line": 3, "match": "line_numbers"}]


async def test_an_ambiguous_slipped_edit_is_refused_by_its_lines_and_changes_nothing(
    disk, server
):
    (disk.ws / "twice.py").write_text("def f():\n    a = 1\n\ndef g():\n        a = 1\n")
    before = disk.snapshot()
    message = await refusal(disk, server, "edit_file", path="twice.py",
                            edits=edits(("a = 1\n\n\n", "a = 2\n")))
    assert "old_text matches 2 places in 'twice.py' when compared by indentation" in message
    assert "(lines 2, 5)" in message
    assert disk.snapshot() == before


async def test_a_missed_edit_shows_the_closest_block_and_how_it_differs(disk, server):
    (disk.ws / "near.txt").write_text("".join(f"row {i}\n" for i in range(50)))
    message = await refusal(disk, server, "edit_file", path="near.txt",
                            edits=edits(("row 20\nrow 2l\nrow 22\n", "x")))
    assert message.startswith("edit: old_text not found in 'near.txt' (0 occurrences); "
                              "closest block: lines 21-23 (67% similar)")
    assert "-row 2l\n+row 21" in message


def test_the_text_answer_says_where_each_edit_matched():
    text = render_files.edit_file({
        "path": "a.py", "written": True, "sha256": "0" * 64, "diff": "--- a/a.py\n",
        "matches": [{"line": 12, "match": "exact"}, {"line": 40, "match": "indentation"}]})
    assert text.splitlines()[1] == "matched: line 12 (exact), line 40 (indentation)"
