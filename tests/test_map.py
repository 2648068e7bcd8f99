"""docs/testing.md's map from each module of app/ to the tests that exercise it is current.

The map is made from the source: a test file is listed under a module when it imports it
(any import, lazy ones included, read with `tests/test_layers.imports_of`); the files
named after the module come first. After adding or moving a module or a test file,
rewrite it and review the diff: `.venv/bin/python -m tests.test_map`.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_layers import imports_of, known_modules

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "testing.md"
START, END = "<!-- map: start -->", "<!-- map: end -->"
SHOWN = 8  # test files listed per module; the rest counted


def _test_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _named_after(module: str, test: Path) -> bool:
    """`tests/fs/change/test_write.py` is named after `app.fs.change.write`."""
    parts = module.split(".")[1:]
    rel = test.relative_to(REPO / "tests").with_suffix("").parts
    return bool(parts) and rel[-1].startswith(f"test_{parts[-1]}") and (
        list(rel[:-1]) == parts[:-1] or len(parts) == 1 or rel[:-1] == ()
    )


def importers_by_module() -> dict[str, list[str]]:
    known = known_modules()
    users: dict[str, set[Path]] = {m: set() for m in known}
    for test in sorted((REPO / "tests").rglob("*.py")):
        source = test.read_text(encoding="utf-8")
        for target in imports_of(_test_name(test), source, test.name == "__init__.py", known):
            if target in users:
                users[target].add(test)
    out: dict[str, list[str]] = {}
    for module in sorted(known):
        files = sorted(users[module], key=lambda t: (not _named_after(module, t), str(t)))
        out[module] = [t.relative_to(REPO).as_posix() for t in files]
    return out


def app_importers() -> dict[str, set[str]]:
    """For each module of app/, the modules of app/ that import it."""
    known = known_modules()
    out: dict[str, set[str]] = {m: set() for m in known}
    for path in sorted((REPO / "app").rglob("*.py")):
        name = _test_name(path).removesuffix(".__init__")
        for target in imports_of(name, path.read_text(encoding="utf-8"),
                                 path.name == "__init__.py", known):
            if target in out:
                out[target].add(name)
    return out


def render() -> str:
    lines = ["| module | tests that import it (those named after it first) |", "|---|---|"]
    by_app = app_importers()
    for module, files in importers_by_module().items():
        if module.endswith("__main__") or (REPO / Path(*module.split("."))).is_dir():
            continue  # a package's __init__ holds its docstring and little else
        shown = ", ".join(f"`{f.removeprefix('tests/')}`" for f in files[:SHOWN])
        more = f", and {len(files) - SHOWN} more" if len(files) > SHOWN else ""
        if not shown:
            via = sorted(by_app[module])
            shown = "none directly; through " + (
                ", ".join(f"`{module_name_path(m)}`" for m in via[:3])
                + (f" and {len(via) - 3} more" if len(via) > 3 else "")
                if via else "the running server (`tests/service/`, `tests/clients/`)"
            )
        lines.append(f"| `{module_name_path(module)}` | {shown}{more} |")
    return "\n".join(lines)


def module_name_path(module: str) -> str:
    path = Path(*module.split("."))
    return f"{path}/" if (REPO / path).is_dir() else f"{path}.py"


def current_doc() -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.sub(
        re.escape(START) + r".*?" + re.escape(END),
        lambda _: f"{START}\n{render()}\n{END}",
        text,
        flags=re.S,
    )


def test_the_map_of_modules_to_tests_is_current() -> None:
    assert START in DOC.read_text(encoding="utf-8")
    assert DOC.read_text(encoding="utf-8") == current_doc(), (
        "docs/testing.md is stale: run `.venv/bin/python -m tests.test_map` and review the diff"
    )


if __name__ == "__main__":
    DOC.write_text(current_doc(), encoding="utf-8")
    print(f"rewrote {DOC.relative_to(REPO)}")
