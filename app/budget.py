"""The byte budget: token buckets of bytes, refilled continuously (docs/configuration.md#budget).

What it is for: bounding what a runaway agent costs (50 files of 8 MiB weigh 400 MiB; 10,000
small files weigh little), counted in bytes, not calls. What it is not: a security control.
An agent held to 100 MiB a minute still reads 100 MiB a minute.

A bucket holds at most `burst_bytes` and refills at `bytes_per_minute`, continuously, whatever
happens: over stdio the process outlives every conversation, so nothing here is "per session"
and nothing is a cumulative counter that would one day block until a restart. There is one
bucket for the server, one for each root that sets its own and one for each client
(`[[clients]]`) that sets its own; a call pays every bucket that covers its root and its
client, all or none.

A call reserves its bound before it starts (`Budget.reserve`) and gives back what it did not
use (`Reservation.settle`); a call the buckets cannot pay is refused (`BudgetSpent`) before
anything is read or written. One lock covers every bucket: calls run in worker threads, reads
concurrently, and a reservation must take from the server's bucket and the root's together.
The clock is a parameter, so tests drive time themselves.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.errors import BudgetSpent
from app.messages import duration_text, size_text

Clock = Callable[[], float]
Roots = str | tuple[str, ...]  # the root a call pays for, or each side of a copy

# A text answer is bounded in characters (max_output_chars); one character is at most 4
# bytes of UTF-8, so that is what a text call reserves per character of its cap. Below
# TEXT_FLOOR characters the answers keep a little room whatever the cap (a window of at
# least one cut line, a file's share in read_multiple_files), so the floor is reserved.
BYTES_PER_CHAR = 4
TEXT_FLOOR = 4096


def text_bound(max_output_chars: int) -> int:
    """What a call answering file text reserves: its cap, in bytes of UTF-8."""
    return BYTES_PER_CHAR * max(max_output_chars, TEXT_FLOOR)


def largest_call(max_read_bytes: int, max_output_chars: int) -> int:
    """The most one call on a root may reserve: a file read or written whole (media, a
    write, an edit) or a text answer at its cap. A burst below it could never pay it."""
    return max(max_read_bytes, text_bound(max_output_chars))


@dataclass(frozen=True)
class Rate:
    """A bucket's settings, as the config file gives them."""

    bytes_per_minute: int
    burst_bytes: int


@dataclass(frozen=True)
class Level:
    """A bucket as `list_roots` shows it."""

    bytes_per_minute: int
    burst_bytes: int
    available_bytes: int


class Bucket:
    """One token bucket. Not locked: `Budget` holds the lock for every bucket it has."""

    def __init__(self, rate: Rate, now: float, who: str) -> None:
        self.rate = rate
        self.who = who  # "the server" or "root 'x'", for the refusal
        self.level = float(rate.burst_bytes)
        self.stamp = now
        self.full_at = now  # the window of the refusal: spent since the bucket was last full
        self.spent = 0

    def refill(self, now: float) -> None:
        burst = self.rate.burst_bytes
        per_second = self.rate.bytes_per_minute / 60
        elapsed = max(now - self.stamp, 0.0)  # a clock that steps back refills nothing
        self.stamp = max(now, self.stamp)
        if self.level >= burst:
            self.full_at = self.stamp  # full until now: nothing spent in the window yet
            return
        missing = burst - self.level
        if elapsed * per_second >= missing:
            self.full_at = self.stamp - elapsed + missing / per_second
            self.level, self.spent = float(burst), 0
        else:
            self.level += elapsed * per_second

    def reconfigure(self, rate: Rate) -> None:
        """New settings keep what was spent: a reload never fills a bucket (an agent may
        call reload_config), and a lower burst takes effect at once."""
        self.rate = rate
        self.level = min(self.level, float(rate.burst_bytes))

    def take(self, nbytes: int) -> None:
        self.level -= nbytes
        self.spent += nbytes

    def give(self, nbytes: int) -> None:
        """Give back `nbytes` (negative: take them, even below empty)."""
        self.level = min(self.level + nbytes, float(self.rate.burst_bytes))
        self.spent = max(self.spent - nbytes, 0)

    def wait(self, nbytes: int) -> float:
        """Seconds until this bucket can pay `nbytes` (inf when it never can)."""
        if nbytes > self.rate.burst_bytes:
            return math.inf
        return max(nbytes - self.level, 0.0) * 60 / self.rate.bytes_per_minute

    def refusal(self, nbytes: int, now: float) -> BudgetSpent:
        rate = self.rate
        if nbytes > rate.burst_bytes:
            return BudgetSpent(
                f"byte budget too small for this call: it may take up to {size_text(nbytes)} "
                f"and the byte budget of {self.who} holds at most {size_text(rate.burst_bytes)} "
                "(burst_bytes); nothing was done"
            )
        left = max(int(self.level), 0)
        return BudgetSpent(
            f"byte budget spent: {size_text(self.spent)} over the last "
            f"{duration_text(now - self.full_at)} ({self.who}, {size_text(left)} "
            f"left); refills at {size_text(rate.bytes_per_minute)} per minute; a call of this "
            f"size ({size_text(nbytes)}) can run in about {duration_text(self.wait(nbytes))}; "
            "nothing was done"
        )


class Reservation:
    """Bytes taken from the buckets for one call: `settle(used)` gives back the rest, once.

    As a context manager, an exception inside gives everything back (the call returned and
    wrote nothing); leaving without `settle` keeps the whole reservation.
    """

    def __init__(self, budget: Budget | None, buckets: tuple[Bucket, ...], nbytes: int) -> None:
        self._budget = budget
        self._buckets = buckets
        self.reserved = nbytes
        self.used: int | None = None

    def settle(self, used: int) -> None:
        """Keep `used` bytes: the rest goes back; more than was reserved (a bound that was
        wrong) is taken all the same, as a debt the next calls wait for."""
        if self.used is not None:
            return
        self.used = max(used, 0)
        if self._budget is not None and self.used != self.reserved:
            self._budget._give(self._buckets, self.reserved - self.used)

    def refund(self) -> None:
        self.settle(0)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is not None:
            self.refund()


FREE = Reservation(None, (), 0)


class Budget:
    """The server's bucket and the roots' own, behind one lock; off until `apply` sets one."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock  # public: tests drive time
        self._lock = threading.Lock()
        self._server: Bucket | None = None
        self._roots: dict[str, Bucket] = {}
        self._clients: dict[str, Bucket] = {}

    @property
    def active(self) -> bool:
        return self._server is not None or bool(self._roots) or bool(self._clients)

    def apply(
        self, server: Rate | None, roots: Mapping[str, Rate],
        clients: Mapping[str, Rate] | None = None,
    ) -> None:
        """Take new settings (a reload): a bucket that stays keeps its level (never above
        its new burst); a new one starts full; one no longer configured is dropped."""
        with self._lock:
            now = self.clock()
            self._server = self._carry(self._server, server, now, "the server")
            self._roots = {
                name: bucket
                for name, rate in roots.items()
                if (bucket := self._carry(self._roots.get(name), rate, now, f"root '{name}'"))
            }
            self._clients = {
                name: bucket
                for name, rate in (clients or {}).items()
                if (bucket := self._carry(self._clients.get(name), rate, now,
                                          f"client '{name}'"))
            }

    @staticmethod
    def _carry(old: Bucket | None, rate: Rate | None, now: float, who: str) -> Bucket | None:
        if rate is None:
            return None
        if old is None:
            return Bucket(rate, now, who)
        old.refill(now)
        old.reconfigure(rate)
        return old

    def _covering(self, roots: Roots, client: str | None) -> tuple[Bucket, ...]:
        names = (roots,) if isinstance(roots, str) else tuple(dict.fromkeys(roots))
        found = (
            self._server, *(self._roots.get(name) for name in names),
            self._clients.get(client) if client is not None else None,
        )
        return tuple(b for b in found if b is not None)

    def reserve(self, roots: Roots, nbytes: int, client: str | None = None) -> Reservation:
        """Take `nbytes` from every bucket covering `roots` (a root, or both sides of a copy
        across roots: the server's bucket is paid once), or raise `BudgetSpent` and take
        nothing (the refusal speaks of the bucket that would make the call wait longest)."""
        if not self.active or nbytes <= 0:
            return FREE
        with self._lock:
            now = self.clock()
            buckets = self._covering(roots, client)
            for b in buckets:
                b.refill(now)
            short = [b for b in buckets if b.level < nbytes]
            if short:
                worst = max(short, key=lambda b: b.wait(nbytes))
                raise worst.refusal(nbytes, now)
            for b in buckets:
                b.take(nbytes)
        return Reservation(self, buckets, nbytes)

    def charge(self, roots: Roots, nbytes: int, client: str | None = None) -> None:
        """Pay `nbytes` for `roots` (and `client`'s own bucket) for good (bytes copied, known
        before the copy), or raise `BudgetSpent` and pay nothing."""
        self.reserve(roots, nbytes, client).settle(nbytes)

    def _give(self, buckets: tuple[Bucket, ...], nbytes: int) -> None:
        with self._lock:
            now = self.clock()
            for b in buckets:
                b.refill(now)
                b.give(nbytes)

    def levels(self, root: str | None = None, client: str | None = None) -> Level | None:
        """The server's bucket (`root` None), `root`'s own or `client`'s own (`client` given),
        as it stands now; None if none."""
        with self._lock:
            if client is not None:
                bucket = self._clients.get(client)
            else:
                bucket = self._server if root is None else self._roots.get(root)
            if bucket is None:
                return None
            bucket.refill(self.clock())
            return Level(
                bucket.rate.bytes_per_minute, bucket.rate.burst_bytes, max(int(bucket.level), 0)
            )
