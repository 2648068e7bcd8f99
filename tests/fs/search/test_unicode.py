"""ripgrep's `\\w \\d \\s \\b` (Unicode) for RE2: the rewrite, code point by code point against rg.

Every code point Python's Unicode tables assign (ripgrep 13 and Python 3.11 both read
Unicode 14; RE2's newer tables know more, which ripgrep does not match) on a line of its
own: the lines `^\\w$`, `^[\\w]$`, `^\\W$`, ... match are rg's. Then the rewrite itself
(escapes, `\\Q..\\E`, classes read as RE2 reads them), and the documented differences:
a `\\b` away from a pattern's ends stays ASCII, and ripgrep's 3-byte first read.
"""

from __future__ import annotations

import subprocess
import unicodedata
from pathlib import Path

import pytest

from app.fs.control import NoControl
from app.fs.search.options import TextOptions
from app.fs.search.regex import RegexMatcher
from app.fs.search.text import search_text
from app.fs.search.unicode import ascii_boundaries, is_word, unicode_pattern
from tests.fs.readkit import small_root
from tests.fs.search import rgkit

pytestmark = pytest.mark.skipif(rgkit.RG is None, reason="ripgrep (rg) is not installed")

CODE_POINTS = [c for c in range(1, 0x110000)
               if c != 10 and not 0xD800 <= c <= 0xDFFF
               and unicodedata.category(chr(c)) not in ("Cn", "Cs")]


@pytest.fixture(scope="module")
def every_char(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cp") / "all.txt"
    path.write_bytes(b"\n".join(chr(c).encode("utf-8") for c in CODE_POINTS) + b"\n")
    return path


def _rg_lines(path: Path, pattern: str) -> set[int]:
    assert rgkit.RG is not None
    out = subprocess.run([rgkit.RG, "--no-config", "-n", "-e", pattern, str(path)],
                         capture_output=True, timeout=60, check=False).stdout
    return {int(row.split(b":", 1)[0]) for row in out.split(b"\n") if row}


def _our_lines(path: Path, pattern: str) -> set[int]:
    m = RegexMatcher(pattern, True)
    data = path.read_bytes()
    return {hit[0] for hit in m.lines(data, len(data))}


@pytest.mark.parametrize("pattern", [
    r"^\w$", r"^\W$", r"^\d$", r"^\D$", r"^\s$", r"^\S$", r"^[\w]$", r"^[^\w]$", r"^[\d_]$",
    r"^[\W_]$", r"^[\s.]$", r"^[\S]$", r"^[^\s\d]$", r"(?i)^\w$", r"^\bé", r"ς\b",
])
def test_each_class_matches_the_code_points_ripgrep_matches(every_char: Path,
                                                            pattern: str) -> None:
    assert _our_lines(every_char, pattern) == _rg_lines(every_char, pattern)


def test_is_word_is_rgs_w() -> None:
    # The one table is_word reads from (the \b rewrite decides with it) against RE2's \w.
    w = RegexMatcher(r"^\w$", True)
    for c in CODE_POINTS[::7]:
        b = chr(c).encode("utf-8")
        assert is_word(chr(c)) == (w.first(b) >= 0), hex(c)


@pytest.mark.parametrize(("pattern", "kept"), [
    (r"\\w", r"\\w"),  # an escaped backslash, then a letter
    (r"\Q\w\d\E", r"\Q\w\d\E"),  # quoted
    (r"\p{Greek}\pL\x{41}", r"\p{Greek}\pL\x{41}"),  # braced escapes untouched
    (r"[[:alpha:]]", r"[[:alpha:]]"),  # POSIX classes are ASCII in rg too
    (r"[^\W\d]", r"[^\W\p{Nd}]"),  # \W in a negated class: RE2's (documented)
    (r"a\b.", r"a\b."),  # \b away from the ends: RE2's ASCII one (documented)
    (r"\bfoo|bar\b", r"\bfoo|bar\b"),  # alternation at the top: ASCII
    (r"\Bfoo\b", r"\Bfoo\b"),  # \B: ASCII, and so every \b of the pattern
    (r"^\bfoo\b$", "^foo$"),  # at a line's edge a word character is a boundary
])
def test_what_the_rewrite_leaves_alone(pattern: str, kept: str) -> None:
    assert unicode_pattern(pattern) == kept
    assert ascii_boundaries(pattern) == ("\\b" in kept or "\\B" in kept)


@pytest.mark.parametrize(("pattern", "line", "rg_matches"), [
    (r"\bfoo\b", "éfoo", False), (r"\bfoo\b", "fooé", False), (r"\bfoo\b", "é foo", True),
    (r"\b(get|set)\b", "ɵget", False), (r"\b\w+\b", "日本", True), (r"\b\d", "x٣", False),
    (r"\b\s", "é\u2003", True), (r"foo\b", "foo\u00a0", True), (r"(?i)\bFOO", "Ωfoo", False),
])
def test_a_boundary_at_a_patterns_ends_is_rgs(tmp_path: Path, pattern: str, line: str,
                                              rg_matches: bool) -> None:
    path = tmp_path / "a.txt"
    path.write_text(line + "\n", encoding="utf-8")
    assert not ascii_boundaries(pattern)
    assert bool(_rg_lines(path, pattern)) is rg_matches
    assert bool(_our_lines(path, pattern)) is rg_matches


def test_a_boundary_inside_a_pattern_is_ascii_a_pinned_difference(tmp_path: Path) -> None:
    """RE2 has no Unicode `\\b` and no lookaround to write one with: `o\\bé` finds a
    boundary between `o` and `é` (ASCII), ripgrep none. docs/tools.md says so."""
    path = tmp_path / "a.txt"
    path.write_text("fooé\n", encoding="utf-8")
    assert ascii_boundaries(r"o\bé")
    assert _our_lines(path, r"o\bé") == {1}
    assert _rg_lines(path, r"o\bé") == set()
    assert _rg_lines(path, r"o(?-u:\b)é") == {1}  # what ours reads it as


def test_a_nul_anywhere_hides_every_line_rg_reads_after_its_first_3_bytes(
    tmp_path: Path,
) -> None:
    """ripgrep's first read of a file is 3 bytes (it looks for a BOM): a line ending in
    them is searched before the NUL is seen, so `rg` prints `x` here. Ours drops the
    whole file: a pinned difference (docs/tools.md)."""
    root = small_root(tmp_path, {"a.txt": b"x\nfoo\n\0x\n", "b.txt": b"xyz\nx\0\n"})
    top = tmp_path / "r"
    (top / ".git").mkdir()
    shown = rgkit.rg(top, "-n", "-H", "--no-heading", "x")
    assert [row for row in shown if "WARNING" not in row] == ["a.txt:1:x"]
    assert rgkit.rg_counts(top, "x") == {}  # -c: the NUL found later drops the count
    opts = TextOptions(query="x", limit=10, cap=1 << 16, file_limit=1 << 20, budget=1 << 20)
    r = search_text(root, opts, NoControl())
    assert r.matches == [] and r.skipped_binary == 2
