"""The size rules of docs/architecture.md: small modules, functions that fit on a screen.

No module in app/ over 500 lines, no function over 70 (decorators and docstring included), and no
run of six or more lines written twice in app/. A module or function still over its limit is listed
below with why; an entry that no longer applies fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"
MODULE_LINES = 500
FUNCTION_LINES = 70
RUN = 6  # lines in a row that count as written twice

# "path" or "path:function" -> why it is still over its limit. Delete an entry when it fits.
OVER: dict[str, str] = {
}


def sources() -> dict[str, str]:
    return {p.relative_to(APP).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(APP.rglob("*.py"))}


def long_modules(files: dict[str, str]) -> dict[str, int]:
    return {name: n for name, text in files.items()
            if (n := len(text.splitlines())) > MODULE_LINES}


def long_functions(files: dict[str, str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, text in files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > FUNCTION_LINES:
                    found[f"{name}:{node.name}"] = max(length, found.get(f"{name}:{node.name}", 0))
    return found


_TRIVIAL = re.compile(
    r"^[\s()\[\]{},:;]*$"  # lone brackets
    r"|^(else:|try:|finally:|return|pass|continue|break)$"
    r"|^(from \S+ )?import \S"  # an import block is not logic written twice
)


def significant_lines(text: str) -> list[tuple[int, str]]:
    """(number, text) of the lines that carry code: no blanks, comments, brackets, imports."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not _TRIVIAL.match(stripped):
            out.append((number, stripped))
    return out


def repeated_runs(files: dict[str, str], run: int = RUN) -> list[tuple[str, str]]:
    """Pairs of places ("file:line") that share `run` significant lines in a row, one per run."""
    lines = {name: significant_lines(text) for name, text in files.items()}
    seen: dict[tuple[str, ...], list[tuple[str, int]]] = defaultdict(list)
    for name, numbered in lines.items():
        for i in range(len(numbered) - run + 1):
            seen[tuple(t for _, t in numbered[i:i + run])].append((name, i))
    matches = set()
    for places in seen.values():
        for k, (a, i) in enumerate(places):
            for b, j in places[k + 1:]:
                if a != b or abs(i - j) >= run:  # not a run overlapping itself
                    matches.add((a, i, b, j))
    # a longer shared run is many windows in a row: report only the first
    starts = [m for m in matches if (m[0], m[1] - 1, m[2], m[3] - 1) not in matches]
    return sorted((f"{a}:{lines[a][i][0]}", f"{b}:{lines[b][j][0]}") for a, i, b, j in starts)


def test_no_module_over_the_limit() -> None:
    over = {k: v for k, v in long_modules(sources()).items() if k not in OVER}
    assert over == {}, f"modules over {MODULE_LINES} lines: split them along a seam"


def test_no_function_over_the_limit() -> None:
    over = {k: v for k, v in long_functions(sources()).items() if k not in OVER}
    assert over == {}, f"functions over {FUNCTION_LINES} lines: split them into named phases"


def test_every_listed_exception_is_still_over() -> None:
    files = sources()
    still = set(long_modules(files)) | set(long_functions(files))
    assert set(OVER) - still == set(), "these fit now: delete them from OVER"


def test_no_code_written_twice() -> None:
    """At most one pair of places in app/ shares six significant lines in a row."""
    assert len(repeated_runs(sources())) <= 1, repeated_runs(sources())


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"a.py": "x = 1\n" * 3}, []),
        ({"a.py": "".join(f"v{i} = f({i})\n" for i in range(6)),
          "b.py": "y = 0\n" + "".join(f"v{i} = f({i})\n" for i in range(6))},
         [("a.py:1", "b.py:2")]),
        # a longer shared run is still one pair, and blank lines or comments do not hide it
        ({"a.py": "".join(f"v{i} = f({i})\n" for i in range(9)),
          "b.py": "".join(f"v{i} = f({i})\n\n# note\n" for i in range(9))},
         [("a.py:1", "b.py:1")]),
        # five shared lines are not a run
        ({"a.py": "".join(f"v{i} = f({i})\n" for i in range(5)),
          "b.py": "".join(f"v{i} = f({i})\n" for i in range(5))}, []),
        # lone brackets and `return` do not make code the same
        ({"a.py": "a = 1\n)\n]\n}\nreturn\npass\n)\n]\n",
          "b.py": ")\n]\n}\nreturn\npass\n)\n]\n"}, []),
        # nor do the same imports
        ({"a.py": "".join(f"from m import n{i}\nimport k{i}\n" for i in range(4)),
          "b.py": "".join(f"from m import n{i}\nimport k{i}\n" for i in range(4))}, []),
    ],
)
def test_the_repeat_finder_reads_runs(
    files: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    assert repeated_runs(files) == expected


def test_the_function_measure_counts_decorators_and_docstring() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINES - 3))
    fits = f"@decorator\ndef f():\n    '''Doc.'''\n{body}"
    assert long_functions({"m.py": fits}) == {}
    assert long_functions({"m.py": fits + "    return x0\n"}) == {"m.py:f": FUNCTION_LINES + 1}
