"""app/sdk.py is the one module that reaches into the MCP SDK, and what it reaches for is there.

Every name in `sdk.RELIED_ON` is looked up on a real instance of its owner, built
through the SDK's public constructors, and must be what the adapter expects; a
release that moves one fails here naming it. Then the source of `app/` is read
(ast) for private names of the SDK used anywhere but app/sdk.py: an attribute of
an SDK object, a `getattr` by name, or `self._x` in a subclass of an SDK class
(which would also shadow the SDK's own attribute).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mcp
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool, ToolManager
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import BaseModel

from app import sdk

APP = Path(__file__).resolve().parent.parent / "app"
# A server holds the SDK's server-side objects only: its client's names are not looked for.
SDK_SOURCES = [Path(mcp.__file__).parent / part for part in ("server", "shared")]


class Answer(BaseModel):
    value: int


def probe(x: int) -> Answer:
    """A tool of the shape the server registers: typed arguments, a model out."""
    return Answer(value=x)


def instances() -> dict[type, object]:
    """One real instance of every class `RELIED_ON` names, from public constructors only."""
    low = Server(name="probe")
    return {
        MCPServer: MCPServer(name="probe"),
        ToolManager: ToolManager(),
        Tool: Tool.from_function(probe, structured_output=True),
        FuncMetadata: func_metadata(probe, structured_output=True),
        Server: low,
        StreamableHTTPSessionManager: StreamableHTTPSessionManager(app=low, max_sessions=2),
        StreamableHTTPServerTransport: StreamableHTTPServerTransport(
            mcp_session_id="probe", idle_timeout=5
        ),
    }


def mismatch(relied: sdk.Relied, instance: object) -> str | None:
    """Why `instance` does not carry `relied` as app/sdk.py expects it, or None."""
    where = f"mcp {version('mcp')}: {relied.owner.__module__}.{relied.owner.__qualname__}"
    if not hasattr(instance, relied.name):
        return f"{where} has no attribute {relied.name!r} (app/sdk.py relies on it)"
    value = getattr(instance, relied.name)
    if isinstance(relied.kind, tuple):
        if not callable(value):
            return f"{where}.{relied.name} is no longer a method ({type(value).__name__})"
        params = list(inspect.signature(value).parameters)[: len(relied.kind)]
        if params != list(relied.kind):
            return f"{where}.{relied.name} now takes {params}, app/sdk.py passes {relied.kind}"
    elif not isinstance(value, relied.kind):
        return (f"{where}.{relied.name} is a {type(value).__name__}, app/sdk.py expects "
                f"a {relied.kind.__name__}")
    return None


@pytest.mark.parametrize("relied", sdk.RELIED_ON, ids=lambda r: f"{r.owner.__name__}.{r.name}")
def test_every_name_the_adapter_relies_on_is_there(relied: sdk.Relied) -> None:
    assert mismatch(relied, instances()[relied.owner]) is None


class _Moved:
    """Stand-ins for an SDK release that moved or changed a name."""

    _requests_in_flight = "0"

    def _admit_session(self, requestor: Any, limit: int) -> None: ...

    def get_tool(self, key: str) -> None: ...


@pytest.mark.parametrize(
    ("relied", "said"),
    [
        (sdk.Relied(StreamableHTTPSessionManager, "_server_instances", dict),
         "StreamableHTTPSessionManager has no attribute '_server_instances'"),
        (sdk.Relied(StreamableHTTPServerTransport, "_requests_in_flight", int),
         "StreamableHTTPServerTransport._requests_in_flight is a str, app/sdk.py expects a int"),
        (sdk.Relied(ToolManager, "get_tool", ("name",)),
         "ToolManager.get_tool now takes ['key'], app/sdk.py passes ('name',)"),
        (sdk.Relied(StreamableHTTPSessionManager, "_admit_session", ("requestor", "x")),
         "_admit_session now takes ['requestor', 'limit']"),
    ],
)
def test_a_moved_name_fails_naming_it(relied: sdk.Relied, said: str) -> None:
    problem = mismatch(relied, _Moved())
    assert problem is not None and said in problem
    assert problem.startswith(f"mcp {version('mcp')}: ")


def test_the_adapter_declares_every_name_it_reaches_for() -> None:
    """Each attribute app/sdk.py reads or sets on an SDK object is in RELIED_ON, and
    each entry of RELIED_ON is used (public names of the SDK's own API aside)."""
    tree = ast.parse((APP / "sdk.py").read_text(encoding="utf-8"))
    private = {n.attr for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and _private(n.attr)}
    declared = {r.name for r in sdk.RELIED_ON}
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert private - declared == set(), "add these to sdk.RELIED_ON"
    assert declared - used == set(), "sdk.RELIED_ON lists names app/sdk.py no longer uses"


# -- nobody else ---------------------------------------------------------------------

# Private names of the SDK used outside app/sdk.py today, each with why it is not moved
# yet. An entry that no longer occurs fails the test: delete it when its use is moved.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _names_defined(tree: ast.AST) -> set[str]:
    """Private names a class body or module defines: methods, `self._x` and `_x: T`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
    return {n for n in found if _private(n)}


@functools.cache
def sdk_private_names() -> frozenset[str]:
    """Every private attribute or method name the installed SDK's server side defines."""
    names: set[str] = set()
    for path in (p for folder in SDK_SOURCES for p in folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            names |= _names_defined(cls)
    return frozenset(names)


@functools.cache
def sdk_class_names(cls: type) -> frozenset[str]:
    """The private names an SDK class and its SDK ancestors define."""
    names: set[str] = set()
    for ancestor in cls.__mro__:
        if ancestor.__module__.split(".")[0] == "mcp":
            names |= _names_defined(ast.parse(inspect.getsource(ancestor)))
    return frozenset(names)


def _sdk_classes_imported(tree: ast.AST) -> dict[str, type]:
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mcp":
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, type):
                    found[alias.asname or alias.name] = value
    return found


def sdk_private_uses(source: str) -> set[str]:
    """The SDK's private names `source` touches."""
    tree = ast.parse(source)
    universe = sdk_private_names()
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in universe:
            owner = node.value
            own = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            own |= isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super"
            if not own:
                used.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and node.args[1].value in universe):
            used.add(node.args[1].value)
    imported = _sdk_classes_imported(tree)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        inherited: set[str] = set()
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in imported:
                inherited |= sdk_class_names(imported[base.id])
        used |= {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
                 and isinstance(n.value, ast.Name) and n.value.id == "self"
                 and n.attr in inherited}
    return used


def all_sdk_private_uses() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(APP.rglob("*.py")):
        rel = path.relative_to(APP).as_posix()
        if rel != "sdk.py":
            found |= {(rel, name) for name in sdk_private_uses(path.read_text(encoding="utf-8"))}
    return found


def test_no_module_but_the_adapter_touches_a_private_name_of_the_sdk() -> None:
    assert sorted(all_sdk_private_uses() - set(EXCEPTIONS)) == [], "go through app/sdk.py"


def test_every_listed_exception_still_occurs() -> None:
    stale = set(EXCEPTIONS) - all_sdk_private_uses()
    assert stale == set(), "these uses went through app/sdk.py: delete them from EXCEPTIONS"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # An SDK object's private attribute, read, written, or named to getattr.
        ("def f(m):\n    return len(m._server_instances)\n", {"_server_instances"}),
        ("def f(m, g):\n    m._admit_session = g\n", {"_admit_session"}),
        ("def f(t):\n    return getattr(t, '_requests_in_flight', 0)\n", {"_requests_in_flight"}),
        ("def f(s):\n    return s._lowlevel_server.run\n", {"_lowlevel_server"}),
        # A subclass reaching into its SDK base, or shadowing one of its names.
        ("from mcp.server.mcpserver import MCPServer\nclass S(MCPServer):\n"
         "    def f(self):\n        return self._tool_manager.get_tool('x')\n",
         {"_tool_manager"}),
        ("from mcp.server.mcpserver import MCPServer\nclass S(MCPServer):\n"
         "    def __init__(self):\n        self._subscriptions = None\n", {"_subscriptions"}),
        # Our own private names, and a subclass's own names: nothing to report.
        ("from mcp.server.mcpserver import MCPServer\nclass S(MCPServer):\n"
         "    def __init__(self):\n        self._bus = None\n        self._catalog = []\n",
         set()),
        ("class Ours:\n    def f(self):\n        return self._server_instances\n", set()),
        ("def f(m):\n    return m.session_manager, m.__class__\n", set()),
    ],
)
def test_the_scan_reads_private_uses_as_written(source: str, expected: set[str]) -> None:
    assert sdk_private_uses(source) == expected
