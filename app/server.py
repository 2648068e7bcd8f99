"""The MCP server: tools registered by permission, hot reload, list-changed.

The tool surface is derived from the registry snapshot: read tools exist only
if some root reads, write tools only if some root writes, `delete` only if
some root deletes. A reload re-derives it, and every connected session that
can hear it gets `notifications/tools/list_changed` (2025-11-25 clients on
their stream, 2026-07-28 clients through the subscriptions bus).

With `[[clients]]` the tools registered are those of every grant together, and each
client lists and calls only those of its own (`client_tools`): a client granted no write
gets no write tool, and calling one is `unknown tool`, as a name that does not exist.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp.types import INVALID_PARAMS, EmptyResult, GetPromptRequestParams, SetLevelRequestParams
from pydantic import ValidationError

from app import __version__, sdk
from app.audit import current_client, current_grant
from app.calls import InFlight, granted, request_client
from app.messages import shown
from app.registry import Registry, Snapshot
from app.tools import MODULES
from app.tools.args import (
    check_names,
    describe,
    nulls_as_defaults,
    published_schema,
    unknown_tool,
)
from app.tools.base import ToolSpec, error_result, flat_schema, spec_of

log = logging.getLogger("loomfs.server")
_pending: set[Any] = set()  # reload tasks started by SIGHUP, kept alive until done

INSTRUCTIONS = (
    "Filesystem access limited to the configured roots. Call list_roots first. Paths are "
    "relative to a root and '/'-separated. Results are bounded: a result's bracketed last "
    "line says how to continue (offset=, start_line=) and what was cut; read it before "
    "concluding something is absent. Deleted entries go to a trash the agent cannot reach."
)

# Lists MCPServer answers whatever is registered, of things this server has none of; while
# served, the SDK advertises the prompts and resources capabilities from them.
NOT_SERVED = ("prompts/list", "resources/list", "resources/templates/list")

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def collect_tools() -> list[tuple[ToolSpec, Callable[..., Any]]]:
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            spec = spec_of(value)
            if spec is not None and value.__module__ == module.__name__:
                found.append((spec, value))
    return found


class LoomServer(MCPServer):
    def __init__(self, registry: Registry) -> None:
        # Our own handle on the bus 2026-07-28 clients hear list_changed through.
        self._bus = InMemorySubscriptionBus()
        super().__init__(
            name="loom-fs-mcp",
            version=__version__,
            instructions=INSTRUCTIONS,
            warn_on_duplicate_tools=False,
            subscriptions=self._bus,
        )
        self.registry = registry
        self.active_tools: set[str] = set()
        # Cancel flags of tool calls in flight over HTTP, by (peer, session, request id):
        # the HTTP layer sets one when its client disconnects before the answer.
        self.inflight = InFlight()
        self._catalog = collect_tools()
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._reload_lock = anyio.Lock()
        # Called in the event loop after each reload that swapped a snapshot (old, new): the
        # HTTP app ends the sessions of clients a reload removed.
        self.after_reload: list[Callable[[Snapshot, Snapshot], object]] = []
        self.client_log_level = logging.INFO
        self.middleware.append(self._observe)
        sdk.advertise_tools_changed(self)
        sdk.add_request_handler(self, "logging/setLevel", SetLevelRequestParams, self._set_level)
        # No prompts and no resources: their lists are not served (-32601), so neither
        # capability is advertised; a name asked for anyway is an invalid parameter.
        sdk.drop_request_handlers(self, NOT_SERVED)
        sdk.add_request_handler(self, "prompts/get", GetPromptRequestParams, self._no_prompt)
        self.apply_surface(registry.current)

    # -- surface -------------------------------------------------------------

    def surface_of(self, snap: Snapshot) -> set[str]:
        """The names of the tools this snapshot's permissions allow (a client's view: the
        tools its grant allows; a client with no write grant gets no write tool)."""
        surface = set(snap.surface_key())
        return {
            spec.name for spec, _ in self._catalog if spec.perm is None or spec.perm in surface
        }

    def client_tools(self) -> set[str]:
        """The tools the calling client may see and call: its grant's (`calls.granted`)."""
        snap = self.registry.current
        if not snap.has_clients:
            return self.active_tools
        return self.surface_of(granted(snap)) & self.active_tools

    async def list_tools(self) -> Any:
        """The tools registered, as far as the calling client's grant allows."""
        tools = await super().list_tools()
        allowed = self.client_tools()
        return [t for t in tools if t.name in allowed]

    def apply_surface(self, snap: Snapshot) -> bool:
        """Register exactly the tools this snapshot's permissions allow."""
        wanted = self.surface_of(snap)
        changed = wanted != self.active_tools
        for spec, fn in self._catalog:
            if spec.name in wanted and spec.name not in self.active_tools:
                self.add_tool(
                    fn,
                    name=spec.name,
                    title=spec.title,
                    description=" ".join((fn.__doc__ or "").split()),
                    annotations=spec.annotations,
                    structured_output=True,
                )
                self._lighten(spec.name)
            elif spec.name not in wanted and spec.name in self.active_tools:
                self.remove_tool(spec.name)
        self.active_tools = wanted
        return changed

    def _lighten(self, name: str) -> None:
        """Publish closed, flat schemas, and skip the SDK's re-validation of results.

        A closed input schema refuses an unknown argument, and strict-schema clients
        convert it. A flat schema (no `$ref`) is cheaper for validating clients. Every
        result is a `CallToolResult` built by `app.tools.base.ok_result` from our own
        pydantic model, already valid when it was constructed; the SDK would validate
        it again against the return type on every call (a seventh of the server's CPU
        on a 300-match search).
        """
        sdk.publish_schemas(self, name, published_schema, flat_schema)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> Any:
        """Refuse arguments the tool would not take as sent, in the server's words.

        The SDK would drop an unknown argument silently, answer a bad value with
        pydantic's text (long, with a versioned URL) and an unknown tool with no
        suggestion; this is the one place all three are said instead: `unknown argument
        'dryrun' (did you mean 'dry_run'?)`, `start_line must be at least 1 (got 0)`,
        `unknown tool 'read_txt_file' (did you mean 'read_text_file'?)`.

        The arguments are validated once, by the SDK as it calls the tool (pre-parsing
        JSON-in-a-string the way some clients send lists); a refusal there comes back as
        its `ToolError` caused by the `ValidationError`, which is said here instead.
        """
        allowed = self.client_tools()
        schema = sdk.input_schema(self, name) if name in allowed else None
        if schema is None:  # the SDK would say `Unknown tool: x`, with no suggestion
            known = [spec.name for spec, _ in self._catalog if spec.name in allowed]
            said = unknown_tool(name, known)
            log.info("unknown tool refused: %r", said)
            return error_result(said)
        arguments = nulls_as_defaults(schema, arguments)
        refusal = check_names(name, schema, arguments)
        if refusal is None:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                    raise
                refusal = describe(name, schema, cause)
        log.info("tool %r refused its arguments: %r", name, refusal)
        return error_result(refusal)

    async def reload(self) -> Snapshot:
        """Reload the config; on success follow it with the tool surface and notify."""
        async with self._reload_lock:
            old = self.registry.current
            snap = await anyio.to_thread.run_sync(self.registry.reload)
            changed = self.apply_surface(snap)
            for hook in list(self.after_reload):
                hook(old, snap)
            if changed or self._grants_changed(old, snap):
                await self._notify_tools_changed()
            log.info("config reloaded (generation %d, %d roots)", snap.generation, len(snap.roots))
            return snap

    def _grants_changed(self, old: Snapshot, new: Snapshot) -> bool:
        """Whether some client's tools differ between the two snapshots (its grant changed
        while the server's tools did not): its sessions are told to list them again."""
        names = {c.name for c in (*old.config.clients, *new.config.clients)}
        return any(
            self.surface_of(old.view(n)) != self.surface_of(new.view(n)) for n in names
        )

    async def close(self) -> None:
        """The server stops (HTTP lifespan end, stdin closed): the background work of the
        search indexes stopped, in a worker thread (a build ends its file and batch)."""
        from app.corpus import trigram

        await anyio.to_thread.run_sync(trigram.close_all)

    async def _notify_tools_changed(self) -> None:
        for session in list(self._sessions):
            try:
                await session.send_tool_list_changed()
            except Exception:  # a client that went away must not fail the reload
                log.debug("list_changed not delivered", exc_info=True)
        await self._bus.publish(ToolsListChanged())

    # -- protocol hooks --------------------------------------------------------

    async def _observe(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        """Remember sessions (for list_changed) and tag the audit log with the peer."""
        session = getattr(ctx, "session", None)
        if session is not None:
            with contextlib.suppress(TypeError):
                self._sessions.add(session)
        request = getattr(ctx, "request", None)
        peer = getattr(request, "client", None)
        token = current_client.set(f"{peer.host}:{peer.port}" if peer else "stdio")
        # With [[clients]]: the client the request's token selected (over stdio, --client).
        grant = current_grant.set(
            request_client(request, self.registry.serves_client)
            if self.registry.current.has_clients else None
        )
        try:
            return await call_next(ctx)
        finally:
            current_grant.reset(grant)
            current_client.reset(token)

    async def _no_prompt(self, ctx: Any, params: GetPromptRequestParams) -> NoReturn:
        raise MCPError(INVALID_PARAMS, f"unknown prompt {shown(params.name)}: this server "
                       "has no prompts (its tools are listed by tools/list)")

    async def _set_level(self, ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        self.client_log_level = _LOG_LEVELS.get(str(params.level), logging.INFO)
        return EmptyResult()


def install_sighup(server: LoomServer) -> None:
    """SIGHUP reloads the config, like the tool (POSIX, main thread only)."""
    import asyncio
    import contextlib
    import signal

    if not hasattr(signal, "SIGHUP"):
        return
    loop = asyncio.get_running_loop()

    def on_hup() -> None:
        async def go() -> None:
            try:
                await server.reload()
            except Exception as exc:
                log.error("reload on SIGHUP refused: %s", exc)

        task = loop.create_task(go())
        _pending.add(task)
        task.add_done_callback(_pending.discard)

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGHUP, on_hup)
