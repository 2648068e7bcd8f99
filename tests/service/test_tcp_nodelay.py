"""Connections accepted on the HTTP listening socket have Nagle off.

asyncio sets TCP_NODELAY on an accepted connection only when the listening
socket's protocol is IPPROTO_TCP; a socket made with proto 0 left every
response written in two segments waiting ~40 ms for the client's delayed ACK.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from app.startup import listening_socket
from tests.live import LiveServer


async def nodelay_of_accepted(sock: socket.socket) -> int:
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw = writer.get_extra_info("socket")
        seen.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    async with server:
        host, port = sock.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        try:
            return await asyncio.wait_for(seen, 10)
        finally:
            writer.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_the_served_socket_gives_connections_without_nagle(host: str) -> None:
    try:
        sock = listening_socket(host, 0)
    except OSError:
        pytest.skip(f"{host} is not available here")
    assert sock.proto == socket.IPPROTO_TCP
    assert await nodelay_of_accepted(sock) != 0


async def test_a_proto_zero_socket_would_not_get_it() -> None:
    # The control: the failure mode this guards against is real on this platform.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    assert await nodelay_of_accepted(sock) == 0


def test_the_test_server_socket_is_tcp_too(one_root_config) -> None:
    srv = LiveServer(one_root_config("reference"))
    try:
        assert srv._sock.proto == socket.IPPROTO_TCP
    finally:
        srv._sock.close()
