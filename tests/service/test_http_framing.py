"""Every byte of HTTP framing the server accepts counts against a cap (app/http/protocol.py).

The console script as shipped (a token in LOOMFS_TOKEN), in a child process
whose peak memory is read from /proc. Each shape of
`benchmarks/worst_cases_http.py` goes over a raw socket, unauthenticated ones
first: once 160 MiB of trailers after the last chunk of a request with a wrong
token raised the server's peak by 164 MiB, and chunk-size lines and extensions
were parsed for as long as the client sent them. Then generated requests
(hypothesis): framing under the caps is served and leaves the connection
usable; framing over them closes it.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.http.limits import FEED, MAX_FRAMING_BYTES, MAX_HEAD_BYTES
from benchmarks.worst_cases_http import (
    SHAPES,
    TOKEN,
    build_root,
    reset_peak,
    run_shape,
    server,
    status_kib,
    wait_healthy,
)

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="peak RSS reset is Linux-only"
)

OFFERED = 48 << 20  # bytes of framing each shape offers
BOUND_MIB = 24.0  # peak growth above the server's size before the shape


@pytest.fixture(scope="module")
def shipped(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    cfg = build_root(Path(os.path.realpath(tmp_path_factory.mktemp("framing"))))
    with server(cfg) as running:
        yield running


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_framing_flood_is_cut_off_and_memory_stays_flat(
    shipped: tuple[subprocess.Popen[bytes], int], name: str
) -> None:
    proc, port = shipped
    got = run_shape(proc, port, name, OFFERED)
    assert got["closed_early"], f"the server read all {OFFERED} bytes: {got}"
    # A reset may reach the client before the answer does: no answer is allowed, any
    # other answer is not.
    assert got["status"] in (*SHAPES[name].answers, None), got
    assert float(str(got["rss_growth_mib"])) < BOUND_MIB, got
    wait_healthy(proc, port, deadline=5)


# --- generated requests: under the caps they are served, over them the connection closes


def _exchange(port: int, raw: bytes) -> list[int]:
    """Send `raw`, then a `GET /healthz` that closes the connection; the statuses answered."""
    answer = bytearray()
    closing = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with contextlib.suppress(OSError):
            s.sendall(raw + closing)
        with contextlib.suppress(OSError):
            while chunk := s.recv(65536):
                answer.extend(chunk)
    # Each answer has a Content-Length and none of their bodies holds a status line.
    return [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", bytes(answer))]


def _split(draw: st.DrawFn, total: int, most: int) -> list[int]:
    """`total` cut into 1 to `most` random parts."""
    weights = draw(st.lists(st.integers(1, 100), min_size=1, max_size=most))
    return [total * w // sum(weights) for w in weights]


@st.composite
def framed(draw: st.DrawFn) -> tuple[bytes, int, int, bool]:
    """A chunked POST: (its bytes, its head's size, its framing's size, token right).

    Its regime is drawn first (all under the caps, a head over its cap, framing after the
    head over the total cap), then how the bytes are spread: blank lines before the
    request, headers, chunks with extensions, trailers."""
    authorized = draw(st.booleans())
    regime = draw(st.sampled_from(["under", "head", "framing"]))
    head_extra = (draw(st.integers(MAX_HEAD_BYTES, 2 * MAX_HEAD_BYTES)) if regime == "head"
                  else draw(st.integers(0, 8 << 10)))
    after = (draw(st.integers(MAX_FRAMING_BYTES, 2 * MAX_FRAMING_BYTES)) if regime == "framing"
             else draw(st.integers(0, 48 << 10)))
    blank = b"\r\n" * draw(st.integers(0, 40))
    headers = b"".join(b"X-H%d: " % i + b"h" * n + b"\r\n"
                       for i, n in enumerate(_split(draw, head_extra, 4)))
    head = blank + (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + (TOKEN if authorized else "wrong").encode()
        + b"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
        + b"\r\nTransfer-Encoding: chunked\r\n" + headers + b"\r\n"
    )
    parts = _split(draw, after, 8)
    cut = draw(st.integers(0, len(parts)))
    body = framing = b""
    for ext in parts[:cut]:  # chunks, each with an extension of that size
        size = draw(st.integers(1, 64))
        line = b"%x" % size + (b";e=" + b"e" * ext if ext else b"") + b"\r\n"
        framing += line + b"\r\n"
        body += line + b"x" * size + b"\r\n"
    trailers = b"".join(b"X-T: " + b"t" * n + b"\r\n" for n in parts[cut:])
    end = b"0\r\n" + trailers + b"\r\n"
    return head + body + end, len(head), len(head) + len(framing) + len(end), authorized


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(case=framed())
def test_generated_framing_is_served_under_the_caps_and_cut_off_over_them(
    shipped: tuple[subprocess.Popen[bytes], int], case: tuple[bytes, int, int, bool]
) -> None:
    proc, port = shipped
    raw, head, framing, authorized = case
    reset_peak(proc.pid)
    before = status_kib(proc.pid, "VmRSS")
    statuses = _exchange(port, raw)
    if head > MAX_HEAD_BYTES + FEED:
        event("head over its cap")
        assert statuses in ([431], []), statuses
    elif head <= MAX_HEAD_BYTES - FEED and framing <= MAX_FRAMING_BYTES - FEED:
        event("under the caps")
        # Served (401 without the token; a body that is not an initialize is a 400), and the
        # connection then serves the next request.
        assert statuses == [400 if authorized else 401, 200], statuses
    elif framing > MAX_FRAMING_BYTES + FEED:
        event("framing over its cap")
        assert 200 not in statuses, statuses  # the connection was closed before /healthz
    assert (status_kib(proc.pid, "VmHWM") - before) / 1024 < BOUND_MIB


# --- framing that lies: refused before anything is served, and nothing after it is parsed

_POST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
_SMUGGLED = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
LIES = {
    "content-length then chunked": _POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked"
    b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + _SMUGGLED,
    "chunked then content-length": _POST + b"Transfer-Encoding: chunked\r\nContent-Length: 3"
    b"\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + _SMUGGLED,
    "two content-lengths": _POST + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "negative content-length": _POST + b"Content-Length: -5\r\n\r\nhello",
    "signed content-length": _POST + b"Content-Length: +5\r\n\r\nhello" + _SMUGGLED,
    "negative chunk size": _POST + b"Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
    "chunk size over 64 bits": _POST + b"Transfer-Encoding: chunked\r\n\r\n"
    + b"f" * 17 + b"\r\nhello\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("raw", list(LIES.values()), ids=list(LIES))
def test_framing_that_lies_is_refused_and_nothing_after_it_is_served(
    shipped: tuple[subprocess.Popen[bytes], int], raw: bytes
) -> None:
    proc, port = shipped
    assert _exchange(port, raw) == [400]  # neither the smuggled request nor /healthz
    wait_healthy(proc, port, deadline=5)


def test_pipelined_requests_are_each_answered_in_turn(
    shipped: tuple[subprocess.Popen[bytes], int],
) -> None:
    """300 requests sent before any answer is read, with and without bodies."""
    _proc, port = shipped
    wrong = _POST + b"Authorization: Bearer wrong\r\n"
    raw = b"".join(
        (wrong + b"Content-Length: 2\r\n\r\n{}") if i % 3 == 0
        else (wrong + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n") if i % 3 == 1
        else _SMUGGLED
        for i in range(300)
    )
    assert _exchange(port, raw) == [401, 401, 200] * 100 + [200]
