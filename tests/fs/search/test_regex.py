"""search_text's regex, context, output modes, exclude and ignore files, in process.

What the differential tests against ripgrep cannot show: refusals and their
messages, linear time on catastrophic patterns (in queries and in ignore
files), literal queries staying literal, ignored directories never opened,
denied names staying denied whatever an ignore file says, and the notes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import BadArgument
from app.fs.control import NoControl
from app.fs.filters import ignore as ignore_mod
from app.fs.search.files import search_files
from app.fs.search.literal import LiteralMatcher
from app.fs.search.options import FilesOptions, TextOptions
from app.fs.search.regex import RegexMatcher
from app.fs.search.required import required_literal
from app.fs.search.sink import LINE_COST
from app.fs.search.text import search_text
from app.security.resolve import Root
from app.security.walk import Walker
from tests.fs.readkit import small_root
from tests.fs.search import rgkit
from tests.fs.search.rgkit import safe_regex


def run(root: Root, query: str, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(path="", file_glob="*", case_sensitive=True, offset=0, limit=200,
                                cap=1 << 20, file_limit=root.max_read_bytes, budget=1 << 30,
                                control=NoControl())
    args.update(kw)
    control = args.pop("control")
    return search_text(root, TextOptions(query=query, **args), control).model_dump(mode="json")


def hits(r: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["path"], m["line"]) for m in r["matches"]]


# -- refusals ----------------------------------------------------------------------------

REFUSED = [
    (r"(a)\1", "backreferences"),
    (r"(?P<x>a)(?P=x)", "backreferences"),
    ("foo(?=bar)", "lookahead and lookbehind"),
    ("foo(?!bar)", "lookahead and lookbehind"),
    ("(?<=a)b", "lookahead and lookbehind"),
    ("(?<!a)b", "lookahead and lookbehind"),
    ("(?>ab)", "atomic groups"),
    ("a++", "possessive"),
    (r"a\nb", "line by line"),
    ("a\nb", "line by line"),
    ("[a-", "missing ]"),
    ("a{2000}", "invalid repetition size"),
    ("(", "missing )"),
]


@pytest.mark.parametrize(("pattern", "why"), REFUSED)
def test_patterns_re2_cannot_run_are_refused_saying_why(tmp_path: Path, pattern: str,
                                                        why: str) -> None:
    root = small_root(tmp_path, {"a.txt": "ab\n"})
    with pytest.raises(BadArgument) as e:
        run(root, pattern, regex=True)
    assert str(e.value).startswith("invalid regex: ") and why in str(e.value)
    assert str(tmp_path) not in str(e.value)


@pytest.mark.parametrize(("kw", "why"), [
    (dict(context=11), "context must be between 0 and 10"),
    (dict(context=-1), "context must be between 0 and 10"),
    (dict(output_mode="lines"), "output_mode must be one of"),
    (dict(exclude=["a//b"]), "empty segment"),
    (dict(exclude=["x"] * 65), "at most 64"),
])
def test_bad_arguments_are_refused(tmp_path: Path, kw: dict[str, Any], why: str) -> None:
    root = small_root(tmp_path, {"a.txt": "ab\n"})
    with pytest.raises(BadArgument, match=why):
        run(root, "a", **kw)


# -- linear time -------------------------------------------------------------------------

CATASTROPHIC = [r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"(.*a){12}x", r"^(\w+\s?)*$", r"(a|a?)+b",
                r"(x+x+)+y"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_answer_in_bounded_time(tmp_path: Path, pattern: str) -> None:
    # A backtracking engine takes longer than the age of the universe on these lines.
    line = "a" * 200_000 + "!"
    root = small_root(tmp_path, {"long.txt": (line + "\n") * 4, "x.txt": "x" * 50_000 + "\n"},
                      max_read=4 << 20)
    t = time.monotonic()
    r = run(root, pattern, regex=True)
    assert time.monotonic() - t < 10
    assert {m["path"] for m in r["matches"]} == ({"x.txt"} if pattern == r"^(\w+\s?)*$" else set())


def test_a_hostile_ignore_pattern_costs_linear_time(tmp_path: Path) -> None:
    name = "a" * 250
    root = small_root(tmp_path, {".gitignore": "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n",
                                 **{f"d{i}/{name}": "hit\n" for i in range(20)}})
    t = time.monotonic()
    r = run(root, "hit", output_mode="count")
    assert time.monotonic() - t < 10 and len(r["counts"]) == 20


# -- literal stays literal; case folding -------------------------------------------------


def test_a_literal_query_is_literal_and_a_regex_one_is_not(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "a.*b\naxxb\n(x)\n"})
    assert hits(run(root, "a.*b")) == [("a.txt", 1)]
    assert hits(run(root, "a.*b", regex=True)) == [("a.txt", 1), ("a.txt", 2)]
    assert hits(run(root, "(x)")) == [("a.txt", 3)]
    assert hits(run(root, "(x)", regex=True)) == [("a.txt", 2), ("a.txt", 3)]


def test_case_insensitive_regex_folds_unicode(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "Élan\nÉLAN\nelan\n"})
    assert hits(run(root, "^élan$", regex=True, case_sensitive=False)) == [
        ("a.txt", 1), ("a.txt", 2)]
    assert hits(run(root, "(?i)^élan$", regex=True)) == [("a.txt", 1), ("a.txt", 2)]
    assert hits(run(root, "^élan$", regex=True)) == []


def test_a_utf16_file_is_searched_by_its_text(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"w.txt": b"\xff\xfe" + "one\ntwo 22\n".encode("utf-16-le")})
    r = run(root, r"\d+$", regex=True, context=1)
    assert r["matches"] == [{"path": "w.txt", "line": 2, "preview": "two 22",
                             "before": ["one"], "after": []}]


# -- context and output modes ------------------------------------------------------------


def test_context_lines_are_given_once_around_each_match(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.txt": "".join(f"l{i}\n" for i in range(1, 11))})
    r = run(root, "^l(3|5|10)$", regex=True, context=2)
    assert r["matches"] == [
        {"path": "a.txt", "line": 3, "preview": "l3", "before": ["l1", "l2"], "after": ["l4"]},
        {"path": "a.txt", "line": 5, "preview": "l5", "before": [], "after": ["l6", "l7"]},
        {"path": "a.txt", "line": 10, "preview": "l10", "before": ["l8", "l9"], "after": []},
    ]
    plain = run(root, "l3")
    assert plain["matches"] == [{"path": "a.txt", "line": 3, "preview": "l3"}]  # no keys
    assert "files" not in plain and "counts" not in plain


def test_files_and_counts_modes_page_like_matches(tmp_path: Path) -> None:
    root = small_root(tmp_path, {f"f{i}.txt": "hit\n" * i + "miss\n" for i in range(1, 8)})
    r = run(root, "hit", output_mode="files_with_matches", limit=3)
    assert r["files"] == ["f1.txt", "f2.txt", "f3.txt"] and "matches" not in r
    assert r["has_more"] and r["next_offset"] == 3
    r2 = run(root, "hit", output_mode="files_with_matches", limit=3, offset=3)
    assert r2["files"] == ["f4.txt", "f5.txt", "f6.txt"]
    c = run(root, "hit", output_mode="count", limit=10)
    assert c["counts"] == [{"path": f"f{i}.txt", "count": i} for i in range(1, 8)]
    assert not c["has_more"]


def test_output_bound_cuts_a_files_page_visibly(tmp_path: Path) -> None:
    root = small_root(tmp_path, {f"{'n' * 80}{i:03}.txt": "hit\n" for i in range(60)})
    r = run(root, "hit", output_mode="files_with_matches", cap=2000)
    assert 0 < r["returned"] == len(r["files"]) < 60 and r["has_more"]
    assert "output limit reached" in r["note"] and r["next_offset"] == r["returned"]


# -- exclude and ignore files ------------------------------------------------------------


def test_exclude_skips_files_and_prunes_directories(tmp_path: Path) -> None:
    root = small_root(tmp_path, {"a.py": "hit\n", "a.min.js": "hit\n", "vendor/x.py": "hit\n",
                                 "src/vendor/y.py": "hit\n", "src/z.py": "hit\n"})
    r = run(root, "hit", exclude=["vendor", "*.min.js"], output_mode="files_with_matches")
    assert r["files"] == ["a.py", "src/z.py"]
    f = search_files(root, FilesOptions(pattern="*.py", offset=0, limit=50, cap=1 << 20,
                                        exclude=["src/**"]), NoControl())
    assert [m.path for m in f.matches] == ["a.py", "vendor/x.py"]


def test_ignored_directories_are_pruned_before_they_are_opened(tmp_path: Path) -> None:
    files = {f"build/d{i}/f.txt": "hit\n" for i in range(30)}
    root = small_root(tmp_path, {".gitignore": "build/\n", "keep.txt": "hit\n", **files})
    filt = ignore_mod.Filter(root, (), (), no_ignore=False)
    walker = Walker(root, (), keep=filt)
    seen = [e.name for d in walker.dirs() for e in d.entries]
    assert walker.dirs_opened == 1 and seen == [".gitignore", "keep.txt"]
    assert filt.hidden_dirs == 1
    r = run(root, "hit", output_mode="files_with_matches")
    assert r["files"] == ["keep.txt"]
    assert r["note"] == ("ignore files (.gitignore, .ignore) hid 1 director(ies); "
                         "no_ignore=true searches them too")
    everything = run(root, "hit", output_mode="count", no_ignore=True)
    assert len(everything["counts"]) == 31 and everything["note"] is None


def test_denied_names_stay_denied_whatever_ignore_files_say(tmp_path: Path) -> None:
    root = small_root(tmp_path, {".gitignore": "!.env\n!*.pem\n!node_modules/\n",
                                 ".ignore": "!.env\n", ".env": "SECRET=1\n", "k.pem": "SECRET\n",
                                 "node_modules/m.js": "SECRET\n", "ok.txt": "SECRET\n"})
    for no_ignore in (False, True):
        r = run(root, "SECRET", no_ignore=no_ignore, output_mode="files_with_matches")
        assert r["files"] == ["ok.txt"]
        f = search_files(root, FilesOptions(pattern="*", offset=0, limit=50, cap=1 << 20,
                                            no_ignore=no_ignore), NoControl())
        assert {m.path for m in f.matches} == {".gitignore", ".ignore", "ok.txt"}


# Ignore-file semantics, one rule at a time, each checked against ripgrep.
IGNORE_CASES = [
    ({".gitignore": "*.log\n!keep.log\n"}, "precedence within a file: last match wins"),
    ({".gitignore": "d/\n", "x/d": "file named d"}, "dir-only pattern passes over files"),
    ({".gitignore": "/top.txt\n", "sub/top.txt": ""}, "a leading / anchors"),
    ({".gitignore": "sub/*.md\n", "a/sub/x.md": "", "sub/y.md": ""}, "a middle / anchors"),
    ({".gitignore": "*.md\n", "sub/.gitignore": "!x.md\n"}, "a deeper file overrides"),
    ({".ignore": "x.md\n", "sub/.gitignore": "!x.md\n"}, ".ignore beats a deeper .gitignore"),
    ({".gitignore": "build\n!build/keep.txt\n", "build/keep.txt": ""}, "no re-include under"),
    ({".gitignore": "doc/**\n", "doc/a/b.txt": ""}, "trailing /** is everything inside"),
    ({".gitignore": "a/**/z.txt\n", "a/z.txt": "", "a/b/c/z.txt": ""}, "/**/ is 0+ dirs"),
    ({".gitignore": "\\#h.txt\n\\!b.txt\n", "#h.txt": "", "!b.txt": ""}, "escaped # and !"),
    ({".gitignore": "t.txt   \n", "t.txt": ""}, "trailing spaces dropped"),
    ({".gitignore": "[ab]?.txt\n[!c]x.txt\n", "a1.txt": "", "cx.txt": "", "dx.txt": ""},
     "classes"),
    ({".gitignore": "*\n!*/\n!*.py\n", "s/a.py": "", "s/b.txt": ""}, "ignore all but"),
    ({".rgignore": "!/x.md\n", ".gitignore": "*.md\n"}, ".rgignore beats .gitignore"),
    ({"sub/.gitignore": "*.txt\n", "sub/a.txt": "", "a.txt": ""}, "a file applies below it"),
]


@pytest.mark.skipif(rgkit.RG is None, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize(("files", "rule"), IGNORE_CASES, ids=[c[1] for c in IGNORE_CASES])
def test_each_ignore_rule_reads_as_ripgrep_reads_it(tmp_path: Path, files: dict[str, str],
                                                    rule: str) -> None:
    tree = {"x.md": "", "sub/x.md": "", "top.txt": "", "keep.log": "", "a.log": "",
            "d/f.txt": "", **files}
    root = small_root(tmp_path, tree)
    (tmp_path / "r" / ".git").mkdir()
    f = search_files(root, FilesOptions(pattern="*", offset=0, limit=500, cap=1 << 20),
                     NoControl())
    ours = {m.path for m in f.matches if m.type == "file"}
    assert ours == rgkit.rg_file_list(tmp_path / "r"), rule
    assert ours != set(tree) or rule == "a leading / anchors"  # the rule did something


# -- the required-literal prefilter --------------------------------------------------------

_texts = st.text(alphabet="abfoxz12=_ .\tÉé(kKsSſ\u212a", max_size=40)


@settings(max_examples=400, deadline=None)
@given(pattern=safe_regex(), text=_texts, fold=st.booleans())
def test_a_prefilter_never_passes_over_a_line_the_pattern_matches(
    pattern: str, text: str, fold: bool,
) -> None:
    m = RegexMatcher(pattern, case_sensitive=not fold)
    data = text.encode()
    if next(m.lines(data, len(data)), None) is not None:
        assert m.first(data) >= 0, (pattern, text)


_lines_text = st.text(alphabet="abfoxz12=_ .\n\tÉé(kKsSſ\u212a", max_size=60)


@settings(max_examples=400, deadline=None)
@given(pattern=safe_regex(), text=_lines_text, fold=st.booleans())
def test_starting_at_the_required_literal_s_line_changes_no_answer(
    pattern: str, text: str, fold: bool,
) -> None:
    m = RegexMatcher(pattern, case_sensitive=not fold)
    data = text.encode()
    if (hint := m.first(data)) < 0:
        return
    n = len(data)
    assert list(m.lines(data, n, hint)) == list(m.lines(data, n)), (pattern, text)
    assert m.count_lines(data, n, hint) == m.count_lines(data, n), (pattern, text)


@pytest.mark.parametrize("mode", ["content", "count"])
def test_a_match_starting_before_the_required_literal_is_found(tmp_path: Path,
                                                              mode: str) -> None:
    # The search starts at the line of the first `Error`, not at that byte.
    root = small_root(tmp_path, {"a.py": "import x\nclass FooError(x):\n    BarError\n"})
    r = run(root, "[A-Za-z]+Error", regex=True, output_mode=mode)
    if mode == "count":
        assert r["counts"] == [{"path": "a.py", "count": 2}]
    else:
        assert hits(r) == [("a.py", 2), ("a.py", 3)]


@pytest.mark.parametrize(("pattern", "literal"), [
    (r"\bfoo\b", ("foo", False)), (r"(?i)\btodo\b", ("todo", True)), ("fo+bar", ("bar", False)),
    ("ab?cd", ("cd", False)), ("x*", None), ("a|b", None), (r"a\.b", ("a.b", False)),
    (r"a(?i)b", None), (r"\x41bc", None), ("(ab)+cde", ("cde", False)), (r"[]a]bc", ("bc", False)),
    # braced escapes in a class (`\x{5d}` is `]`), and `\Q` in one, which is not read
    (r"[\p{L}]+foo", ("foo", False)), (r"[\x{5d}a]bc", ("bc", False)), (r"[\Q]\E]foo", None),
])
def test_the_required_literal_is_found_or_none(pattern: str, literal: Any) -> None:
    assert required_literal(pattern) == literal


def test_a_huge_ignore_file_costs_bounded_time(tmp_path: Path) -> None:
    lines = [f"*x{i}*y.{i % 7}txt" if i % 2 else f"dir{i}/sub*/" for i in range(60_000)]
    text = "\n".join(lines)[: ignore_mod.MAX_IGNORE_BYTES + 4096] + "\n*.log\n"
    files = {f"d{i % 20}/f{i}.txt": "hit\n" for i in range(400)}
    root = small_root(tmp_path, {".gitignore": text, "x7zzy.0txt": "hit\n", **files})
    t = time.monotonic()
    r = run(root, "hit", output_mode="files_with_matches", limit=1000)
    assert time.monotonic() - t < 10
    assert len(r["files"]) == 400  # x7zzy.0txt matches line 7; the lines past 1 MiB are dropped


def test_a_long_ignore_file_of_wildcard_rules_applies_whole_and_re2_stays_quiet(
    tmp_path: Path, capfd: pytest.CaptureFixture[str],
) -> None:
    # 10,000 rules of six classes each (under 1 MiB): one RE2 set of them all does not
    # compile (the file was then ignored whole); larger ones fill stderr from RE2's simplifier.
    rules = ["/".join(["[a-z0-9][!x]*?"] * 6) + str(i) for i in range(10_000)] + ["*.log"]
    root = small_root(tmp_path, {
        ".gitignore": "\n".join(rules) + "\n", "a.log": "hit\n", "b.txt": "hit\n",
        "abc/def/ghi/jkl/mno/pqr7": "hit\n",  # rule 7, in the first set; `*.log` in the last
    })
    r = run(root, "hit", output_mode="files_with_matches")
    assert r["files"] == ["b.txt"]
    assert capfd.readouterr().err == ""


def test_ignore_files_past_the_call_budget_are_not_read_and_the_note_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ignore_mod, "MAX_CALL_IGNORE_BYTES", 94)
    files = {f"d{i}/.gitignore": "*.log\n" + "#" * 40 + "\n" for i in range(5)}
    files.update({f"d{i}/a.log": "hit\n" for i in range(5)})
    root = small_root(tmp_path, files)
    r = run(root, "hit", output_mode="files_with_matches")
    assert r["files"] == ["d2/a.log", "d3/a.log", "d4/a.log"]  # d0, d1 read: 2 x 47 bytes
    assert "3 ignore file(s) were not read" in r["note"]


def test_rules_past_the_call_budget_are_dropped_and_the_note_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ignore_mod, "MAX_CALL_IGNORE_RULES", 3)
    files = {f"d{i}/.gitignore": "*.log\n# a comment\n*.tmp\n" for i in range(3)}
    files.update({f"d{i}/a.{ext}": "hit\n" for i in range(3) for ext in ("log", "tmp")})
    root = small_root(tmp_path, files)
    r = run(root, "hit", output_mode="files_with_matches")
    # d0: both rules; d1: `*.log` only (its `*.tmp` is past the budget); d2: not read.
    assert r["files"] == ["d1/a.tmp", "d2/a.log", "d2/a.tmp"]
    assert "2 ignore file(s) were not read, or only in part" in r["note"]


@pytest.mark.parametrize(("text", "most", "kept", "dropped"), [
    (b"a\nb\n", 2, 2, False),
    (b"a\nb\n# only comments past the cap\n\n", 2, 2, False),
    (b"a\nb\n#\nc\n", 2, 2, True),
    (b"a\nb\n", 1, 1, True),
    (b"# none\n", 1, 0, False),
])
def test_an_ignore_file_says_whether_rules_past_its_cap_were_dropped(
    text: bytes, most: int, kept: int, dropped: bool,
) -> None:
    from app.fs.filters.gitignore import IgnoreFile
    parsed, cut = IgnoreFile.parse(text, most)
    assert (len(parsed.rules) if parsed else 0, cut) == (kept, dropped)


_hay = st.text(alphabet="ab\nAé ", max_size=60).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(data=_hay, query=st.text(alphabet="ab\nAé", min_size=1, max_size=3), fold=st.booleans(),
       regex=st.booleans())
def test_count_mode_counts_the_lines_content_mode_lists(data: bytes, query: str, fold: bool,
                                                        regex: bool) -> None:
    matchers: list[Any] = []
    if "\n" not in query:  # refused for regexes; a folded literal with one keeps Matcher
        matchers.append(RegexMatcher(query, not fold, literal=not regex))
    if not regex:
        matchers.append(LiteralMatcher(query, not fold))
    for m in matchers:
        want = len(list(m.lines(data, len(data))))
        assert m.count_lines(data, len(data)) == want
        hint = m.first(data)  # as a search passes it: the first match
        assert (0 if hint < 0 else m.count_lines(data, len(data), hint)) == want


@pytest.mark.parametrize("make", [
    lambda: RegexMatcher(r"\r$", True), lambda: RegexMatcher("a", False, literal=True),
    lambda: LiteralMatcher("a", True),
    lambda: LiteralMatcher("a\r", True),
    lambda: LiteralMatcher("\r\n", False),
], ids=["regex", "folded literal", "literal", "literal scanned (two bytes)",
        "folded literal with a line break"])
def test_counting_stops_past_the_lines_the_budget_allows(make: Any) -> None:
    # A dense file in count mode costs what its budget allows, not a step per line.
    m = make()
    data = b"a\r\n" * 100_000
    assert m.count_lines(data, len(data), 0, 10) == 11
    assert m.count_lines(data, len(data), 0, 0) == 1
    assert m.count_lines(data[:27], 27, 0, 10) == 9  # fewer than `most`: all of them


@pytest.mark.parametrize("mode", ["content", "count"])
def test_matching_lines_use_up_the_budget_alike_in_count_and_content_modes(
    tmp_path: Path, mode: str,
) -> None:
    files = {"a.txt": "hit\n" * 10, "b.txt": "hit\n" * 100, "c.txt": "hit\n"}
    root = small_root(tmp_path, files)
    budget = 40 + 10 * LINE_COST + 400 + 30 * LINE_COST  # a.txt whole, b.txt to line 30
    r = run(root, "hit", budget=budget, output_mode=mode, limit=500)
    assert r["truncated"] and "at line 31 of 'b.txt'" in r["note"]
    if mode == "count":
        assert r["counts"] == [{"path": "a.txt", "count": 10}]
    elif mode == "content":
        assert [m["line"] for m in r["matches"] if m["path"] == "b.txt"] == list(range(1, 32))
    full = run(root, "hit", output_mode="count", budget=1 << 30)
    assert [c["count"] for c in full["counts"]] == [10, 100, 1] and not full["truncated"]


@pytest.mark.parametrize(("query", "regex"), [("(?i)kelvin", True), ("kelvin", False),
                                              ("(?i)^mask$", True), ("MASK", False)])
def test_folded_searches_find_the_non_ascii_forms_of_k_and_s(tmp_path: Path, query: str,
                                                             regex: bool) -> None:
    # U+212A KELVIN SIGN folds to k, U+017F LONG S to s: files holding no ASCII k or s.
    root = small_root(tmp_path, {"a.txt": "\u212aelvin\n", "b.txt": "ma\u017f\u212a\n",
                                 "c.txt": "nothing\n"})
    r = run(root, query, regex=regex, case_sensitive=regex, output_mode="files_with_matches")
    assert r["files"] == (["a.txt"] if "elvin" in query else ["b.txt"])
