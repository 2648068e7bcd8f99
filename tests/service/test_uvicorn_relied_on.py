"""What app/http/protocol.py relies on in uvicorn is there, on the installed version.

`LimitedHttpToolsProtocol` subclasses uvicorn's `HttpToolsProtocol` (and `_HeldFlow` its
`FlowControl`), which are not uvicorn's public interface: `protocol.RELIED_ON` lists every
attribute read or set on them. One test resolves each name on a real protocol that is
answering a real request over a socket (so the per-request `cycle` exists); another reads
protocol.py and fails on an attribute of uvicorn's that the list does not name, so a new use
cannot slip past the first. pyproject.toml pins uvicorn below its next minor; a new minor is
taken by raising the pin, with this test green.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from app.http import protocol
from app.http.protocol import LimitedHttpToolsProtocol

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# asyncio.Protocol's own methods, which any protocol has: overriding them is not reliance.
PROTOCOL_METHODS = frozenset(
    name for name in dir(asyncio.Protocol) if not name.startswith("_"))


def _resolve(obj: object, dotted: str) -> bool:
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


async def _answering_protocol(check: Callable[[LimitedHttpToolsProtocol], None]) -> None:
    """Run `check` on a protocol whose request's answer is under way, then let it finish."""
    proceed = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await proceed.wait()
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app=app, lifespan="off", log_level="warning")
    config.load()
    loop = asyncio.get_running_loop()
    conn = LimitedHttpToolsProtocol(config, ServerState(), app_state={}, _loop=loop)
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    with theirs:
        await loop.connect_accepted_socket(lambda: conn, ours)
        await loop.sock_sendall(theirs, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        for _ in range(200):
            if conn.cycle is not None and conn.cycle.response_started:
                break
            await asyncio.sleep(0.01)
        try:
            check(conn)
        finally:
            proceed.set()
            answer = await asyncio.wait_for(loop.sock_recv(theirs, 4096), 5)
            conn.transport.close()
    assert answer.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("name", protocol.RELIED_ON)
def test_each_name_protocol_relies_on_is_on_the_installed_uvicorn(name: str) -> None:
    missing: list[str] = []

    def check(conn: LimitedHttpToolsProtocol) -> None:
        if not _resolve(conn, name):
            missing.append(name)

    asyncio.run(_answering_protocol(check))
    assert missing == [], f"uvicorn {uvicorn.__version__} has no {name}"


def _ours(cls: type) -> frozenset[str]:
    """The names a class of protocol.py defines itself (methods, class attributes, and what
    its methods set on `self` that its uvicorn base does not have)."""
    tree = ast.parse(inspect.getsource(cls))
    base = cls.__mro__[1]
    names = {n.name for n in tree.body[0].body if isinstance(n, ast.FunctionDef)}  # type: ignore[attr-defined]
    names |= {t.id for n in tree.body[0].body if isinstance(n, ast.Assign)  # type: ignore[attr-defined]
              for t in n.targets if isinstance(t, ast.Name)}
    names |= {t.id for n in tree.body[0].body if isinstance(n, ast.AnnAssign)  # type: ignore[attr-defined]
              if isinstance(t := n.target, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
              and isinstance(n.value, ast.Name) and n.value.id == "self"
              and isinstance(n.ctx, ast.Store) and n.attr.startswith("_")
              and not hasattr(base, n.attr)}
    return frozenset(names)


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_super(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def _holder(node: ast.expr) -> str | None:
    """`x` for `x.attr` and `self.x.attr`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return node.attr
    return None


def _used() -> set[str]:
    """Every attribute protocol.py reads or sets on uvicorn's objects, dotted from the
    protocol: `self.x` and `super().x` that are not its own, and what it reaches through
    `cycle`, `flow` (also held as `_held`) and `config`."""
    ours = _ours(LimitedHttpToolsProtocol) | PROTOCOL_METHODS
    flows = _ours(protocol._HeldFlow)
    through = {"cycle": "cycle", "flow": "flow", "_held": "flow", "config": "config"}
    used: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(LimitedHttpToolsProtocol))):
        if not isinstance(node, ast.Attribute) or node.attr.startswith("__"):
            continue
        holder = _holder(node.value)
        if _is_self(node.value):
            if node.attr not in ours:
                used.add(node.attr)
        elif _is_super(node.value):
            if node.attr not in PROTOCOL_METHODS:
                used.add(node.attr)
        elif holder in through and not (holder == "_held" and node.attr in flows):
            used.add(f"{through[holder]}.{node.attr}")
    for node in ast.walk(ast.parse(inspect.getsource(protocol._HeldFlow))):
        if isinstance(node, ast.Attribute) and _is_super(node.value):
            used.add(f"flow.{node.attr}")
    return used


def test_relied_on_names_every_uvicorn_attribute_protocol_uses() -> None:
    used = _used()
    assert "cycle.response_complete" in used and "on_body" in used  # the reader sees uses
    assert sorted(used - set(protocol.RELIED_ON)) == []


def test_relied_on_names_nothing_protocol_does_not_use() -> None:
    assert sorted(set(protocol.RELIED_ON) - _used()) == []
