"""The byte budget's buckets (app/budget.py, docs/configuration.md#budget), on a fake clock.

The invariant, over any sequence of reservations, settlements, refusals and waits: no bucket
lets more through than its burst plus its rate times the time elapsed, and a refused
reservation changes no bucket. Then the reload rules, the refusal's words, and threads.
"""

from __future__ import annotations

import re
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.budget import Budget, Rate, Reservation
from app.errors import BudgetSpent

SERVER = Rate(bytes_per_minute=6000, burst_bytes=10_000)
TIGHT = Rate(bytes_per_minute=1200, burst_bytes=4000)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def budget(clock: Clock, server: Rate | None = SERVER, **roots: Rate) -> Budget:
    b = Budget(clock)
    b.apply(server, roots)
    return b


def available(b: Budget, root: str | None = None) -> int:
    level = b.levels(root)
    assert level is not None
    return level.available_bytes


def levels(b: Budget) -> tuple[object, ...]:
    return (b.levels(None), b.levels("a"), b.levels("b"))


# One step: wait, reserve (and settle now or later, with part of it used), or settle a held one.
step_st = st.one_of(
    st.tuples(st.just("wait"), st.floats(min_value=0, max_value=30)),
    st.tuples(
        st.just("reserve"),
        st.sampled_from(["a", "b"]),
        st.integers(min_value=0, max_value=12_000),
        st.floats(min_value=0, max_value=1),
        st.booleans(),
    ),
    st.tuples(st.just("settle")),
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(step_st, max_size=60))
def test_no_bucket_lets_more_through_than_burst_plus_rate_times_time(steps: list) -> None:
    clock = Clock()
    b = budget(clock, a=TIGHT)
    start = clock.now
    through = {"server": 0.0, "a": 0.0}  # kept bytes, and held reservations counted whole
    held: list[tuple[Reservation, str, int]] = []

    def pass_through(root: str, nbytes: float) -> None:
        through["server"] += nbytes
        if root == "a":
            through["a"] += nbytes

    for step in steps:
        if step[0] == "wait":
            clock.now += step[1]
        elif step[0] == "settle" and held:
            r, root, used = held.pop(0)
            r.settle(used)
            pass_through(root, used - r.reserved)
        elif step[0] == "reserve":
            _, root, n, part, later = step
            before = levels(b)
            try:
                r = b.reserve(root, n)
            except BudgetSpent:
                assert levels(b) == before  # a refusal takes nothing
                continue
            pass_through(root, n)
            used = int(n * part)
            if later:
                held.append((r, root, used))
            else:
                r.settle(used)
                pass_through(root, used - n)
        elapsed = clock.now - start
        for name, rate in (("server", SERVER), ("a", TIGHT)):
            allowed = rate.burst_bytes + rate.bytes_per_minute * elapsed / 60
            assert through[name] <= allowed + 1e-6, (name, through[name], allowed)


def test_a_refusal_says_what_was_spent_over_what_window_the_rate_and_when() -> None:
    clock = Clock()
    b = budget(clock)
    b.reserve("a", 9000).settle(9000)
    clock.now += 5  # 500 bytes back
    with pytest.raises(BudgetSpent) as refused:
        b.reserve("a", 3000)
    assert refused.value.rule == "budget"
    # spent since the bucket was last full (at the first reservation): 9000 over 5 s;
    # 1500 left, 1500 missing at 100 bytes a second
    assert refused.value.message == (
        "byte budget spent: 8.8 KiB over the last 5 s (the server, 1.5 KiB left); refills at "
        "5.9 KiB per minute; a call of this size (2.9 KiB) can run in about 15 s; "
        "nothing was done"
    )
    clock.now += 15
    b.reserve("a", 3000)


def test_the_refusal_speaks_of_the_bucket_that_makes_the_call_wait_longest() -> None:
    clock = Clock()
    b = budget(clock, a=TIGHT)
    b.reserve("a", 3500).settle(3500)
    with pytest.raises(BudgetSpent, match=r"\(root 'a', 500 bytes left\)"):
        b.reserve("a", 1000)
    b.reserve("b", 1000).settle(1000)  # another root pays the server's bucket only


def test_a_call_larger_than_the_burst_is_told_it_can_never_run() -> None:
    b = budget(Clock())
    with pytest.raises(BudgetSpent, match=r"^byte budget too small for this call: .* "
                       r"holds at most 9.8 KiB \(burst_bytes\); nothing was done$"):
        b.reserve("a", 10_001)


def test_the_bucket_refills_to_its_burst_and_no_further() -> None:
    clock = Clock()
    b = budget(clock)
    b.reserve("a", 10_000).settle(10_000)
    assert available(b) == 0
    clock.now += 60
    assert available(b) == 6000
    clock.now += 3600  # an idle night: full, never more (not a cumulative counter)
    assert available(b) == 10_000


def test_an_exception_inside_gives_everything_back_and_settle_keeps_only_the_used() -> None:
    b = budget(Clock())
    with pytest.raises(RuntimeError), b.reserve("a", 4000):
        raise RuntimeError("the read failed")
    assert available(b) == 10_000
    with b.reserve("a", 4000) as paid:
        paid.settle(100)
        paid.settle(4000)  # once only
    assert available(b) == 9900
    b.charge("a", 900)
    assert available(b) == 9000


def test_off_unless_configured() -> None:
    b = Budget(Clock())
    assert not b.active and b.levels() is None
    b.reserve("a", 10**12).settle(10**12)  # nothing to pay


# A reload: (settings after, available after). Spent before: 7000 of the server's 10,000.
RELOADS = [
    # same settings: the level stays (a reload never fills a bucket: an agent may call it)
    (SERVER, 3000),
    # a higher burst: the level stays, it refills from there
    (Rate(6000, 50_000), 3000),
    # a lower burst: at most the new burst, at once
    (Rate(6000, 2000), 2000),
]


@pytest.mark.parametrize(("after", "left"), RELOADS)
def test_a_reload_keeps_the_level_at_most_the_new_burst(after: Rate, left: int) -> None:
    clock = Clock()
    b = budget(clock)
    b.charge("a", 7000)
    clock.now += 0.5  # refilled meanwhile: 50 bytes (at most the burst)
    b.apply(after, {})
    assert available(b) == min(left + 50, after.burst_bytes)


def test_a_reload_adds_buckets_full_and_drops_the_ones_removed() -> None:
    clock = Clock()
    b = budget(clock, a=TIGHT)
    b.charge("a", 3000)
    b.apply(SERVER, {"b": TIGHT})
    assert b.levels("a") is None
    assert available(b, "b") == 4000
    assert available(b) == 7000
    b.apply(None, {})
    assert not b.active


def test_threads_never_spend_more_than_the_burst_when_time_stands_still() -> None:
    clock = Clock()
    b = budget(clock, a=TIGHT)
    kept: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        for i in range(300):
            n = 1 + (seed * 131 + i * 17) % 700
            try:
                with b.reserve("a" if i % 2 else "b", n) as paid:
                    paid.settle(n // 2)
            except BudgetSpent:
                continue
            with lock:
                kept.append((n // 2, i % 2 == 1))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spent = sum(n for n, _ in kept)
    spent_a = sum(n for n, on_a in kept if on_a)
    assert spent <= SERVER.burst_bytes and spent_a <= TIGHT.burst_bytes
    assert available(b) == SERVER.burst_bytes - spent
    assert available(b, "a") == TIGHT.burst_bytes - spent_a


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0.2, "1 s"), (59.0, "59 s"), (75.2, "1 min 16 s"), (7260, "2 h 1 min"),
     (float("inf"), "never")],
)
def test_durations_in_words(seconds: float, said: str) -> None:
    from app.messages import duration_text

    assert duration_text(seconds) == said


def test_sizes_in_words() -> None:
    from app.messages import size_text

    said = [size_text(n) for n in (0, 1023, 1024, 10 << 20, 3 << 30)]
    assert said == ["0 bytes", "1023 bytes", "1.0 KiB", "10.0 MiB", "3.0 GiB"]
    assert re.fullmatch(r"\d+\.\d KiB", size_text(1536))


def test_a_copy_across_roots_pays_each_roots_bucket_and_the_servers_once() -> None:
    b = budget(Clock(), a=TIGHT, b=TIGHT)
    b.charge(("a", "b"), 1000)
    assert (available(b), available(b, "a"), available(b, "b")) == (9000, 3000, 3000)
    b.charge(("a", "a"), 1000)  # the same root twice pays once
    assert (available(b), available(b, "a")) == (8000, 2000)
    before = levels(b)
    with pytest.raises(BudgetSpent, match=r"\(root 'a', 2.0 KiB left\)"):
        b.charge(("b", "a"), 2500)  # 'b' could pay it, 'a' cannot: neither pays
    assert levels(b) == before


def test_the_window_starts_when_the_bucket_was_last_full_not_at_start_up() -> None:
    clock = Clock()
    b = budget(clock)
    clock.now += 3600  # an idle hour, full all along
    b.charge("a", 9500)
    clock.now += 2
    with pytest.raises(BudgetSpent, match=r"^byte budget spent: 9.3 KiB over the last 2 s "):
        b.reserve("a", 1000)


def test_an_answer_over_its_bound_is_paid_all_the_same_as_a_debt() -> None:
    clock = Clock()
    b = budget(clock)
    b.reserve("a", 1000).settle(12_000)  # a bound that was wrong: 2,000 bytes of debt
    assert available(b) == 0
    clock.now += 20  # 2,000 bytes back: the debt paid, nothing available yet
    with pytest.raises(BudgetSpent, match=r"\(the server, 0 bytes left\).* in about 1 s;"):
        b.reserve("a", 100)
    clock.now += 1
    b.reserve("a", 100)


def test_a_clients_bucket_is_paid_by_its_calls_only_all_or_nothing() -> None:
    """`[[clients]]` with a budget: a call of that client pays the server's bucket and its
    own; another client's call, or one with no client, pays the server's only; a refusal by
    the client's bucket takes nothing from the server's."""
    clock = Clock()
    b = Budget(clock)
    b.apply(SERVER, {}, {"agent": TIGHT})
    b.reserve("a", 3500, "agent").settle(3500)
    assert available(b) == 6500
    level = b.levels(client="agent")
    assert level is not None and level.available_bytes == 500
    with pytest.raises(BudgetSpent, match=r"\(client 'agent', 500 bytes left\)"):
        b.reserve("a", 1000, "agent")
    assert available(b) == 6500  # all or nothing
    b.reserve("a", 1000, "chatgpt").settle(1000)
    b.reserve("a", 1000).settle(1000)
    assert available(b) == 4500
    b.apply(SERVER, {}, {})
    assert b.levels(client="agent") is None
