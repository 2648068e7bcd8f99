"""Glob semantics (the seed's): what matches, what is refused and why."""

from __future__ import annotations

import itertools
import re
import time
import warnings

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.filters.glob import compile_glob
from app.fs.filters.linear import linear_match
from app.fs.filters.syntax import translate


@pytest.fixture(autouse=True)
def fresh_patterns() -> None:
    """Each test compiles its own patterns: the memo would carry a pattern compiled by an
    earlier test (or an earlier version of the code) into this one."""
    compile_glob.cache_clear()


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
    ("[!]a]", "b", True),  # ...of a negated class too
    ("[!]a]", "]", False),
    ("[Xy]x", "Xx", True),
    ("[Xy]x", "yx", True),  # only '!' and '^' negate a class
    ("[a]b]", "ab]", True),  # the first ']' after a member closes the class
    ("[a]b]", "b", False),
    ("[!^a]", "X", True),  # '^', '[' and ']' inside a class are members, nothing more
    ("[!^a]", "^", False),
    ("[[a]", "[", True),
    ("[[a]", "X", False),
    ("[]a]", "]", True),
    ("[]a]", "X", False),
    ("[!ab].txt", "[.txt", True),  # the class is what stands between its brackets
    ("[!ab].txt", "a.txt", False),
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
    # several wildcards (the linear matcher): each block starts where the one before ended
    ("a/a**a**a", "a/aaa", True),
    ("a/a**a**a", "a/aa", False),  # the middle `a` cannot reuse the first block's `a`
    ("a/**a*a", "a/aa", True),  # a segment's tail after a gap: `a*a` on `aa`
    ("a/**a*a", "a/a", False),
    ("a/**a*b*a", "a/aba", True),  # ...with a chunk between its first and last
    ("a/**a*b*a", "a/aa", False),
    ("a/**b**a", "a/ba", True),  # a block between two gaps, inside one segment
    ("a/**b**a", "a/ab", False),
    ("a/**a*b", "a/acb", True),
    ("a/**a*b", "a/abc", False),  # the tail chunk must end the segment
    ("**/b**c", "x/b/yc", True),
    ("**/b**c", "xb/yc", False),  # after `**/` a block starts a segment
    ("a/**/b/c/d/**/e", "a/b/c/d/e", True),  # a block of several segments, in order
    ("a/**/b/c/**/d", "a/x/b/c/y/d", True),
    ("a/**/b/c/**/d", "a/xb/c/d", False),  # ...each one whole
    ("a/**/b/c**c", "a/b/cc", True),
    ("a/**/b/c**c", "a/b/c", False),  # the last block starts where the one before ended
    ("x/a*b*c**", "x/abc", True),  # a head segment with a middle chunk, then a gap
    ("x/a*b*c**", "x/ac", False),  # ...whose middle chunk is missing
    ("x/*a**", "x/ba", True),  # a head segment that starts with a star
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
    ("a[", "invalid glob 'a[': unclosed '['"),
    ("[b-a]", "invalid glob '[b-a]': a range in a class runs backwards (as in '[z-a]')"),
    ("x/[!z-a]*.py", "a range in a class runs backwards"),
    # malformed
    ("a//b", "empty segment (a doubled or trailing '/')"),
    ("src/", "empty segment"),
    ("a\\b", "contains a backslash; use '/' between directories"),
    ("a\nb", "contains a control character"),
    ("x" * 1025, "longer than 1024 characters"),
    # the pattern is echoed whole up to 80 characters, its first 77 and "..." beyond
    ("a" * 79 + "[", "invalid glob '" + "a" * 79 + "[': unclosed"),
    ("a" * 80 + "[", "invalid glob '" + "a" * 77 + "...': unclosed"),
]


@pytest.mark.parametrize(("pattern", "message"), REFUSALS)
def test_bad_globs_are_refused_with_the_reason(pattern: str, message: str) -> None:
    with pytest.raises(BadArgument) as exc:
        compile_glob(pattern)
    assert message in exc.value.message


def test_a_class_holding_brackets_compiles_without_a_warning() -> None:
    """A '[' inside a class is escaped for the regex engine, which would otherwise warn of a
    nested set (a FutureWarning on every compile, in the server's log)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_glob("[[a]x").matches("[x", "[x")
        assert compile_glob("*[[a]x").matches("b[x", "b[x")


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


FILL = {"**": "ab./", "*": "ab.", "?": "ab.", "[ab]": "ab", "[!a]": "b.", "[]a]": "]a"}


@st.composite
def near_matches(draw: st.DrawFn) -> tuple[str, str]:
    """A pattern and a path made from it (each wildcard filled in), then maybe one character
    changed: about half match, and the other half miss by one, where a matcher's edges are."""
    pieces = draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10))
    out = []
    for piece in pieces:
        for part in re.split(r"(\*\*|\*|\?|\[ab\]|\[!a\]|\[\]a\])", piece):
            if part in FILL:
                width = 1 if part not in ("*", "**") else draw(st.integers(0, 4))
                out.append("".join(draw(st.sampled_from(FILL[part])) for _ in range(width)))
            else:
                out.append(part)
    path = "".join(out)
    if path and draw(st.booleans()):
        i = draw(st.integers(0, len(path) - 1))
        path = path[:i] + draw(st.sampled_from(["", "a", "b", ".", "/"])) + path[i + 1 :]
    return "".join(pieces), path


@settings(max_examples=1500, deadline=None)
@given(case=near_matches())
def test_linear_matcher_agrees_on_near_matches(case: tuple[str, str]) -> None:
    pattern, path = case
    reference = _reference(pattern)
    assume(reference is not None)
    assume(path and "//" not in path and not path.startswith("/") and not path.endswith("/"))
    assert reference is not None
    name = path.rsplit("/", 1)[-1]
    g = compile_glob(pattern)
    subject = name if g.basename else path
    want = reference.fullmatch(subject) is not None
    assert bool(linear_match(pattern)(subject)) is want
    assert g.matches(path, name) is want


def test_linear_matcher_agrees_on_every_small_pattern_and_path() -> None:
    """Exhaustive in the small: every pattern of up to 6 characters from `a*/?` against every
    path of up to 4 characters from `ab/` (no empty segment). Small cases hold the edges: a
    block ending inside a segment, a gap of nothing, a literal where a wildcard just stopped."""
    subjects = [
        "".join(p) for n in range(1, 5) for p in itertools.product("ab/", repeat=n)
        if "" not in "".join(p).split("/")
    ]
    names = sorted({p.rsplit("/", 1)[-1] for p in subjects})
    checked = wrong = 0
    for n in range(1, 7):
        for chars in itertools.product("a*/?", repeat=n):
            pattern = "".join(chars)
            reference = _reference(pattern)
            if reference is None:
                continue
            match = linear_match(pattern)
            for subject in names if "/" not in pattern else subjects:
                checked += 1
                wrong += bool(match(subject)) is not (reference.fullmatch(subject) is not None)
    assert checked > 100_000 and wrong == 0


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
    # Ten of each. A backtracking regex takes hours; linear matching takes about 0.5 s of
    # CPU for the largest case here, and 1.13 s on 4 parallel test workers sharing 2 cores.
    assert time.process_time() - t0 < 3.0


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
