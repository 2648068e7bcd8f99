"""One fixture per name: no test module or conftest defines a fixture under a name the
shared tests/conftest.py already gives (a second `tree` reads like the first and is not)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def fixtures(path: Path) -> dict[str, int]:
    """The fixtures a module defines: name -> line."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(target) in ("pytest.fixture", "fixture"):
                    found[node.name] = node.lineno
    return found


def shadows(shared: Path, modules: list[Path]) -> list[str]:
    names = set(fixtures(shared))
    return [
        f"{path.relative_to(shared.parent)}:{line}: {name}"
        for path in modules if path != shared
        for name, line in fixtures(path).items() if name in names
    ]


def test_no_fixture_reuses_a_shared_fixtures_name() -> None:
    assert shadows(TESTS / "conftest.py", sorted(TESTS.rglob("*.py"))) == []


def test_a_second_tree_is_caught(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef tree(): ...\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='module')\ndef tree(): ...\n\n"
        "@pytest.fixture\ndef other(): ...\n"
    )
    assert shadows(tmp_path / "conftest.py", sorted(tmp_path.glob("*.py"))) == [
        "test_x.py:4: tree"]
