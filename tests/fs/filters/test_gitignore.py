"""One ignore file's rules: each line of the gitignore language read, one rule at a time.

Whole trees are checked against ripgrep in `tests/fs/search/test_rg.py` and
`test_regex.py`; here each syntax rule alone, on `IgnoreFile.decide`.
"""

from __future__ import annotations

import pytest

from app.fs.filters import gitignore
from app.fs.filters.gitignore import IgnoreFile, parse_line

# (file, path relative to the file's folder, is a folder, ignored (None: no rule says))
CASES = [
    (b"*.log", b"a.log", False, True),
    (b"*.log", b"d/e/a.log", False, True),  # no '/': the name, at any depth
    (b"*.log\n!keep.log", b"keep.log", False, False),  # the last matching line decides
    (b"build/", b"build", False, None),  # folders only: a file of that name is kept
    (b"build/", b"x/build", True, True),
    (b"/top.txt", b"top.txt", False, True),  # a leading '/' anchors
    (b"/top.txt", b"d/top.txt", False, None),
    (b"d/*.md", b"d/x.md", False, True),  # a '/' inside anchors too
    (b"d/*.md", b"e/d/x.md", False, None),
    (b"doc/**", b"doc/a/b", False, True),  # everything inside...
    (b"doc/**", b"doc", True, None),  # ...not the folder itself
    (b"a/**/z", b"a/z", False, True),  # zero or more folders
    (b"a/**/z", b"a/b/c/z", False, True),
    (b"**/out", b"x/y/out", True, True),
    (b"*", b"a/b", False, True),  # '*' never crosses '/', but a name is any depth's
    (b"\\#h", b"#h", False, True),  # escaped '#' and '!' are names
    (b"\\!b", b"!b", False, True),
    (b"# a comment", b"# a comment", False, None),
    (b"t.txt   ", b"t.txt", False, True),  # trailing spaces dropped...
    (b"t\\ ", b"t ", False, True),  # ...unless escaped
    (b"[ab]?.c", b"a1.c", False, True),
    (b"[!ab]x", b"cx", False, True),
    (b"[!ab]x", b"ax", False, None),
    (b"{a,b}", b"a", False, None),  # braces are literal, as in git
    (b"{a,b}", b"{a,b}", False, True),
    (b"x\r", b"x", False, True),  # CRLF files
]


@pytest.mark.parametrize(("text", "rel", "is_dir", "ignored"), CASES)
def test_each_line_reads_as_git_reads_it(text: bytes, rel: bytes, is_dir: bool,
                                         ignored: bool | None) -> None:
    parsed, dropped = IgnoreFile.parse(text)
    assert not dropped
    name = rel.rsplit(b"/", 1)[-1]
    assert (parsed.decide(rel, name, is_dir) if parsed else None) is ignored


@pytest.mark.parametrize("line", [b"", b"   ", b"#x", b"/", b"!", b"[ab", b"a\\"])
def test_a_line_that_says_nothing_is_no_rule(line: bytes) -> None:
    assert parse_line(line) is None


def test_rules_past_the_cap_are_dropped_and_said_to_be(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed, dropped = IgnoreFile.parse(b"a\nb\nc\n", 2)
    assert parsed is not None and len(parsed.rules) == 2 and dropped
    # Sets of a few rules each: the answer is the one a single set gives.
    monkeypatch.setattr(gitignore, "CHUNK", 2)
    chunked, _ = IgnoreFile.parse(b"*.a\n*.b\n!x.b\n*.c\nd/*.e\n")
    assert chunked is not None
    assert [chunked.decide(p, p.rsplit(b"/")[-1], False) for p in
            (b"x.a", b"y.b", b"x.b", b"q.c", b"d/f.e", b"g.h")] == [
        True, True, False, True, True, None]
