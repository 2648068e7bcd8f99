"""stdio answers every line: not JSON gets -32700, not a request -32600, both with a null id.

The console script on real pipes (and on a regular file as stdin, the SDK's own
reader). Each bad line must get exactly its answer (a client waiting on it
would otherwise hang) and the session must go on: a `tools/list` sent after it
is answered next, with nothing in between.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.live import INIT_REQUEST
from tests.service.test_stdio_pipes import EXE, HELLO, answers

DEADLINE = 60  # seconds: only what a hang waits before failing; never a measure

PING_1 = {"jsonrpc": "2.0", "id": 21, "method": "ping"}
PING_2 = {"jsonrpc": "2.0", "id": 22, "method": "ping"}
LIST = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
DEEP = "[" * 10_000 + "]" * 10_000


def hello(version: str) -> list[dict[str, Any]]:
    init = {**INIT_REQUEST, "params": {**INIT_REQUEST["params"], "protocolVersion": version}}
    return [init, *HELLO[1:]]


class Wire:
    """The console script's stdin and stdout, one answer (a JSON line) at a time."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin = proc, proc.stdin
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, out: Any) -> None:
        for line in out:
            self.lines.put(line)

    def send(self, line: str) -> None:
        self.stdin.write(line.encode() + b"\n")
        self.stdin.flush()

    def answer(self) -> Any:
        try:
            return json.loads(self.lines.get(timeout=DEADLINE))
        except queue.Empty:
            raise AssertionError(f"no answer within {DEADLINE} s") from None


@pytest.fixture
def wire(one_root_config) -> Iterator[Any]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(version: str = "2025-11-25") -> Wire:
        proc = subprocess.Popen([EXE, "--config", str(one_root_config("reference"))],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        procs.append(proc)
        w = Wire(proc)
        for m in hello(version):
            w.send(json.dumps(m))
        first = w.answer()
        assert first["id"] == 1 and first["result"]["protocolVersion"] == version
        return w

    yield start
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=DEADLINE)
        if proc.stdout is not None:
            proc.stdout.close()
        assert proc.returncode == 0


def invalid(code: int) -> Any:
    return lambda a: a.get("id", "absent") is None and a["error"]["code"] == code


PARSE, INVALID = invalid(-32700), invalid(-32600)

BAD_LINES = [
    ("not json", PARSE),
    ("{", PARSE),
    ('{"jsonrpc": "2.0", "id": 5, "method": "ping"', PARSE),
    ("[]", INVALID),
    ("[1]", INVALID),
    (f"[{json.dumps(PING_1)}, {json.dumps(PING_2)}]", INVALID),  # no batches in 2025-11-25
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', INVALID),
    ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID),
    ('{"jsonrpc": "1.0", "id": 5, "method": "ping"}', INVALID),
    ('{"jsonrpc": "2.0", "id": 5}', INVALID),
    ('{"jsonrpc": "2.0", "id": 5, "method": 7}', INVALID),
    ('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]}', INVALID),
    ('{"jsonrpc": "2.0", "method": "notifications/x", "params": "bar"}', INVALID),
    ("{}", INVALID),
    (DEEP, INVALID),
    ('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"a": ' + DEEP + "}}", INVALID),
    ("1" * 5000, INVALID),
    ("1e999999", INVALID),
    ("12", INVALID),
    ('"a string"', INVALID),
    ("null", INVALID),
    ("true", INVALID),
]


@pytest.mark.parametrize(("line", "expected"), BAD_LINES,
                         ids=[f"{i}:{line[:30]}" for i, (line, _) in enumerate(BAD_LINES)])
def test_a_bad_line_gets_its_answer_and_the_session_goes_on(wire, line, expected) -> None:
    w = wire()
    w.send(line)
    got = w.answer()
    assert got["jsonrpc"] == "2.0" and expected(got), got
    assert got["error"]["message"]
    w.send(json.dumps(LIST))
    after = w.answer()  # the very next line: nothing else was answered in between
    assert after["id"] == 99 and after["result"]["tools"], after


@pytest.mark.parametrize("blank", ["", "   ", "\t \r"])
def test_a_blank_line_is_no_message_and_gets_no_answer(wire, blank) -> None:
    w = wire()
    w.send(blank)
    w.send(json.dumps(LIST))
    assert w.answer()["id"] == 99


def test_several_bad_lines_in_a_row_each_get_one_answer(wire) -> None:
    w = wire()
    bad = ["not json", "[]", "null", '{"id": {}}', DEEP]
    for line in bad:
        w.send(line)
    w.send(json.dumps(LIST))
    got = [w.answer() for _ in range(len(bad) + 1)]
    assert [a["error"]["code"] for a in got[:-1]] == [-32700, -32600, -32600, -32600, -32600]
    assert got[-1]["id"] == 99


def test_a_batch_in_a_2025_03_26_session_gets_one_array_of_answers(wire) -> None:
    # 2025-03-26 is the one revision with batches (a server MUST take them); 2025-06-18
    # removed them. The answer to a batch is one array of the requests' answers.
    w = wire("2025-03-26")
    note = {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1}}
    w.send(json.dumps([PING_1, note, PING_2, 7]))
    got = w.answer()
    assert isinstance(got, list), got
    by_id = {a.get("id"): a for a in got}
    assert len(got) == 3 and set(by_id) == {21, 22, None}
    assert by_id[21]["result"] == {} and by_id[22]["result"] == {}
    assert by_id[None]["error"]["code"] == -32600
    w.send(json.dumps(LIST))
    assert w.answer()["id"] == 99


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_a_batch_outside_2025_03_26_gets_one_invalid_request(wire, version) -> None:
    w = wire(version)
    w.send(json.dumps([PING_1, PING_2]))
    got = w.answer()
    assert INVALID(got), got
    assert version in got["error"]["message"]
    w.send(json.dumps(LIST))
    assert w.answer()["id"] == 99  # and neither ping was answered


def test_a_batch_of_notifications_only_is_not_answered(wire) -> None:
    w = wire("2025-03-26")
    w.send(json.dumps([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]))
    w.send(json.dumps(LIST))
    assert w.answer()["id"] == 99


def test_bad_lines_from_a_regular_file_are_answered_too(one_root_config, tmp_path) -> None:
    # stdin a regular file: the SDK's own reader serves; the answers are the same.
    src = tmp_path / "requests.jsonl"
    lines = [json.dumps(m) for m in HELLO] + ["not json", "", "[]", "null", DEEP]
    src.write_text("".join(line + "\n" for line in lines))
    with src.open() as f:
        proc = subprocess.run([EXE, "--config", str(one_root_config("reference"))], stdin=f,
                              capture_output=True, text=True, timeout=DEADLINE)
    got = answers(proc.stdout)
    assert [a["id"] for a in got] == [1, None, None, None, None]
    assert [a["error"]["code"] for a in got[1:]] == [-32700, -32600, -32600, -32600]


# -- the bookkeeping under a batch (in process: `Lines` with a writer that keeps what it is
# sent), which a wrong count would turn into a batch held for ever, or an intake that leaks.


class Sent:
    def __init__(self) -> None:
        self.items: list[Any] = []

    async def send(self, item: Any) -> None:
        self.items.append(item)

    def texts(self) -> list[Any]:
        return [json.loads(i.message.model_dump_json(by_alias=True, exclude_unset=True))
                for i in self.items]


def parse_failure(line: str) -> Exception:
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return exc
    raise AssertionError("it parsed")


async def in_03_26() -> tuple[Any, Any, Sent]:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCRequest, JSONRPCResponse

    from app.stdio.every_line import Lines
    from app.stdio.intake import Intake

    sent, intake = Sent(), Intake()
    lines = Lines(sent, intake)
    init = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize"))
    assert await lines.take(init) == [init]
    done = SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1,
                                          result={"protocolVersion": "2025-03-26"}))
    assert not await lines.keep(done)
    assert lines.protocol == "2025-03-26"
    return lines, intake, sent


def result(request_id: Any) -> Any:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCResponse

    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


async def test_a_cancelled_batch_request_stops_the_batch_waiting_for_it() -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification

    lines, intake, sent = await in_03_26()
    taken = await lines.take(parse_failure(json.dumps([PING_1, PING_2])))
    assert [t.message.id for t in taken] == [21, 22]
    for t in taken:
        await intake.admit(t)
    assert await lines.keep(result(21)) and sent.items == []  # kept: 22 still to come
    cancel = SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                                params={"requestId": 22}))
    assert await lines.take(cancel) == [cancel]
    await intake.admit(cancel)
    assert sent.texts() == [[{"jsonrpc": "2.0", "id": 21, "result": {}}]]
    assert intake.count == 0 and not intake.owed  # nothing owed: no leak


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([PING_1] * 33, "at most 32"),
        ([], "an empty batch"),
    ],
)
async def test_a_batch_it_cannot_take_gets_one_refusal(members, why) -> None:
    lines, _, sent = await in_03_26()
    assert await lines.take(parse_failure(json.dumps(members))) == []
    [got] = sent.texts()
    assert got["id"] is None and got["error"]["code"] == -32600 and why in got["error"]["message"]


async def test_an_id_repeated_or_in_flight_is_refused_in_the_batch() -> None:
    lines, intake, sent = await in_03_26()
    taken = await lines.take(parse_failure(json.dumps([PING_1])))
    await intake.admit(taken[0])  # 21 in flight, its batch waiting
    again = await lines.take(parse_failure(json.dumps([PING_1, PING_2, PING_2])))
    assert [t.message.id for t in again] == [22]
    await intake.admit(again[0])
    assert await lines.keep(result(22))
    [answers] = sent.texts()
    assert [a.get("id") for a in answers] == [None, None, 22]
    assert all("id already in use" in a["error"]["message"] for a in answers[:2])
    assert await lines.keep(result(21))
    assert len(sent.items) == 2 and intake.count == 0
