"""The import rule of docs/architecture.md: a module imports only its own layer or lower ones,
and inside a layer that orders its packages, only its own package or lower ones.

Read from the source (ast), every import counted: top-level, inside functions
(the lazy ones) and under `TYPE_CHECKING` (a type is a dependency too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"

# Lowest first. A module may import its own layer and any layer below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("app", "app.errors", "app.messages", "app.audit", "app.budget", "app.bounded",
              "app.hostfiles")),
    ("security", ("app.security",)),
    ("fs", ("app.fs",)),
    ("registry", ("app.config", "app.config_checks", "app.registry")),
    ("corpus", ("app.corpus",)),
    ("calls", ("app.calls",)),
    ("sdk", ("app.sdk",)),
    ("tools", ("app.tools",)),
    ("server", ("app.server",)),
    ("page", ("app.ui",)),
    ("transport", ("app.http", "app.stdio")),
    ("process", ("app.startup", "app.settings", "app.cli", "app.trash_cli", "app.__main__")),
]

# Packages in order inside a layer, lowest first: a module of one imports its own package and
# those of a lower rank, never one of the same rank or after. Packages of one rank are peers
# that know nothing of each other. Every module of an ordered layer sits in one of them.
INNER: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {
    "fs": [
        # cancel and progress; content hashes; RE2 below its wrapper
        (0, "base", ("app.fs.control", "app.fs.hashing", "app.fs.re2raw")),
        (1, "text", ("app.fs.text",)),  # encodings, line windows, tails, the output bound
        (2, "filters", ("app.fs.filters",)),  # globs and ignore files: which names a walk keeps
        (3, "reading", ("app.fs.reading",)),  # read, list, media
        (4, "search", ("app.fs.search",)),  # search_files, search_text: walk, match, sink
        (4, "index", ("app.fs.index",)),  # the full-text index, ranked search and fetch
        (4, "change", ("app.fs.change",)),  # write, edit, move, delete into the trash
        (4, "history", ("app.fs.history",)),  # read-only git
        (5, "code", ("app.fs.code",)),  # outlines: parse in a worker, symbols, one symbol's lines
    ],
}

# Arrows that go the wrong way today, each with why it is not fixed yet.
# An entry that no longer occurs fails the test: delete it when its arrow is fixed.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, rank): the longest prefix wins
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    if best is None:
        raise KeyError(module)
    return best[1]


def inner_of(module: str) -> int | None:
    """The index in INNER of `module`'s package inside its layer, or None when it has none."""
    for i, (_, _, prefixes) in enumerate(INNER.get(LAYERS[layer_of(module)][0], [])):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    return None


def place(module: str) -> str:
    """`module`'s layer, and its package inside it when the layer orders them: "fs/search"."""
    layer = LAYERS[layer_of(module)][0]
    inner = inner_of(module)
    return layer if inner is None else f"{layer}/{INNER[layer][inner][1]}"


def above(module: str, target: str) -> bool:
    """Whether importing `target` from `module` points up or sideways: to a higher layer, or
    inside one layer to a package of a higher rank than the module's own, or to a peer."""
    mine, theirs = layer_of(module), layer_of(target)
    if mine != theirs:
        return theirs > mine
    a, b = inner_of(module), inner_of(target)
    if a is None or b is None or a == b:
        return False
    order = INNER[LAYERS[mine][0]]
    return order[b][0] >= order[a][0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def known_modules() -> set[str]:
    return {module_name(p) for p in APP.rglob("*.py")}


def imports_of(module: str, source: str, is_package: bool, known: set[str]) -> set[str]:
    """The app modules `source` imports (`from app.fs.index.fulltext import fts`:
    app.fs.index.fulltext.fts)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "app")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "app":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    found.discard(module)
    return found


def upward_imports(module: str, targets: set[str]) -> set[tuple[str, str]]:
    return {(module, t) for t in targets if above(module, t)}


def import_graph() -> dict[str, set[str]]:
    """Every app module and the app modules it imports, as `imports_of` reads them."""
    known = known_modules()
    graph: dict[str, set[str]] = {}
    for path in APP.rglob("*.py"):
        name = module_name(path)
        source = path.read_text(encoding="utf-8")
        graph[name] = imports_of(name, source, path.name == "__init__.py", known)
    return graph


def all_upward_imports() -> set[tuple[str, str]]:
    bad: set[tuple[str, str]] = set()
    for name, targets in import_graph().items():
        bad |= upward_imports(name, targets)
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (each sorted), sorted: every
    module of one imports, through the others, every other (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            nxt = next(targets, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return sorted(found)


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name in sorted(known_modules()):
        try:
            layer_of(name)
        except KeyError:
            unplaced.append(name)
    assert unplaced == [], "place these in LAYERS (and in docs/architecture.md)"


def test_the_map_names_every_module() -> None:
    """docs/architecture.md names each module of app/, security/ and fs/ (tools/ by group)."""
    doc = (APP.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = []
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP)
        if path.name == "__init__.py" or len(rel.parts) > 2 or rel.parts[0] == "tools":
            continue
        if f"`{path.name}`" not in doc and rel.as_posix() not in doc:
            missing.append(rel.as_posix())
    assert missing == []


def test_every_ordered_package_exists() -> None:
    known = known_modules()
    missing = [p for packages in INNER.values() for _, _, prefixes in packages for p in prefixes
               if p not in known]
    assert missing == []


def test_every_module_of_an_ordered_layer_sits_in_an_ordered_package() -> None:
    stray = sorted(
        m for m in known_modules()
        if LAYERS[layer_of(m)][0] in INNER and m not in {"app.fs"} and inner_of(m) is None
    )
    assert stray == []


def test_no_lower_layer_imports_a_higher_one() -> None:
    bad = all_upward_imports() - set(EXCEPTIONS)
    readable = [f"{a} ({place(a)}) imports {b} ({place(b)})" for a, b in sorted(bad)]
    assert readable == []


def test_no_modules_import_each_other() -> None:
    """No circle of imports among app's modules, lazy and TYPE_CHECKING ones included: a
    module that needs a name from one that imports it takes a Protocol of what it uses, or
    the name moves down to where both can import it."""
    assert cycles(import_graph()) == []



# The two indexes of app.fs.index are peers: neither imports the other, and the modules they
# share (app.fs.index itself, storage, access) import neither.
INDEXES = ("app.fs.index.fulltext", "app.fs.index.trigrams")


def index_of(module: str) -> str | None:
    """Which of INDEXES `module` sits in; "shared" for app.fs.index's own modules."""
    for pkg in INDEXES:
        if module == pkg or module.startswith(pkg + "."):
            return pkg
    return "shared" if module == "app.fs.index" or module.startswith("app.fs.index.") else None


def index_crossings(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in graph.items():
        mine = index_of(module)
        for target in targets:
            theirs = index_of(target)
            if mine is not None and theirs in INDEXES and theirs != mine:
                bad.append(f"{module} imports {target}")
    return sorted(bad)


def test_the_two_indexes_know_nothing_of_each_other() -> None:
    graph = import_graph()
    assert any(index_of(m) == "app.fs.index.trigrams" for m in graph)  # the rule sees them
    assert index_crossings(graph) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"app.fs.index.fulltext.fts": {"app.fs.index.storage"}}, []),
        ({"app.fs.index.trigrams.narrow": {"app.fs.index.trigrams.watch"}}, []),
        ({"app.fs.index.fulltext.fts": {"app.fs.index.trigrams.watch"}},
         ["app.fs.index.fulltext.fts imports app.fs.index.trigrams.watch"]),
        ({"app.fs.index.storage": {"app.fs.index.fulltext"}},
         ["app.fs.index.storage imports app.fs.index.fulltext"]),
        ({"app.corpus.trigram": {"app.fs.index.trigrams.trigram", "app.fs.index.fulltext.fts"}},
         []),  # outside the index, both may be used
    ],
)
def test_the_index_rule_finds_every_crossing(graph: dict[str, set[str]],
                                             expected: list[str]) -> None:
    assert index_crossings(graph) == expected

@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"e"}, "e": {"d"}}, [["d", "e"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}, [["a", "b"], ["c", "d"]]),
        ({"a": {"x"}}, []),  # an import of something outside the graph
    ],
)
def test_the_cycle_rule_finds_every_circle(graph: dict[str, set[str]],
                                           expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_every_listed_exception_still_occurs() -> None:
    stale = set(EXCEPTIONS) - all_upward_imports()
    assert stale == set(), "these arrows are fixed: delete them from EXCEPTIONS"


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("app.security.deny", "from app.fs.reading import read", {"app.fs.reading.read"}),
        ("app.security.deny", "import app.registry", {"app.registry"}),
        ("app.fs.reading.read", "from app.tools.base import run", {"app.tools.base"}),
        ("app.fs.reading.read", "def f():\n    from app import server\n", {"app.server"}),
        ("app.fs.reading.read", "if TYPE_CHECKING:\n    from app.registry import Snapshot\n",
         {"app.registry"}),
        ("app.fs.history.store", "from ... import registry", {"app.registry"}),
        ("app.tools.base", "from app.http import build_app", {"app.http"}),
        ("app.tools.read", "from app.startup import serve", {"app.startup"}),
        ("app.calls", "from app.tools import base", {"app.tools.base"}),
        ("app.http", "from app.cli import main", {"app.cli"}),
        # inside fs: filters below search
        ("app.fs.filters.ignore", "from app.fs.search.options import MAX_EXCLUDE",
         {"app.fs.search.options"}),
        ("app.fs.filters.glob", "from ..search import walk", {"app.fs.search.walk"}),
        # the right way round: nothing to report
        ("app.tools.read", "from app.fs.reading import read\nfrom app.errors import LoomError",
         set()),
        ("app.fs.reading.read", "from app.fs.control import Control\nfrom .. import hashing",
         set()),
        ("app.fs.search.walk", "from app.fs.filters.ignore import Filter", set()),
        ("app.fs.search.text", "from app.fs.text.paging import fit_page", set()),
        ("app.fs.history.show", "from app.fs.reading import read", set()),
        ("app.fs.change.edit", "from . import atomic", set()),
        # inside fs: downward only, and peers know nothing of each other
        ("app.fs.text.textio", "from app.fs.reading import read", {"app.fs.reading.read"}),
        ("app.fs.control", "from app.fs.text import paging", {"app.fs.text.paging"}),
        ("app.fs.reading.listing", "from app.fs.search import text", {"app.fs.search.text"}),
        ("app.fs.change.edit", "from app.fs.search import text", {"app.fs.search.text"}),
        ("app.fs.index.fts", "from ..history import store", {"app.fs.history.store"}),
    ],
)
def test_the_rule_reads_imports_as_written(module: str, source: str, expected: set[str]) -> None:
    targets = imports_of(module, source, False, known_modules())
    assert {b for _, b in upward_imports(module, targets)} == expected


def test_the_bom_table_has_one_home() -> None:
    """Text decoding's BOM table is `app.fs.text.textio.BOMS`; no other module spells a BOM."""
    spelled = sorted(
        path.relative_to(APP).as_posix()
        for path in APP.rglob("*.py")
        if "codecs.BOM" in path.read_text(encoding="utf-8")
    )
    assert spelled == ["fs/text/textio.py"]


def test_serve_loads_the_http_stack_only_for_http() -> None:
    """`app.startup` imports `app.http` (Starlette, the SDK's HTTP app) lazily, like uvicorn."""
    import subprocess
    import sys

    probe = (
        "import sys, app.startup; "
        "print(sorted(m for m in ('app.http', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, cwd=APP.parent, check=True)
    assert out.stdout.strip() == "[]"
