"""stdio answers every line: what a line the server cannot take gets, and batches.

The SDK's reader parses each line into one JSON-RPC message; a line it cannot
parse reaches the server's loop as the parser's exception, which the SDK only
logs: the client waiting on it hangs. `Lines` stands between that reader and
the server and answers instead, with a null id (JSON-RPC 2.0: the id of what
could not be read is not known):
- not JSON: -32700 Parse error, with the parser's place ("line 1 column 2"); a
  blank line is no message at all, and is not answered;
- JSON that is not a message (a number, a string, `null`, an object without
  `method`, an id that is an object, an array, `true`, a fraction or null, a
  `jsonrpc` other than "2.0", params that are not an object): -32600 Invalid
  Request. So is JSON the parser will not hold: nested deeper than it reads
  (200 levels) or a number of more than 4300 digits.
- A notification that is invalid is answered all the same (it is not a
  notification: JSON-RPC's own example answers `{"jsonrpc":"2.0","method":1}`
  with a null id); a valid one never is.
- A batch (an array): only protocol revision 2025-03-26 has them (2025-06-18
  removed them). In a session that agreed on 2025-03-26, each member is taken
  as if on its own line, and the answers to its requests go out together as
  one JSON array once all are in (members that are not messages answered in
  it with -32600, notifications and a request cancelled before its answer
  not at all; a batch of notifications alone gets nothing). Otherwise, or
  before `initialize`, or empty, or of more than `MAX_BATCH` members: one
  -32600 naming why.

A refusal goes out through the SDK's writer before the next line is read, so a
client that sends bad lines and reads nothing stops the reading, as unread
answers do (`intake`): nothing piles up here. What it holds: a batch's answers
until its last (at most `MAX_BATCH`, all still owed to the intake, so its bound
holds); on pipes, the lines not yet matched with their message (one or two: the
reader sends each message before reading the next line), read again only for a
notification, to see an `id` the SDK's parser drops. On the SDK's own path
(stdin a file or terminal) that line is not seen, and a notification-shaped
object with a bad `id` is taken as the notification.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

import pydantic_core
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from app.stdio.intake import MAX_IN_FLIGHT, Intake

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
BATCH_REVISIONS = frozenset({"2025-03-26"})  # the protocol revisions with JSON-RPC batches
MAX_BATCH = MAX_IN_FLIGHT  # more would wait on answers the batch itself holds back
BLANK = object()  # a line of white space
_UNREADABLE = {  # what the parser refuses in JSON that is valid
    "recursion limit exceeded": "nested too deeply to read (at most 200 levels)",
    "number out of range": "holds a number too large to read",
}


def refusal(code: int, why: str) -> SessionMessage:
    head = "Parse error" if code == PARSE_ERROR else "Invalid Request"
    error = ErrorData(code=code, message=f"{head}: {why}")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


def _why(value: Any) -> str:
    """Why `value` (valid JSON) is not a JSON-RPC message."""
    if not isinstance(value, dict):
        return f"a message is a JSON object, not {type(value).__name__}"
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "id" in value and (isinstance(value["id"], bool) or not isinstance(value["id"], int | str)):
        return "id must be a string or an integer"
    if "method" in value:
        if not isinstance(value["method"], str):
            return "method must be a string"
        return "params must be an object"
    return "neither a request, a notification nor an answer"


def _unread(exc: Exception) -> tuple[Any, SessionMessage | None]:
    """The value the parser read from a line it refused, or the refusal; `BLANK` for a line
    of white space."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    for e in errors:
        if e["type"] == "json_invalid" and isinstance(e["input"], str) and not e["input"].strip():
            return BLANK, None  # no message at all: nothing to answer
        if e["type"] == "json_invalid":
            msg = e["msg"].removeprefix("Invalid JSON: ")
            known = next((why for key, why in _UNREADABLE.items() if key in msg), None)
            if known:
                return None, refusal(INVALID_REQUEST, known)
            return None, refusal(PARSE_ERROR, f"not JSON ({msg})")
    for e in errors:  # not an object: the union's members were each handed the value
        if e["type"] == "model_type" and len(e["loc"]) == 1:
            return e["input"], None
    for e in errors:  # a field missing from an object: the object
        if e["type"] == "missing" and len(e["loc"]) == 2:
            return e["input"], None
    return None, refusal(INVALID_REQUEST, "not a JSON-RPC message")


def _with_id(line: str | None) -> dict[str, Any] | None:
    """The line (a notification as the SDK read it) when it carries an id the SDK dropped."""
    try:
        value = pydantic_core.from_json(line) if line else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and "id" in value else None


class _Raw:
    """A line the SDK's writer sends as it is (it writes `message.model_dump_json()`)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def model_dump_json(self, **_: Any) -> str:
        return self.text


class _Batch:
    def __init__(self, ids: Counter[Any], errors: list[SessionMessage]) -> None:
        self.owed = ids  # answers still to come, by request id
        self.answers = errors  # what goes out, in the order it came
        self.answered: list[Any] = []  # the ids whose answers are kept: owed to the intake


class Lines:
    """What each message the SDK's reader sends becomes before the server sees it
    (`take`), and which answers a batch keeps until its last (`keep`)."""

    def __init__(self, write: Any, intake: Intake, raw: deque[str] | None = None) -> None:
        self._write = write  # the SDK's write stream: our answers queue with the server's
        self._intake = intake
        self._raw = raw  # the lines read, not yet matched with their message (pipes only)
        self._batches: list[_Batch] = []
        self._initialize: Any = None  # the initialize request's id, until it is answered
        self.protocol: str | None = None  # the revision the session agreed on

    async def take(self, item: Any) -> list[Any]:
        """The messages to hand the server for one read from the SDK (none: answered here)."""
        line = self._raw.popleft() if self._raw else None
        if isinstance(item, Exception):
            value, refused = _unread(item)
            if refused is None and isinstance(value, list):
                return await self._batch(value)
            if value is BLANK:
                return []
            await self._write.send(refused or refusal(INVALID_REQUEST, _why(value)))
            return []
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCNotification):
            if message.method == "notifications/cancelled":
                await self._cancelled(message)
            elif (value := _with_id(line)) is not None:
                await self._write.send(refusal(INVALID_REQUEST, _why(value)))
                return []
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            self._initialize = coerce_request_id(message.id)
        return [item]

    async def _batch(self, members: list[Any]) -> list[Any]:
        why = None
        if not members:
            why = "an empty batch"
        elif self.protocol not in BATCH_REVISIONS:
            agreed = f"protocol revision {self.protocol}" if self.protocol else "no protocol yet"
            why = (f"a batch, and {agreed} has no batches (only 2025-03-26 had them): send "
                   "one message per line")
        elif len(members) > MAX_BATCH:
            why = f"a batch may hold at most {MAX_BATCH} messages"
        if why:
            await self._write.send(refusal(INVALID_REQUEST, why))
            return []
        taken, ids, errors = [], Counter[Any](), []
        for member in members:
            try:
                message = jsonrpc_message_adapter.validate_python(member, by_name=False)
            except ValidationError:
                errors.append(refusal(INVALID_REQUEST, _why(member)))
                continue
            if isinstance(message, JSONRPCNotification) and "id" in member:
                errors.append(refusal(INVALID_REQUEST, _why(member)))
                continue
            if isinstance(message, JSONRPCRequest):
                key = coerce_request_id(message.id)
                if ids[key] or self._intake.owed.get(key):
                    errors.append(refusal(INVALID_REQUEST, "id already in use"))
                    continue
                ids[key] += 1
            taken.append(SessionMessage(message))
        batch = _Batch(ids, errors)
        self._batches.append(batch)
        await self._flush(batch)  # only errors and notifications: out now (or nothing)
        return taken

    def _of(self, request_id: Any) -> _Batch | None:
        key = coerce_request_id(request_id)
        return next((b for b in self._batches if b.owed.get(key)), None)

    async def keep(self, item: Any) -> bool:
        """True when `item` is the answer to a batch's request: kept, and the batch's answers
        sent once they are all in."""
        message = item.message if isinstance(item, SessionMessage) else None
        if not isinstance(message, JSONRPCResponse | JSONRPCError) or message.id is None:
            return False
        key = coerce_request_id(message.id)
        if key == self._initialize and isinstance(message, JSONRPCResponse):
            version = message.result.get("protocolVersion")
            self.protocol, self._initialize = (version if isinstance(version, str) else None), None
        batch = self._of(key)
        if batch is None:
            return False
        batch.owed[key] -= 1
        batch.answers.append(item)
        batch.answered.append(key)
        await self._flush(batch)
        return True

    async def _cancelled(self, message: JSONRPCNotification) -> None:
        """A batch's request cancelled is never answered (MCP): the batch stops waiting."""
        request_id = (message.params or {}).get("requestId")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return
        batch = self._of(request_id)
        if batch is not None:
            batch.owed[coerce_request_id(request_id)] -= 1
            await self._flush(batch)

    async def _flush(self, batch: _Batch) -> None:
        if +batch.owed or batch not in self._batches:
            return
        self._batches.remove(batch)
        answers = batch.answers
        if answers:
            texts = [a.message.model_dump_json(by_alias=True, exclude_unset=True) for a in answers]
            await self._write.send(SessionMessage(_Raw(f"[{','.join(texts)}]")))  # type: ignore[arg-type]
        for key in batch.answered:
            self._intake.settle(key)
