"""Glob semantics (the seed's): what matches, what is refused and why."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.glob import compile_glob
from app.fs.glob_linear import linear_match
from app.fs.glob_syntax import translate

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
    reference = re.compile(translate("*.py"), re.DOTALL)
    for name in ["a.py", ".py", "a.pyx", "py", "a.py.bak", "x.PY"]:
        assert bool(g.match_name(name)) == bool(reference.fullmatch(name)), name


# --- no backtracking: the linear matcher agrees with the regex translation (the
# semantics' reference, exact on short inputs) and stays fast on any pattern.

PIECES = ["a", "b", ".", "*", "**", "?", "/", "[ab]", "[!a]", "[]a]", "**/", "/**"]
patterns = st.lists(st.sampled_from(PIECES), min_size=1, max_size=10).map("".join)
paths = st.lists(
    st.text(alphabet="ab.", min_size=1, max_size=4), min_size=1, max_size=5
).map("/".join)


def _reference(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(translate(pattern), re.DOTALL)
    except BadArgument:
        return None


@settings(max_examples=1500, deadline=None)
@given(pattern=patterns, path=paths)
def test_linear_matcher_agrees_with_the_regex_translation(pattern: str, path: str) -> None:
    reference = _reference(pattern)
    assume(reference is not None)
    assert reference is not None
    name = path.rsplit("/", 1)[-1]
    g = compile_glob(pattern)
    subject = name if g.basename else path  # ('./*' is a base-name pattern too)
    want = reference.fullmatch(subject) is not None
    assert bool(linear_match(pattern)(subject)) is want
    assert g.matches(path, name) is want


# Patterns that make a backtracking regex exponential (or polynomial of high
# degree) in the number of wildcards, against names that almost match.
ADVERSARIAL = [
    ("*?" * 11 + "Z", "a" * 31),  # the report: 1.6 s with a backtracking regex
    ("*?" * 400 + "Z", "a" * 255),
    ("*a" * 500 + "b", "a" * 255),
    ("[a]*" * 250 + "b", "a" * 255),
    ("**a" * 300 + "/b", "a/" * 2000 + "c"),
    ("**/" * 300 + "Z", "/".join("a" * 2000)),
    ("a/" + "*/" * 300 + "**/b", "a/" * 2000 + "c"),
    ("**/a" * 200 + "/**/b", "a/" * 2000 + "c"),
    ("*/" * 200 + "*", "/".join("a" * 300)),
]


@pytest.mark.parametrize(("pattern", "name"), ADVERSARIAL)
def test_adversarial_patterns_match_in_bounded_time(pattern: str, name: str) -> None:
    g = compile_glob(pattern[:1024])
    t0 = time.process_time()
    for _ in range(10):
        g.matches(name, name.rsplit("/", 1)[-1])
        linear_match(pattern[:1024])(name)
    assert time.process_time() - t0 < 1.0  # ten of each; a backtracking regex: hours


@settings(max_examples=150, deadline=None)
@given(
    pattern=st.lists(st.sampled_from(["*", "?", "**", "a", "/", "*a", "?*", "**/"]),
                     min_size=20, max_size=200).map("".join),
    width=st.integers(1, 60),
    depth=st.integers(1, 40),
)
def test_generated_wildcard_floods_stay_fast(pattern: str, width: int, depth: int) -> None:
    try:
        g = compile_glob(pattern)
    except BadArgument:
        return
    path = "/".join(["a" * width] * depth)
    t0 = time.process_time()
    g.matches(path, "a" * width)
    assert time.process_time() - t0 < 0.5
