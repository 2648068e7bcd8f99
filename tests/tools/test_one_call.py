"""A call's work is done once: its arguments validated once, its result dumped once, and
what depends only on the config snapshot (a root's index identity) computed once per
snapshot. Counted, not timed: calls of the validation, of the model's dump, of the hash."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import BaseModel

from app.registry import Registry
from app.server import LoomServer
from tests.live import text_of

CALLS = 5


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.n += 1
            return fn(*args, **kwargs)

        return counted


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    counter = Counter()
    monkeypatch.setattr(FuncMetadata, "validate_arguments",
                        counter.wrap(FuncMetadata.validate_arguments))
    yield counter


def calls(server: LoomServer, name: str, args: dict[str, Any], n: int = CALLS) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for _ in range(n)]

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_text_file", {"path": "src/main.py"}),
        ("read_text_file", {"path": "src/main.py", "start_line": 1, "end_line": "1"}),
        ("list_directory", {"path": "src", "depth": None}),
        ("search_files", {"pattern": "*.py"}),
        ("read_multiple_files", {"paths": '["src/main.py", "README.md"]'}),
    ],
)
def test_arguments_are_validated_once_per_call(
    one_root_config: Callable[..., Path], validations: Counter, tool: str, args: dict[str, Any]
) -> None:
    server = LoomServer(Registry(str(one_root_config()), audit=False))
    got = calls(server, tool, args)
    assert not any(r.is_error for r in got), text_of(got[0])
    assert validations.n == CALLS


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"path": "src/main.py", "start_line": 0}, "start_line must be at least 1 (got 0)"),
        ({"path": "src/main.py", "startline": 2}, "unknown argument 'startline' (did you mean"),
        ({}, "path"),
    ],
)
def test_a_refused_call_is_validated_once_and_says_so_in_our_words(
    one_root_config: Callable[..., Path], validations: Counter, args: dict[str, Any], said: str
) -> None:
    server = LoomServer(Registry(str(one_root_config()), audit=False))
    got = calls(server, "read_text_file", args, n=1)
    assert got[0].is_error and said in text_of(got[0]), text_of(got[0])
    assert "pydantic" not in text_of(got[0]) and "Error executing" not in text_of(got[0])
    assert validations.n <= 1


@pytest.mark.parametrize(
    ("tool", "args", "model"),
    [
        ("read_text_file", {"path": "src/main.py"}, "ReadTextResult"),
        ("read_multiple_files", {"paths": ["src/main.py", "nope.py"]}, "ReadManyResult"),
        ("stat_path", {"path": "README.md"}, "StatResult"),
        ("search_text", {"query": "hello"}, "SearchTextResult"),
    ],
)
def test_a_result_model_is_dumped_once(
    one_root_config: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
    tool: str, args: dict[str, Any], model: str,
) -> None:
    counter = Counter()
    dump = BaseModel.model_dump

    def counted(self: BaseModel, *a: Any, **kw: Any) -> Any:
        # The tool boundary's dumps (app.tools.*: the whole, the lean one), not those the
        # reading code makes to fit a page (app.fs.text.paging.json_len).
        caller = sys._getframe(1).f_globals.get("__name__", "")
        counter.n += type(self).__name__ == model and caller.startswith("app.tools")
        return dump(self, *a, **kw)

    monkeypatch.setattr(BaseModel, "model_dump", counted)
    server = LoomServer(Registry(str(one_root_config()), audit=False))
    got = calls(server, tool, args)
    assert not any(r.is_error for r in got), text_of(got[0])
    assert counter.n == CALLS


def test_the_index_identity_is_computed_once_per_snapshot(
    one_root_config: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.corpus import ranked, trigram

    counter = Counter()
    monkeypatch.setattr(ranked.hashlib, "sha256", counter.wrap(hashlib.sha256))
    registry = Registry(str(one_root_config()), audit=False)
    snap = registry.current
    root = snap.root("main")
    first = [trigram.identity(snap, root), ranked.identity(snap, root, 0)]
    for _ in range(CALLS):
        assert [trigram.identity(snap, root), ranked.identity(snap, root, 0)] == first
        assert ranked.dir_problem(snap) is None
    assert counter.n == 2  # one per identity, whatever the number of calls
    # A new snapshot computes its own (its rules may differ).
    fresh = registry.reload()
    assert trigram.identity(fresh, fresh.root("main")) == first[0]
    assert counter.n == 4


def sample(annotation: Any, pick: int) -> Any:
    """A value of `annotation`: `pick` chooses among the shapes (None, empty, one, two)."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return None if pick % 3 == 0 and len(options) < len(args) else sample(options[0], pick)
    if origin is list:
        return [sample(args[0], pick + i) for i in range(pick % 3)]
    if origin is typing.Literal:
        return args[pick % len(args)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return instance(annotation, pick)
    plain: dict[Any, list[Any]] = {str: ["", "x", "é\n"], int: [0, 1, 7],
                                   bool: [False, True, True], float: [0.0, 1.5, 2.0]}
    return plain.get(annotation, [None] * 3)[pick % 3]


def instance(cls: type[BaseModel], pick: int) -> BaseModel:
    values = {}
    for i, (name, info) in enumerate(cls.model_fields.items()):
        if info.is_required() or (pick + i) % 2:
            values[name] = sample(info.annotation, pick + i)
    return cls.model_validate(values)


def models() -> list[type[BaseModel]]:
    from tests.kit import result_models

    return sorted(set(result_models().values()), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", models(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("pick", range(6))
def test_lean_from_the_whole_dump_is_pydantics_lean(cls: type[BaseModel], pick: int) -> None:
    from app.tools.lean import lean, lean_of

    try:
        model = instance(cls, pick)
    except ValueError:  # a sample its validators refuse: nothing to compare
        pytest.skip("no valid sample")
    assert lean_of(model, model.model_dump(mode="json")) == lean(model)


# What a small read never needs: the search machinery (the trigram index and its watcher,
# the content search), imported at the first search_text, not at start; and the git library
# (dulwich), imported by the first delta a history call applies.
NOT_AT_START = ("app.corpus.trigram", "app.fs.index.trigrams.trigram", "app.fs.search.text")


def test_start_and_a_small_read_do_not_import_the_search_machinery(
    one_root_config: Callable[..., Path],
) -> None:
    code = f"""
import asyncio, sys
from mcp import Client
from app.registry import Registry
from app.server import LoomServer

async def main():
    async with Client(LoomServer(Registry({str(one_root_config())!r}, audit=False))) as c:
        got = await c.call_tool("read_text_file", {{"path": "src/main.py"}})
        assert not got.is_error
        before = [m for m in {NOT_AT_START!r} if m in sys.modules]
        assert "dulwich" not in sys.modules, "a read loaded the git library"
        got = await c.call_tool("search_text", {{"query": "hello"}})
        assert not got.is_error
        print(before, [m for m in {NOT_AT_START!r} if m in sys.modules])

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"[] {list(NOT_AT_START)}"
