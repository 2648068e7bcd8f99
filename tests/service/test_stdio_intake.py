"""`Intake` (app/stdio/intake.py): what counts as owed, what settles it, and the wait for room.

The end-to-end bound (a client that stops reading) is in test_backpressure.py;
these pin the bookkeeping it rests on, which a wrong count would turn into a
server that stops taking requests for ever (a leak) or never (no bound).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from app.stdio.intake import Intake


def request(request_id: Any) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method="ping"))


def result(request_id: Any) -> SessionMessage:
    return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))


def error(request_id: Any) -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id,
                                       error=ErrorData(code=-32601, message="no")))


def cancel(request_id: Any) -> SessionMessage:
    return SessionMessage(JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": request_id}))


def notice(method: str) -> SessionMessage:
    return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method=method))


@pytest.mark.parametrize(
    ("taken", "given", "owed"),
    [
        ([request(1), request(2)], [result(1)], 1),
        ([request(1)], [error(1)], 0),
        ([request("7")], [result(7)], 0),  # "7" and 7 are one id, as the SDK correlates them
        ([request(1), cancel(1)], [], 0),  # a cancelled request is never answered
        ([request(1), cancel(1)], [result(1)], 0),  # answered all the same: not settled twice
        ([request(1), request(1)], [result(1)], 1),  # a duplicate id is owed twice
        ([request(1)], [result(2), error(None)], 1),  # answers to nothing taken settle nothing
        ([notice("notifications/initialized"), cancel(9), ValueError("bad json")], [], 0),
        ([request(1)], [SessionMessage(JSONRPCNotification(jsonrpc="2.0",
                                                           method="notifications/progress"))], 1),
    ],
)
async def test_what_is_owed(taken: list[Any], given: list[Any], owed: int) -> None:
    intake = Intake(limit=8)
    for item in taken:
        await intake.admit(item)
    for item in given:
        intake.answered(item)
    assert intake.count == owed == sum(intake.owed.values())


async def test_a_request_waits_for_room_and_goes_in_when_an_answer_is_taken() -> None:
    intake = Intake(limit=2)
    await intake.admit(request(1))
    await intake.admit(request(2))
    admitted = anyio.Event()

    async def third() -> None:
        await intake.admit(request(3))
        admitted.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(third)
        await anyio.sleep(0.05)
        assert not admitted.is_set() and intake.count == 2
        await intake.admit(notice("notifications/initialized"))  # room is for requests only
        intake.answered(result(1))
        with anyio.fail_after(5):
            await admitted.wait()
    assert intake.count == 2 and set(intake.owed) == {2, 3}
