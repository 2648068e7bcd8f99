"""Generated trees and ripgrep runs for the differential search tests.

A tree is made from a seed: nested directories (some hidden), text files
whose lines come from a small vocabulary (so regexes hit often), a binary
file or two, and `.gitignore` / `.ignore` files at random depths drawn from a
list of the pattern shapes git and ripgrep both read the same way (negation,
anchored, dir-only, `**`, classes, escapes, comments, trailing spaces). The
top is made a git work tree (an empty `.git`), since ripgrep honours
`.gitignore` only inside one; `.git` is denied by the server and empty here,
so neither side finds anything in it.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

from hypothesis import strategies as st

from app.fs.search.unicode import ascii_boundaries

RG = shutil.which("rg")

WORDS = [
    "foo", "bar", "baz", "Foo", "BAR", "qux", "x", "xx", "aab", "ab", "abab", "colour", "color",
    "id", "id_2", "a1", "42", "2024", "3.14", "def", "class", "return", "#", "//", "TODO",
    "fixme", "=", "==", "a=b", "k=v", "(", ")", "[x]", "{y}", "\t", "  ", "-", "+", ".", "*",
    "foo.py", "bar.txt", "café", "naïve", "zzz", "zz", "<tag>", "end;",
    # Unicode word characters beside ASCII ones (ripgrep's \w, \d, \s, \b are Unicode)
    "ɵɵfoo", "fooé", "éfoo", "x٣", "٣4", "Ⓐb", "a\u0301", "日本語", "foo\u00a0bar", "\u2003",
    "id_é", "Ωmega", "\u200dfoo",
]
DIRS = ["src", "lib", "build", "doc", ".hid", ".cfg", "gen", "sub", "keep", "out", "a", "b"]
FILES = [
    "main.py", "util.py", "notes.txt", "README.md", "app.log", "keep.log", "x.tmp", "top.txt",
    "abc.txt", "aXc.txt", "data.json", ".hidden.txt", ".rc", "#hash.txt", "!bang.txt",
    "trail.txt", "deep.md", "Makefile", "b.txt", "c.cfg",
]
IGNORE_LINES = [
    "*.log", "!keep.log", "build/", "/top.txt", "*.tmp", "gen", "**/out", "doc/**", "sub/*.md",
    "a?c.txt", "[ab]*.txt", "[!m]*.py", "# a comment", "", "\\#hash.txt", "\\!bang.txt",
    "trail.txt   ", "!important/", ".hid/", "!/build", "/lib/*.py", "**/deep.md", "keep/",
    "!keep/", "*.json", "!data.json", "lib/**/x.tmp", "*", "!*/", "!*.py", "c.*", "/a/",
    "b/", "Makefile", "!Makefile", "*.md", "!README.md", ".rc", "src/util.py", "/*.txt",
]


_BOUNDARY = re.compile(r"(?<!\\)((?:\\\\)*)\\([bB])")


def for_rg(pattern: str) -> str:
    """The pattern for ripgrep: as it is, but for a `\\b`/`\\B` that `search_text`
    keeps as RE2's ASCII boundary (`app.fs.search.unicode`: a documented difference),
    spelled as ripgrep's ASCII one. Only for escapes outside brackets, which is all the
    generated patterns use."""
    if not ascii_boundaries(pattern):
        return pattern
    return _BOUNDARY.sub(lambda m: m.group(1) + "(?-u:\\" + m.group(2) + ")", pattern)


def _line(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 6)))


def _text(rnd: random.Random) -> str:
    lines = [_line(rnd) for _ in range(rnd.randint(0, 12))]
    text = "\n".join(lines)
    return text + ("\n" if lines and rnd.random() < 0.8 else "")


def _ignore(rnd: random.Random, wild: bool, here: Path) -> str:
    """Lines from the pool, and lines naming what is below `here` (so that anchored,
    `**` and negated patterns have something to match)."""
    pool = IGNORE_LINES if wild else [x for x in IGNORE_LINES if x not in ("*", "!*/")]
    subs = sorted(p.name for p in here.iterdir() if p.is_dir() and p.name != ".git")
    lines = []
    for _ in range(rnd.randint(1, 7)):
        if subs and rnd.random() < 0.5:
            sub, name = rnd.choice(subs), rnd.choice(FILES)
            shape = rnd.choice([
                "{s}/**", "{s}/**/{f}", "/{s}/", "{s}/*.md", "!{s}/{f}", "**/{s}/{f}", "{s}/{f}",
                "{s}/*", "!/{s}", "{s}/**/*.py", "/{s}/**/", "!{s}/**/{f}", "**/{s}/**",
            ])
            lines.append(shape.format(s=sub, f=name))
        else:
            lines.append(rnd.choice(pool))
    return "\n".join(lines) + "\n"


def make_tree(top: Path, seed: int) -> None:
    rnd = random.Random(seed)
    top.mkdir(parents=True, exist_ok=True)
    (top / ".git").mkdir(exist_ok=True)
    dirs = [top]
    for _ in range(rnd.randint(4, 14)):
        parent = rnd.choice(dirs)
        if len(parent.relative_to(top).parts) >= 4:
            continue
        d = parent / rnd.choice(DIRS)
        d.mkdir(exist_ok=True)
        if d not in dirs:
            dirs.append(d)
    for d in dirs:
        for name in rnd.sample(FILES, rnd.randint(1, 6)):
            (d / name).write_text(_text(rnd), encoding="utf-8")
    for d in dirs:  # after the tree exists, so that lines can name what is below
        if rnd.random() < 0.5:
            (d / ".gitignore").write_text(_ignore(rnd, rnd.random() < 0.15, d), encoding="utf-8")
        if rnd.random() < 0.2:
            (d / ".ignore").write_text(_ignore(rnd, False, d), encoding="utf-8")
    (rnd.choice(dirs) / "blob.bin").write_bytes(b"\x00foo bar\n" * 3)
    for k in range(rnd.randint(0, 3)):  # text with a NUL somewhere: binary to both
        write_with_nul(rnd.choice(dirs) / f"nul{k}.txt", rnd, rnd.randint(0, NUL_BEFORE))


# ripgrep drops a file's matches when the NUL is in its first buffer (64 KiB, or more
# once a long line has grown it); past that it may print the lines of the buffers
# before it, depending on the files it searched earlier: the trees keep NULs before this.
NUL_BEFORE = 60_000


def write_with_nul(path: Path, rnd: random.Random, at: int) -> None:
    """Generated text (lines matching often) with a NUL byte at offset `at` or at the end.
    Its first line is 3 bytes or more: ripgrep's first read is 3 bytes (it looks for a
    BOM), and the lines it completes are searched before the NUL is seen (a difference
    pinned in test_rg.py)."""
    text = b"nul"
    while len(text) <= at:
        text += (_text(rnd) or "foo bar\n").encode()
    path.write_bytes(text[:at] + b"\0" + text[at:])


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "xdg"), GIT_CONFIG_NOSYSTEM="1")
    return env


def rg(top: Path, *args: str) -> list[str]:
    """ripgrep's output lines, run in `top` with no config and no global gitignore."""
    assert RG is not None
    home = top.parent / "rg-home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [RG, "--no-config", "--hidden", "--color", "never", "--no-messages", *args],
        cwd=top, env=_env(home), capture_output=True, timeout=60, check=False,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    return done.stdout.decode("utf-8", "replace").splitlines()


def rg_hits(top: Path, pattern: str, *flags: str) -> set[tuple[str, int]]:
    out = rg(top, "-n", "-H", "--no-heading", *flags, "-e", pattern)
    hits = set()
    for row in out:
        path, line, _ = row.split(":", 2)
        hits.add((path, int(line)))
    return hits


def rg_files(top: Path, pattern: str, *flags: str) -> set[str]:
    return set(rg(top, "-l", *flags, "-e", pattern))


def rg_counts(top: Path, pattern: str, *flags: str) -> dict[str, int]:
    out = rg(top, "-c", "-H", *flags, "-e", pattern)
    return {p: int(c) for p, c in (row.rsplit(":", 1) for row in out)}


def rg_context_lines(top: Path, pattern: str, n: int, *flags: str) -> set[tuple[str, int]]:
    """Every (path, line) ripgrep prints with -C n: matches and context lines alike."""
    out = rg(top, "-n", "-H", "--no-heading", "-C", str(n), *flags, "-e", pattern)
    shown = set()
    for row in out:
        if row == "--":
            continue
        # path:line:text for a match, path-line-text for context; names hold neither.
        for sep in (":", "-"):
            head = row.split(sep, 2)
            if len(head) == 3 and head[1].isdigit() and sep not in head[0]:
                shown.add((head[0], int(head[1])))
                break
    return shown


def rg_file_list(top: Path, *flags: str) -> set[str]:
    return set(rg(top, "--files", *flags))


# -- hypothesis: patterns from a safe grammar ------------------------------------------

_atoms = st.sampled_from([
    "a", "b", "f", "o", "x", "z", "1", "2", "=", " ", "_", ".", r"\.", r"\d", r"\w", r"\s",
    r"\S", "[a-f]", "[^ ]", "[0-9]", "[A-Z]", "[[:alpha:]]", r"\b", "foo", "bar", "colo",
])
_quant = st.sampled_from(["", "", "", "*", "+", "?", "{2}", "{1,3}", "*?"])


@st.composite
def safe_regex(draw: st.DrawFn, depth: int = 0) -> str:
    """Patterns from a safe grammar: atoms, classes, groups, alternation, quantifiers."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            alts = draw(st.lists(safe_regex(depth + 1), min_size=1, max_size=3))
            parts.append("(" + "|".join(alts) + ")" + draw(_quant))
        else:
            atom = draw(_atoms)
            q = draw(_quant)
            parts.append(atom + ("" if atom == r"\b" else q))
    body = "".join(parts)
    if depth == 0:
        body = draw(st.sampled_from(["", "", "^", "(?i)"])) + body
        body += draw(st.sampled_from(["", "", "$"]))
    return body
