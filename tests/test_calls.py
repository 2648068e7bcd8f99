"""app/calls.py: the call key, and the in-flight registry the HTTP watcher cancels through."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from app.calls import Call, Cancelled, InFlight, call_key, request_key


def test_track_registers_for_the_block_and_cancel_sets_the_flag() -> None:
    inflight, flag = InFlight(), threading.Event()
    key = call_key(("127.0.0.1", 5000), "s1", 7)
    with inflight.track(key, flag):
        assert len(inflight) == 1
        assert inflight.cancel(key) is True
        assert flag.is_set()
    assert len(inflight) == 0
    assert inflight.cancel(key) is False  # gone: nothing to cancel


def test_a_finished_call_does_not_unregister_a_later_one_under_the_same_key() -> None:
    inflight, first, second = InFlight(), threading.Event(), threading.Event()
    key = call_key(("127.0.0.1", 5000), "s1", 1)
    with inflight.track(key, first):
        with inflight.track(key, second):
            pass
        assert len(inflight) == 0  # the inner (later) call removed its own entry
    with inflight.track(key, first):
        inner = inflight.track(key, second)
        inner.__enter__()
    # the outer block ended after the later registration: the later call stays cancellable
    assert inflight.cancel(key) is True and second.is_set() and not first.is_set()
    inner.__exit__(None, None, None)
    assert len(inflight) == 0


def test_no_key_registers_nothing() -> None:
    inflight = InFlight()
    with inflight.track(None, threading.Event()):
        assert len(inflight) == 0


def test_the_request_key_matches_the_watchers_key() -> None:
    request = SimpleNamespace(
        client=SimpleNamespace(host="127.0.0.1", port=5123),
        headers={"mcp-session-id": "abc"},
    )
    assert request_key(request, 42) == call_key(("127.0.0.1", 5123), "abc", 42)
    assert request_key(request, 42) == ("127.0.0.1:5123", "abc", "42")
    assert request_key(None, 42) is None  # stdio
    no_peer = SimpleNamespace(client=None, headers={})
    assert request_key(no_peer, "x") == ("?", "", "x")


def test_check_raises_once_cancelled_and_progress_reaches_the_sink() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    call = Call(snapshot=None, progress_sink=lambda *a: seen.append(a))  # type: ignore[arg-type]
    call.check()
    call.progress(1, 2, "half")
    assert seen == [(1, 2, "half")]
    call.cancelled.set()
    with pytest.raises(Cancelled):
        call.check()
    Call(snapshot=None).progress(1)  # type: ignore[arg-type]  # no sink: dropped
