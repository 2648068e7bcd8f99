"""No path system call outside `app/security` (docs/architecture.md, "The choke point").

Read from the source (ast): a reference to one of `os`'s path functions (called, or
only named, as in `open_ = os.open`), a call given `dir_fd=`, `src_dir_fd=` or
`dst_dir_fd=`, a call of the builtin `open`, or an import of one of those names from
`os`. Inside `app/security` they are the point, and `app/hostfiles.py` makes the few on
the host's own files that are on no root; anywhere else each one is a place where
a later change could forget a check, so a new one fails here. `NOT_YET` holds the modules
that still make some, with how many: the number may only go down (a lower count fails
too, so that it is lowered here and never climbs back).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"

PATH_CALLS = frozenset({
    "open", "stat", "lstat", "rename", "replace", "renames", "unlink", "remove", "mkdir",
    "makedirs", "rmdir", "removedirs", "scandir", "listdir", "link", "symlink", "readlink",
    "utime", "chmod", "lchmod", "chown", "lchown", "truncate", "access", "mkfifo", "mknod",
    "walk", "fwalk", "chdir", "chroot",
})
DIR_FD_WORDS = frozenset({"dir_fd", "src_dir_fd", "dst_dir_fd"})

# The host's files on no root (the server's own state, the config file, kernel settings,
# /dev/null), by host paths the operator gave or the server chose: one module of their own.
HOST_FILES = frozenset({"app/hostfiles.py"})

# Modules that still make path system calls, and how many; each number may only go down.
NOT_YET: dict[str, int] = {}  # every module is through: the rule holds without exceptions


def _is_os_path_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in PATH_CALLS
            and isinstance(node.value, ast.Name) and node.value.id == "os")


def _calls(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if _is_os_path_call(node):
            assert isinstance(node, ast.Attribute)
            found.append((node.lineno, f"os.{node.attr}"))
        elif isinstance(node, ast.Call):
            words = {k.arg or "" for k in node.keywords} & DIR_FD_WORDS
            if words and not _is_os_path_call(node.func):  # else counted as its os.name
                found.append((node.lineno, f"a call given {sorted(words)[0]}="))
            if isinstance(node.func, ast.Name) and node.func.id == "open":
                found.append((node.lineno, "open()"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in PATH_CALLS:
                    found.append((node.lineno, f"from os import {alias.name}"))
    return sorted(found)


def _modules() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP.parent).as_posix()
        if rel.startswith("app/security/") or rel in HOST_FILES:
            continue
        calls = _calls(ast.parse(path.read_text(), rel))
        if calls:
            out[rel] = calls
    return out


def test_no_module_outside_security_makes_a_path_system_call_beyond_its_allowance() -> None:
    over = []
    for rel, calls in _modules().items():
        allowed = NOT_YET.get(rel, 0)
        if len(calls) > allowed:
            shown = ", ".join(f"line {n}: {what}" for n, what in calls)
            over.append(f"{rel} makes {len(calls)} (allowed {allowed}): {shown}")
    assert not over, "path system calls outside app/security (use app.security.ops):\n" + \
        "\n".join(over)


def test_the_allowance_is_lowered_as_calls_go() -> None:
    found = {rel: len(calls) for rel, calls in _modules().items()}
    stale = {rel: (n, found.get(rel, 0)) for rel, n in NOT_YET.items() if found.get(rel, 0) < n}
    assert not stale, f"lower NOT_YET to what each module makes now: {stale}"


@pytest.mark.parametrize(("source", "what"), [
    ("import os\nos.open('x', 0)", "os.open"),
    ("import os\nopen_ = os.open", "os.open"),
    ("import os\nwith os.scandir(3) as it: pass", "os.scandir"),
    ("import os\nos.fstat(3)\nf(name, dir_fd=3)", "a call given dir_fd="),
    ("import os\nos.rename('a', 'b', src_dir_fd=3, dst_dir_fd=4)", "os.rename"),
    ("from os import unlink", "from os import unlink"),
    ("open('/etc/passwd')", "open()"),
])
def test_the_reader_sees_each_shape_of_a_path_call(source: str, what: str) -> None:
    assert what in [w for _, w in _calls(ast.parse(source))]


@pytest.mark.parametrize("source", [
    "import os\nos.fstat(3)\nos.close(3)\nos.read(3, 10)\nos.fsync(3)",
    "import os\nos.fchmod(3, 0o600)\nos.path.join('a', 'b')",
    "from app.security import ops\nops.open_file(3, 'a')",
])
def test_the_reader_leaves_descriptor_calls_alone(source: str) -> None:
    assert _calls(ast.parse(source)) == []
