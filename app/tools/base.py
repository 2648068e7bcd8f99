"""The one boundary between MCP and the filesystem code.

Tool handlers are thin async functions declared with `@tool(...)`; each hands
a synchronous implementation to `run()`, which:
- takes the registry snapshot once, so a reload never changes a call midway;
- runs the work in a worker thread (the event loop keeps serving others);
- stops the work soon when the client goes away or cancels (`Call.check()`;
  the cancel flag, progress and the calls in flight live in `app.calls`);
- turns a `LoomError` into a tool error whose text is exactly its message,
  and anything else into a generic error (logged here, never sent: an
  unexpected exception may carry a host path);
- answers structured content plus one text item written for the model
  (`app.tools.render`; the JSON itself with `text_format = "json"`).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar, cast, runtime_checkable

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

# Call and Cancelled are re-exported: tool modules and tests take them from here.
from app.calls import Call as Call
from app.calls import Cancelled as Cancelled
from app.calls import InFlight, granted, request_key
from app.errors import BadArgument, LoomError
from app.tools.lean import lean_of
from app.tools.render import render

if TYPE_CHECKING:
    from app.registry import Registry, Snapshot

log = logging.getLogger("loomfs.tools")
T = TypeVar("T")

# Parameter types shared by every tool: bounded at the edge. No description: what a root
# and a path are is said once, by list_roots, not in every tool of the list (docs/tools.md).
RootArg = Annotated[str | None, Field(default=None, max_length=64)]
PathArg = Annotated[str, Field(max_length=4096)]
Offset = Annotated[int, Field(ge=0, le=10_000_000)]
MAX_LINE = 1_000_000_000
StartLine = Annotated[int, Field(ge=1, le=MAX_LINE)]
EndLine = Annotated[int, Field(ge=1, le=MAX_LINE)]


def check_window(start_line: int, end_line: int) -> None:
    """A line window (`StartLine`..`EndLine`) that is not empty."""
    if end_line < start_line:
        raise BadArgument(f"end_line ({end_line}) is before start_line ({start_line})")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    perm: str | None  # None: always present; else "read", "write", "delete", "search_fetch", "git"
    title: str
    annotations: ToolAnnotations


Handler = Callable[..., Any]
_SPECS: dict[Handler, ToolSpec] = {}  # every handler `@tool` marked


def spec_of(value: object) -> ToolSpec | None:
    """The `ToolSpec` `@tool` gave `value`, or None when it is not a marked handler."""
    return _SPECS.get(value) if inspect.iscoroutinefunction(value) else None


def tool(
    *,
    perm: str | None,
    title: str,
    read_only: bool,
    destructive: bool = False,
    idempotent: bool = False,
) -> Callable[[Handler], Handler]:
    """Mark an async handler as a tool; `app.server` registers it by permission.

    A handler answers a `CallToolResult` (what `run` makes) and declares the model of
    its structured content as `Annotated[CallToolResult, Model]`: the SDK publishes
    that model's schema as the tool's `outputSchema`, and `ok_result` finds its
    renderer by that class.
    """

    def mark(fn: Handler) -> Handler:
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"tool {fn.__name__} needs a description")
        _SPECS[fn] = ToolSpec(
            name=fn.__name__,
            perm=perm,
            title=title,
            annotations=ToolAnnotations(
                title=title,
                read_only_hint=read_only,
                destructive_hint=destructive,
                idempotent_hint=idempotent,
                open_world_hint=False,
            ),
        )
        return fn

    return mark


def flat_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON schema with every local `$ref` expanded in place and `$defs` dropped.

    Clients that validate results (the MCP Python SDK validates every one with
    `jsonschema`) resolve a `$ref` per list item; inline, a 300-match search
    result validated in about two thirds of the time (jsonschema 4).
    A recursive schema is returned unchanged.
    """
    defs = schema.get("$defs", {})

    def expand(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [expand(x, seen) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            if name in seen or name not in defs:
                raise RecursionError(name)
            target = expand(defs[name], (*seen, name))
            extra = {k: expand(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        return {k: expand(v, seen) for k, v in node.items() if k != "$defs"}

    try:
        return expand(schema, ())
    except RecursionError:
        return schema


@runtime_checkable
class ToolHost(Protocol):
    """What a tool needs of the server it runs in (`app.server.LoomServer`, a layer up)."""

    registry: Registry
    inflight: InFlight
    active_tools: set[str]

    def surface_of(self, snap: Snapshot) -> set[str]: ...

    async def reload(self) -> Snapshot: ...


_HOST_TYPES: set[type] = set()  # server classes already checked (their __init__ sets all)


def host_of(ctx: Context) -> ToolHost:
    server = ctx.mcp_server
    # A runtime protocol check costs tens of microseconds: once per class, not per call.
    if type(server) not in _HOST_TYPES:
        if not isinstance(server, ToolHost):
            raise TypeError(f"tools run in a LoomServer, not in a {type(server).__name__}")
        _HOST_TYPES.add(type(server))
    return cast(ToolHost, server)


def error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def ok_result(
    model: BaseModel | dict[str, Any], *, text_format: str = "text", cap: int | None = None
) -> CallToolResult:
    """Lean structured content (`app.tools.lean`) plus one text item: the readable
    rendering (`app.tools.render`), or the whole result as compact JSON for
    `text_format = "json"` and result types without a renderer. The model is dumped
    once: the text and the lean content are made from that one dump (`lean_of`). A
    plain dict (search/fetch keep OpenAI's shape) is both, as it is."""
    if isinstance(model, BaseModel):
        whole = model.model_dump(mode="json")
        data = lean_of(model, whole)
    else:
        whole = data = model
    text = None
    if text_format != "json" and isinstance(model, BaseModel):
        text = render(type(model), whole, cap)
    if text is None:
        text = json.dumps(whole, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _progress_sink(ctx: Context) -> Callable[[float, float | None, str | None], None] | None:
    meta = ctx.request_context.meta or {}
    if meta.get("progress_token") is None and meta.get("progressToken") is None:
        return None

    def sink(done: float, total: float | None, message: str | None) -> None:
        try:
            anyio.from_thread.run(ctx.report_progress, done, total, message)
        except Exception:  # the client is gone; the work will notice the cancel flag
            log.debug("progress not delivered", exc_info=True)

    return sink


async def run(
    ctx: Context, work: Callable[[Call], BaseModel | dict[str, Any] | CallToolResult]
) -> CallToolResult:
    """Run `work` on this call's snapshot in a worker thread; map errors once, here.

    A `work` that must answer more than JSON (read_media_file's image block)
    returns its own `CallToolResult`, which is passed through as is.
    """
    host = host_of(ctx)
    # One snapshot, and the calling client's view of it: the grant the call runs under.
    call = Call(granted(host.registry.current), progress_sink=_progress_sink(ctx))
    key = request_key(getattr(ctx.request_context, "request", None), ctx.request_id)
    try:
        # The HTTP layer sets the flag if the client goes away (`app.calls`).
        with host.inflight.track(key, call.cancelled):
            result = await anyio.to_thread.run_sync(work, call, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        call.cancelled.set()
        raise
    except LoomError as exc:
        return error_result(exc.message)
    except Cancelled:
        return error_result("cancelled")
    except Exception:
        log.exception("tool failed unexpectedly")
        return error_result(
            "internal error while handling the call (details are in the server log)"
        )
    if isinstance(result, CallToolResult):
        return result
    limits = call.snapshot.limits
    return ok_result(result, text_format=limits.text_format, cap=limits.max_output_chars)
