"""search_text and search_files against ripgrep on generated trees.

On seeded trees with nested `.gitignore`/`.ignore` files and hidden folders,
for a fixed list of regexes (classes, anchors, alternation, `(?i)`, `\\b`,
repetition) and for patterns hypothesis draws from a safe grammar: the set of
(path, line) hits equals `rg --hidden`'s (`--no-ignore` for no_ignore=true),
files_with_matches equals `rg -l`, count equals `rg -c`, the lines shown with
context equal `rg -C`'s, and search_files' files equal `rg --files`.

`\\w \\d \\s` and a `\\b` at a pattern's ends read as ripgrep reads them (Unicode),
and the trees hold Unicode word characters beside ASCII ones, and files with a NUL
byte (binary) in their first 60,000 bytes. A `\\b` elsewhere stays RE2's ASCII one, a
documented difference: ripgrep is given its ASCII spelling there (`rgkit.for_rg`).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.fs.control import NoControl
from app.fs.filters import gitignore as ignore_rules
from app.fs.search.files import search_files
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.text import search_text
from app.security.resolve import Root
from tests.fs.readkit import small_root
from tests.fs.search import rgkit

pytestmark = pytest.mark.skipif(rgkit.RG is None, reason="ripgrep (rg) is not installed")

SEEDS = range(10)
PATTERNS = [
    "foo", "^foo", "bar$", "fo+", "f.o", "[a-c]+b", r"\bfoo\b", "(?i)foo", "foo|bar", "^$",
    r"^\s*#", r"\d{2,}", "[[:upper:]]", "colou?r", "a.*b", "^[^a-z]*$", r"\w+=\w+", "x*",
    "(ab)+", r"\.", r"[.]py\b", "(?i)^b", r"\Bar", "z{3}", r"^\S+$", "é", "(?i)CAFÉ", r"\(",
    r"[^ ]$", "(?i)todo|fixme", r"\bx\b", "^(foo|bar) ", r"[0-9]+\.[0-9]+", r"\$", r"^.{20,}",
]


def _root(tmp_path: Path, seed: int) -> tuple[Path, Root]:
    root = small_root(tmp_path, {}, max_read=1 << 20)
    top = tmp_path / "r"
    rgkit.make_tree(top, seed)
    return top, root


def ours(root: Root, query: str, **kw: Any) -> list[Any]:
    """Every page of a search_text call, walked by cursor, as one list of its items."""
    args: dict[str, Any] = dict(path="", file_glob="*", case_sensitive=True, offset=0, limit=37,
                                cap=1 << 20, file_limit=root.max_read_bytes, budget=1 << 30,
                                control=NoControl(), regex=True)
    args.update(kw)
    control = args.pop("control")
    items: list[Any] = []
    while True:
        r = search_text(root, TextOptions(query=query, **args), control)
        assert not r.truncated
        data = r.model_dump(mode="json")
        items += data.get("matches") or data.get("files") or data.get("counts") or []
        if not r.has_more:
            assert r.next_cursor is None
            return items
        args["cursor"] = r.next_cursor


def _flags(no_ignore: bool, fold: bool, literal: bool) -> list[str]:
    return [*(["--no-ignore"] if no_ignore else []), *(["-i"] if fold else []),
            *(["-F"] if literal else [])]


def check(top: Path, root: Root, pattern: str, *, no_ignore: bool = False,
          fold: bool = False, literal: bool = False) -> None:
    flags = _flags(no_ignore, fold, literal)
    kw = dict(no_ignore=no_ignore, case_sensitive=not fold, regex=not literal)
    theirs = pattern if literal else rgkit.for_rg(pattern)
    hits = ours(root, pattern, **kw)
    assert {(m["path"], m["line"]) for m in hits} == rgkit.rg_hits(top, theirs, *flags), pattern
    assert len(hits) == len({(m["path"], m["line"]) for m in hits})  # one hit per line
    files = ours(root, pattern, output_mode="files_with_matches", **kw)
    assert sorted(files) == sorted(rgkit.rg_files(top, theirs, *flags)), pattern
    counts = ours(root, pattern, output_mode="count", **kw)
    assert {c["path"]: c["count"] for c in counts} == rgkit.rg_counts(top, theirs, *flags)


@pytest.mark.parametrize("seed", SEEDS)
def test_regex_hits_files_and_counts_equal_ripgreps(tmp_path: Path, seed: int) -> None:
    top, root = _root(tmp_path, seed)
    for k, pattern in enumerate(PATTERNS):
        check(top, root, pattern, no_ignore=k % 5 == 0, fold=k % 4 == 1)


@pytest.mark.parametrize("seed", SEEDS)
def test_literal_search_equals_rg_fixed_strings(tmp_path: Path, seed: int) -> None:
    top, root = _root(tmp_path, seed)
    for k, query in enumerate(["foo", "a.*b", "(", "[x]", "é", "Foo bar", "x", "id_2", " = "]):
        check(top, root, query, literal=True, fold=k % 2 == 1, no_ignore=k % 3 == 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_context_shows_the_lines_rg_C_shows_once_each(tmp_path: Path, seed: int) -> None:
    top, root = _root(tmp_path, seed)
    for pattern, n in [("foo", 1), ("^$", 2), ("(?i)bar|zz", 3), (r"\d", 10)]:
        items = ours(root, pattern, context=n)
        shown: list[tuple[str, int]] = []
        for m in items:
            before, after = m["before"], m["after"]
            assert len(before) <= n and len(after) <= n
            shown += [(m["path"], m["line"] - len(before) + i) for i in range(len(before))]
            shown.append((m["path"], m["line"]))
            shown += [(m["path"], m["line"] + 1 + i) for i in range(len(after))]
        assert len(shown) == len(set(shown)), "a line is shown twice"
        theirs = rgkit.for_rg(pattern)
        assert set(shown) == rgkit.rg_context_lines(top, theirs, n), pattern


@pytest.mark.parametrize("seed", SEEDS)
def test_rules_split_across_re2_sets_decide_as_one_files_rules(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long ignore file's rules go to several RE2 sets; two rules a set here, so the
    seeded files (up to seven lines, negations among them) are split everywhere."""
    monkeypatch.setattr(ignore_rules, "CHUNK", 2)
    top, root = _root(tmp_path, seed)
    for pattern in ("foo", "x*"):
        check(top, root, pattern)


@pytest.mark.parametrize("seed", SEEDS)
def test_search_files_lists_what_rg_files_lists(tmp_path: Path, seed: int) -> None:
    top, root = _root(tmp_path, seed)
    for no_ignore in (False, True):
        got: set[str] = set()
        offset = 0
        while True:
            r = search_files(root, FilesOptions(pattern="*", offset=offset, limit=50,
                                                cap=1 << 20, no_ignore=no_ignore), NoControl())
            got |= {m.path for m in r.matches if m.type == "file"}
            if not r.has_more:
                break
            offset = r.next_offset  # type: ignore[assignment]
        assert got == rgkit.rg_file_list(top, *(["--no-ignore"] if no_ignore else []))


def test_a_search_under_a_subdirectory_still_reads_the_ignore_files_above_it(
    tmp_path: Path,
) -> None:
    root = small_root(tmp_path, {
        ".gitignore": "*.log\n", "sub/.gitignore": "!keep.log\n",
        "sub/a.log": "hit\n", "sub/keep.log": "hit\n", "sub/deeper/b.log": "hit\n",
        "sub/deeper/c.txt": "hit\n",
    })
    (tmp_path / "r" / ".git").mkdir()
    got = ours(root, "hit", path="sub", output_mode="files_with_matches")
    assert sorted(got) == sorted(
        "sub/" + p for p in rgkit.rg(tmp_path / "r" / "sub", "-l", "hit")
    ) == ["sub/deeper/c.txt", "sub/keep.log"]


# -- hypothesis: patterns from a safe grammar, on one generated tree ----------------------

@pytest.fixture(scope="module")
def hyp_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Root]:
    return _root(tmp_path_factory.mktemp("hyp"), 1234)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=rgkit.safe_regex(), fold=st.booleans(), no_ignore=st.booleans())
def test_generated_patterns_agree_with_ripgrep(
    hyp_tree: tuple[Path, Root], pattern: str, fold: bool, no_ignore: bool,
) -> None:
    top, root = hyp_tree
    check(top, root, pattern, fold=fold, no_ignore=no_ignore)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_search_under_a_subdirectory_finds_what_rg_finds_there(tmp_path: Path,
                                                                 seed: int) -> None:
    """Ignore files above `path` apply as in a whole-tree search (git's reading). Compared
    with rg over the whole tree, not `rg PATTERN sub`: rg 13 stops applying a parent's
    .gitignore to a directory given on its command line once that directory holds an
    ignore file of its own (git check-ignore disagrees with it)."""
    top, root = _root(tmp_path, seed)
    # A directory the whole-tree search enters (one inside an ignored directory is
    # searched when named, by rg as by us, but is never reached from the top).
    def entered() -> list[str]:
        return sorted({f.rsplit("/", k)[0] for f in rgkit.rg_file_list(top)
                       for k in range(1, 5) if f.count("/") >= k})

    subs = entered()
    if not subs:  # this seed's tree holds no directory a search enters: give it one
        (top / "added").mkdir()
        (top / "added" / "b.txt").write_text("foo 1\nBar\nxx 2\n")
        (top / "added" / ".ignore").write_text("never.txt\n")
        (top / "added" / "never.txt").write_text("foo 3\n")
        subs = entered()
    assert subs, "the tree has no directory the whole-tree search enters"
    sub = subs[seed % len(subs)]
    for pattern in ["foo", r"(?i)^b", "x*", r"\d"]:
        for no_ignore in (False, True):
            got = ours(root, pattern, path=sub, no_ignore=no_ignore)
            flags = ["--no-ignore"] if no_ignore else []
            want = {hit for hit in rgkit.rg_hits(top, rgkit.for_rg(pattern), *flags)
                    if hit[0].startswith(sub + "/")}
            assert {(m["path"], m["line"]) for m in got} == want, (sub, pattern, no_ignore)


# -- generated trees, context text, binary files ---------------------------------------

_ROW = re.compile(r"^(.*?)([:-])(\d+)\2(.*)$")


def rg_context_text(top: Path, pattern: str, n: int) -> dict[tuple[str, int], str]:
    """Every line `rg -C n` prints, by (path, line), with its text as printed."""
    shown = {}
    for row in rgkit.rg(top, "-n", "-H", "--no-heading", "-C", str(n), "-e", pattern):
        m = _ROW.match(row)
        if row != "--" and m is not None:
            shown[(m[1], int(m[3]))] = m[4]
    return shown


def our_context_text(items: list[Any]) -> dict[tuple[str, int], str]:
    shown = {}
    for m in items:
        first = m["line"] - len(m["before"])
        for i, text in enumerate([*m["before"], m["preview"], *m["after"]]):
            shown[(m["path"], first + i)] = text
    return shown


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), pattern=rgkit.safe_regex(), n=st.integers(0, 3),
       nuls=st.lists(st.integers(0, rgkit.NUL_BEFORE), max_size=3))
def test_generated_trees_agree_with_ripgrep_line_for_line(
    tmp_path_factory: pytest.TempPathFactory, seed: int, pattern: str, n: int, nuls: list[int],
) -> None:
    """A tree drawn per example (Unicode words, indented lines, NULs at drawn offsets):
    the hits, files and counts are rg's, and so is the text of every line shown with
    context, verbatim (indentation kept)."""
    top, root = _root(tmp_path_factory.mktemp("gen"), seed)
    rnd = random.Random(seed)
    for k, at in enumerate(nuls):
        rgkit.write_with_nul(top / f"drawn-nul{k}.txt", rnd, at)
    (top / "indented.py").write_text("def f():\n    foo = 1\n\treturn  foo  \n  x\n")
    check(top, root, pattern)
    if n:
        got = our_context_text(ours(root, pattern, context=n))
        assert got == rg_context_text(top, rgkit.for_rg(pattern), n), pattern


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_lines_shown_are_rgs_text_verbatim(tmp_path: Path, seed: int) -> None:
    top, root = _root(tmp_path, seed)
    (top / "indented.py").write_text("def f():\n    foo = 1\n\treturn  foo  \n  x\n")
    for pattern, n in [("foo", 1), ("^\\s+", 2), ("return", 3)]:
        got = our_context_text(ours(root, pattern, context=n))
        assert got == rg_context_text(top, pattern, n), pattern
        assert got[("indented.py", 2)] == "    foo = 1"
