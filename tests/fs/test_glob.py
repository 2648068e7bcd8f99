"""Glob semantics (the seed's): what matches, what is refused and why."""

from __future__ import annotations

import pytest

from app.errors import BadArgument
from app.fs.glob import compile_glob

MATCHES = [
    # a pattern without '/' matches the base name at any depth
    ("*.py", "a.py", True),
    ("*.py", "src/pkg/deep/a.py", True),
    ("*.py", "src/a.pyc", False),
    ("*.py", ".hidden.py", True),  # no dotfile special case: denied names are the filter
    ("README*", "docs/README.md", True),
    ("?.txt", "x/a.txt", True),
    ("?.txt", "x/ab.txt", False),
    ("[ab].txt", "b.txt", True),
    ("[!ab].txt", "b.txt", False),
    ("[!ab].txt", "c.txt", True),
    ("[a-c]*", "beta", True),
    ("[]]x", "]x", True),  # a leading ']' is a member
    ("*", "any/thing", True),
    ("**", "any/thing/at/all", True),
    # with '/': the whole path relative to the search's `path`, strict
    ("pkg/*.py", "pkg/a.py", True),
    ("pkg/*.py", "src/pkg/a.py", False),
    ("pkg/*.py", "pkg/sub/a.py", False),  # '*' stays within one segment
    ("pkg/?.py", "pkg/a.py", True),
    ("pkg/[!_]*.py", "pkg/_private.py", False),
    # '**' crosses directories, including none
    ("**/a.py", "a.py", True),
    ("**/a.py", "x/y/a.py", True),
    ("src/**/a.py", "src/a.py", True),
    ("src/**/a.py", "src/x/y/a.py", True),
    ("src/**/a.py", "other/src/a.py", False),
    ("src/**", "src/x", True),
    ("src/**", "src/x/y", True),
    ("src/**", "src", False),
    ("src/**", "srcx/y", False),
    ("src/a**z", "src/a/b/z", True),  # '**' inside a segment still crosses
    ("a**z", "x/abz", True),  # ...but a pattern without '/' sees only base names
    ("./pkg/*.py", "pkg/a.py", True),
    # case-sensitive, like the filesystems it mirrors
    ("*.PY", "a.py", False),
    # regex metacharacters are literal
    ("a+b(1).txt", "a+b(1).txt", True),
    ("a.b", "axb", False),
    ("{a,b}", "{a,b}", True),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), MATCHES)
def test_glob_matches(pattern: str, path: str, expected: bool) -> None:
    g = compile_glob(pattern)
    assert g.matches(path, path.rsplit("/", 1)[-1]) is expected


REFUSALS = [
    # empty
    ("", "invalid glob '': the pattern is empty"),
    ("   ", "the pattern is empty"),
    # absolute, never echoed (it may be a host path)
    ("/etc/*", "invalid glob: absolute patterns are not accepted; patterns are relative to path"),
    ("C:/x/*", "invalid glob: absolute patterns are not accepted"),
    # climbing
    ("../*.py", "invalid glob '../*.py': '..' is not accepted in a pattern"),
    ("a/../../b", "'..' is not accepted"),
    # classes
    ("[abc", "invalid glob '[abc': unclosed '[' (a class needs its ']')"),
    ("src/[!x", "unclosed '['"),
    # malformed
    ("a//b", "empty segment (a doubled or trailing '/')"),
    ("src/", "empty segment"),
    ("a\\b", "contains a backslash; use '/' between directories"),
    ("a\nb", "contains a control character"),
    ("x" * 1025, "longer than 1024 characters"),
]


@pytest.mark.parametrize(("pattern", "message"), REFUSALS)
def test_bad_globs_are_refused_with_the_reason(pattern: str, message: str) -> None:
    with pytest.raises(BadArgument) as exc:
        compile_glob(pattern)
    assert message in exc.value.message


def test_compiled_patterns_are_memoised() -> None:
    assert compile_glob("src/**/*.py") is compile_glob("src/**/*.py")


def test_suffix_shortcut_agrees_with_the_full_translation() -> None:
    g = compile_glob("*.py")
    for name in ["a.py", ".py", "a.pyx", "py", "a.py.bak", "x.PY"]:
        assert bool(g.match_name(name)) == bool(g.regex.fullmatch(name)), name
