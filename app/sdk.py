"""The MCP SDK's internals, behind one small function each.

The SDK (`mcp` 2.3) offers no public way to do some things this server needs:
advertise `tools.listChanged`, answer `logging/setLevel`, not serve (nor advertise)
prompt and resource lists it has none of, publish its own input and output
schemas for a tool (and read the input schema back), serve a session on streams
of our own (stdio with a line bound), and decide which session a full table gives up. Each is
done here, and only here, by reaching into the SDK's private attributes or the
internal `Tool` records of its tool manager. `RELIED_ON` lists every one of
them with what it is expected to be; `tests/test_sdk.py` checks each on the
installed SDK and fails naming the attribute when a release moves one, and
checks that no other module of `app/` touches a private name of the SDK.

What this does not protect against: a release that keeps a name but changes
what it means (the session table holding something other than transports, an
admission hook the manager stops calling). The version pin in pyproject.toml
is the guard there (docs/dependencies.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool, ToolManager
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

Transport = StreamableHTTPServerTransport
Admit = Callable[[Any], Transport | None]  # the manager's admission: requestor -> new session


@dataclass(frozen=True)
class Relied:
    """One name of the SDK this module uses: on instances of `owner`, `name` is
    a value of type `kind`, or (a tuple) a method taking these parameters first."""

    owner: type
    name: str
    kind: type | tuple[str, ...]


RELIED_ON: tuple[Relied, ...] = (
    Relied(MCPServer, "_lowlevel_server", Server),
    Relied(MCPServer, "_tool_manager", ToolManager),
    Relied(ToolManager, "get_tool", ("name",)),
    Relied(Tool, "parameters", dict),
    Relied(Tool, "fn_metadata", FuncMetadata),
    Relied(FuncMetadata, "output_schema", dict),
    Relied(FuncMetadata, "output_model", type),
    Relied(Server, "_request_handlers", dict),
    Relied(Server, "create_initialization_options", ("notification_options",)),
    Relied(Server, "add_request_handler", ("method", "params_type", "handler")),
    Relied(Server, "run", ("read_stream", "write_stream", "initialization_options")),
    Relied(StreamableHTTPSessionManager, "_admit_session", ("requestor",)),
    Relied(StreamableHTTPSessionManager, "_server_instances", dict),
    Relied(StreamableHTTPSessionManager, "_session_owners", dict),
)


# -- the server ------------------------------------------------------------------


def advertise_tools_changed(server: MCPServer[Any]) -> None:
    """Announce `tools.listChanged: true` in the handshake (MCPServer has no switch)."""
    low = server._lowlevel_server
    low.create_initialization_options = functools.partial(  # type: ignore[method-assign]
        low.create_initialization_options, NotificationOptions(tools_changed=True)
    )


def add_request_handler(
    server: MCPServer[Any], method: str, params_type: type[Any], handler: Callable[..., Any]
) -> None:
    """Answer a JSON-RPC `method` MCPServer does not (`logging/setLevel`)."""
    server._lowlevel_server.add_request_handler(method, params_type, handler)


def drop_request_handlers(server: MCPServer[Any], methods: tuple[str, ...]) -> None:
    """Stop answering `methods` (a client gets -32601 Method not found): MCPServer registers
    the prompt and resource lists whether or not it has any, and advertises a capability
    for each list it serves."""
    handlers = server._lowlevel_server._request_handlers
    for method in methods:
        handlers.pop(method, None)


async def run_session(server: MCPServer[Any], read: Any, write: Any) -> None:
    """Serve one session on the given message streams until the read stream ends."""
    low = server._lowlevel_server
    await low.run(read, write, low.create_initialization_options())


# -- registered tools --------------------------------------------------------------


def input_schema(server: MCPServer[Any], name: str) -> dict[str, Any] | None:
    """The input schema clients see for tool `name`, or None when no such tool is
    registered."""
    tool = server._tool_manager.get_tool(name)
    return None if tool is None else tool.parameters


def publish_schemas(
    server: MCPServer[Any],
    name: str,
    inputs: Callable[[dict[str, Any]], dict[str, Any]],
    outputs: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Publish `inputs(schema)` and `outputs(schema)` for tool `name` instead of the
    schemas the SDK derived, and stop the SDK re-validating its results against
    the return type: every result is built from our own, already valid, model.

    Both schemas are read live by the SDK on each tools/list; call this right after
    `add_tool`, before anything lists the tool.
    """
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(name)
    tool.parameters = inputs(tool.parameters)
    meta = tool.fn_metadata
    if meta.output_schema is not None:
        meta.output_schema = outputs(meta.output_schema)
        meta.output_model = None


# -- HTTP sessions -------------------------------------------------------------------


def session_table(manager: StreamableHTTPSessionManager) -> Mapping[str, Transport]:
    """The manager's open sessions by id, in the order they were opened (live: read it,
    change it only through `forget_session`)."""
    return manager._server_instances


def forget_session(manager: StreamableHTTPSessionManager, session_id: str) -> Transport | None:
    """Drop a session from the manager's tables (its id answers 404 from now on) and
    return its transport, or None if it was not there. Ending the transport's idle
    scope then ends its server task, which terminates it."""
    manager._session_owners.pop(session_id, None)
    return manager._server_instances.pop(session_id, None)


def admission(manager: StreamableHTTPSessionManager) -> Admit:
    """The manager's admission of a new session: it returns the new transport, or None
    (answered 503) when the table is full."""
    return manager._admit_session


def set_admission(manager: StreamableHTTPSessionManager, admit: Admit) -> None:
    """Make `admit` decide new sessions; it is called under the manager's creation lock."""
    manager._admit_session = admit  # type: ignore[method-assign, assignment]

