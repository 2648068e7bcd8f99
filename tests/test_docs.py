"""README and docs/: every relative link lands on a file (and a heading, when it names
one), the repository cites no document it does not hold (docs/ is the reference: a
`docs/page.md` cited in code exists, with its heading), and README's 5-minute tour
does what the README shows when it is run."""

from __future__ import annotations

import ast
import importlib
import io
import re
import subprocess
import sys
import tokenize
import unicodedata
from pathlib import Path

import pytest

from tests.live import live_server

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    return broken


def test_the_docs_exist_and_are_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## The `x` part (y)\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#the-x-part-y) [ok](#here) [web](https://example.com/x)\n"
        "# Here\n[gone](nope.md) [bad](a.md#nope)\n```\n[in a fence](nope.md)\n```\n"
    )
    assert broken_links(page) == ["nope.md: no such file", "a.md#nope: no heading with that anchor"]


CODE_PATH = re.compile(r"`((?:app|tests|benchmarks|scripts)/[\w./-]*)`")
DOTTED = re.compile(r"`(app(?:\.\w+)+)`")


def stale_names(text: str) -> list[str]:
    """Backticked repository paths that do not exist, dotted `app.` names that do not import."""
    cited = [p for p in CODE_PATH.findall(text) if "*" not in p and "/." not in p]  # not caches
    stale = [p for p in cited if not (REPO / p).exists()]
    for dotted in DOTTED.findall(text):
        parts = dotted.split(".")
        obj: object  # a module, then what its attributes name (None: no such name)
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            try:
                obj = importlib.import_module(module)
                break
            except ModuleNotFoundError as err:
                if not module.startswith(err.name or "\0"):
                    raise  # a dependency is missing here, not a stale name in the docs
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        if obj is None:
            stale.append(dotted)
    return stale


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_module_and_name_the_docs_cite_exists(page: Path) -> None:
    assert stale_names(page.read_text()) == []


def test_a_moved_module_or_name_is_caught() -> None:
    text = (
        "`app/fs/reading/read.py` `app/nope.py` `app.fs.reading.read.read_text_file` "
        "`app.fs.reading.read.gone`"
    )
    assert stale_names(text) == ["app/nope.py", "app.fs.reading.read.gone"]


def test_every_dependency_is_named_where_its_reason_is_given() -> None:
    """Each runtime and test dependency in pyproject.toml is named in docs/dependencies.md,
    and each runtime one in the README's Dependencies section."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

    def names(specs: list[str]) -> set[str]:
        return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0] for spec in specs}

    runtime = names(project["dependencies"])
    tests = names(project["optional-dependencies"]["test"])
    readme = (REPO / "README.md").read_text().split("\n## Dependencies\n", 1)[1]
    reasons = (REPO / "docs" / "dependencies.md").read_text()
    assert {n for n in runtime if f"`{n}`" not in readme} == set()
    assert {n for n in runtime | tests if f"`{n}`" not in reasons} == set()


# -- the repository stands alone -------------------------------------------------

SKIPPED = {".git", ".venv", ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache",
           ".ci-cache", "node_modules", "__pycache__", ".mutation", "mutants", ".trees", ".cache"}
# A citation of a document the repository does not hold: the product contract by its
# shorthand or file name, other notes files by name, "the spec" (the MCP spec is a
# public document and may be cited as such), a numbered section (only a public RFC's).
OUTSIDE = re.compile(
    r"\bSPEC\b|\b(?:STYLE|SDK-NOTES|BRIEF)\.md\b|(?<!MCP )\b[Tt]he spec\b|§"
)
RFC_BEFORE = re.compile(r"\bRFC \d+ $")
DOCS_CITE = re.compile(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?")
# Names of that shape that are data, not citations: files of the repositories the
# benchmarks and tests build.
NOT_CITATIONS = {"docs/rare.md"}


def repository_files() -> list[Path]:
    """Every text file of the repository (not caches, environments or build output)."""
    found = []
    for path in sorted(REPO.rglob("*")):
        parts = path.relative_to(REPO).parts
        if not path.is_file() or SKIPPED & set(parts) or parts[0].endswith(".egg-info"):
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        found.append(path)
    return found


def outside_citations(text: str) -> list[str]:
    """The lines of `text` that cite a document outside the repository."""
    cited = []
    for m in OUTSIDE.finditer(text):
        if m[0] == "§" and RFC_BEFORE.search(text[max(0, m.start() - 12):m.start()]):
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        cited.append(text[start:end if end >= 0 else None].strip())
    return cited


def test_no_file_cites_a_document_outside_the_repository() -> None:
    cited = {path.relative_to(REPO).as_posix(): outside_citations(path.read_text("utf-8"))
             for path in repository_files() if path != Path(__file__)}  # this file names them
    assert {name: lines for name, lines in cited.items() if lines} == {}


@pytest.mark.parametrize(
    ("text", "cites"),
    [
        # The contract by shorthand, file name or section; notes files; "the spec".
        ("Ranking (SPEC §4.6): BM25", True),
        ("the role ceilings of SPEC 3.1", True),
        ("whose text is the SPEC's message", True),
        ("The contract is `SPEC.md`'s", True),
        ("as STYLE.md says", True),
        ("see SDK-NOTES.md", True),
        ("rules of spec §2", True),
        ("# The spec's floor: a write_file", True),
        # Public documents, and words that only contain the letters.
        ("the auth scheme (RFC 9110 §11.1)", False),
        ("as the MCP spec says", False),
        ("INSPECTOR_JS=$PKGS/x.js", False),
        ("| `reference` | read | docs, specs, data never to modify |", False),
        ("spec = ToolSpec(name)", False),
    ],
)
def test_a_citation_outside_is_caught(text: str, cites: bool) -> None:
    assert bool(outside_citations(text)) is cites


def prose_of(source: str) -> str:
    """A Python file's docstrings and comments (its string data is not prose)."""
    tree = ast.parse(source)
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    docs = [ast.get_docstring(n, clean=False) or "" for n in ast.walk(tree) if isinstance(n, kinds)]
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT]
    return "\n".join(docs + comments)


def stale_doc_citations(prose: str) -> list[str]:
    """`docs/page.md` and `docs/page.md#anchor` citations that land nowhere."""
    stale = []
    for m in DOCS_CITE.finditer(prose):
        if m[0] in NOT_CITATIONS:
            continue
        page = REPO / "docs" / m[1]
        if not page.is_file() or (m[2] and m[2] not in anchors(page)):
            stale.append(m[0])
    return stale


def test_every_docs_page_the_code_cites_exists() -> None:
    stale = {}
    for path in repository_files():
        if path.suffix == ".py" and path != Path(__file__):  # this file's are examples
            found = stale_doc_citations(prose_of(path.read_text("utf-8")))
            if found:
                stale[path.relative_to(REPO).as_posix()] = found
    assert stale == {}


def test_a_stale_docs_citation_is_caught() -> None:
    source = (
        '"""See docs/tools.md#history-git and docs/security.md."""\n'
        "# docs/nope.md, docs/tools.md#no-such-heading\n"
        "EXAMPLE = 'docs/guide.md'  # a file in a test tree, not a citation\n"
    )
    stale = stale_doc_citations(prose_of(source))
    assert stale == ["docs/nope.md", "docs/tools.md#no-such-heading"]


# -- the tour, replayed ---------------------------------------------------------


def readme_block(lang: str, after: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(after)
    m = re.compile(rf"^```{lang}\n(.*?)^```", re.M | re.S).search(text, start)
    assert m is not None, (lang, after)
    return m[1]


def readme_blocks(lang: str, after: str, before: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    part = text[text.index(after) : text.index(before)]
    return re.findall(rf"^```{lang}\n(.*?)^```", part, re.M | re.S)


def test_the_tours_commands_are_the_client_guides_checked_ones() -> None:
    """The token, start and `claude mcp add` lines of the tour are those docs/clients.md
    gives, which tests/clients/test_client_guides.py replays against a running server. The
    server, which stays in the foreground, has a block of its own: the others go in another
    terminal, and pasting a block never leaves a line waiting behind the server."""
    guide = (REPO / "docs" / "clients.md").read_text()
    guide_lines = {
        line.strip() for m in re.finditer(r"```bash\n(.*?)```", guide, re.S)
        for line in m[1].splitlines()
    }
    step = readme_blocks("bash", "**2. Serve it, and connect a client.**", "**3. A few calls.**")
    blocks = [[ln.strip() for ln in b.splitlines() if ln.strip()] for b in step]
    lines = [ln for b in blocks for ln in b]
    assert len(lines) == 3
    assert set(lines) <= guide_lines, set(lines) - guide_lines
    assert ["./start_http.sh"] in blocks
    for page in (REPO / "README.md", REPO / "docs" / "clients.md"):
        for m in re.finditer(r"```bash\n(.*?)```", page.read_text(), re.S):
            cmds = [ln.split("#")[0].strip() for ln in m[1].splitlines()]
            cmds = [c for c in cmds if c]
            if any(c.startswith("./start_http.sh") for c in cmds):
                assert cmds[-1].startswith("./start_http.sh"), (page.name, cmds)


def variable_free(text: str) -> str:
    """What does not change from one run to the next (hashes and trash stamps do)."""
    text = re.sub(r"\b[0-9a-f]{64}\b", "<sha256>", text)
    return re.sub(r"\b\d{8}T\d{6}Z(?:-\d+)?(?=/)", "<stamp>", text)


def test_the_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes" / "guides").mkdir(parents=True)
    (home / "scratch").mkdir()
    (home / "notes" / "release.md").write_text(
        "# Release checklist\n\n- TODO: tag the release\n- update the changelog\n")
    (home / "notes" / "guides" / "setup.md").write_text(
        "Setup\n\nTODO: document the proxy settings\n")
    (home / "notes" / ".env").write_text("API_KEY=s3cret\n")
    config = tmp_path / "roots.toml"
    config.write_text(readme_block("toml", "## A 5-minute tour").replace("~/", f"{home}/"))
    script = readme_block("python", "**3. A few calls.**")
    shown = readme_block("text", "**3. A few calls.**")
    token = "tour-token-51f0"
    with live_server(config, token=token) as srv:
        run = subprocess.run(
            [sys.executable, "-c", script.replace("http://127.0.0.1:8000/mcp", srv.url)],
            env={"LOOMFS_TOKEN": token, "PATH": "/usr/bin:/bin"},
            capture_output=True, text=True, timeout=60,
        )
    assert run.returncode == 0, run.stderr
    got = variable_free(run.stdout)
    for line in variable_free(shown).splitlines():
        assert line in got.splitlines(), line
    assert got.count("> ") == shown.count("> ")
    assert not (home / "scratch" / "plan.md").exists()
    assert not (home / "notes" / "new.md").exists()
    # The trash command the tour gives, as written (the fresh delete and the version the edit
    # kept stay: younger than 30 days).
    readme = " ".join((REPO / "README.md").read_text().split())
    m = re.search(r"`\.venv/bin/loom-fs-mcp (--config \S+ --empty-trash [^`]*)`", readme)
    assert m is not None
    args = m[1].replace("config/roots.toml", str(config)).split()
    empty = subprocess.run([str(Path(sys.executable).parent / "loom-fs-mcp"), *args],
                           capture_output=True, text=True, timeout=60)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.startswith(
        "removed 0 item(s) (deletes and versions), 0 bytes; kept 2 newer"), empty.stdout
