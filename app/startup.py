"""Start a transport: stdio, or HTTP under uvicorn with the bind guard."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import socket
import sys

from app.config import LoadedConfig
from app.errors import ConfigError
from app.settings import Settings


def setup_logging() -> None:
    """Everything to stderr: on stdio, stdout is the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in ("mcp", "httpx", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)


def announce(loaded: LoadedConfig, transport: str) -> None:
    # Names, roles and permissions only: on stdio, stderr often ends up in a client's logs.
    for r in loaded.roots:
        mark = " (default)" if r.name == loaded.default_root else ""
        print(
            f"root {r.name}{mark}: role {r.role}, permissions [{', '.join(r.permissions)}]",
            file=sys.stderr,
        )
    print(f"transport: {transport}", file=sys.stderr, flush=True)


def bind_guard(host: str, allow_remote: bool, token: str | None) -> str | None:
    """The reason a bind must be refused, or None."""
    from app.http.guards import is_loopback  # here: stdio never loads the HTTP stack

    if is_loopback(host):
        return None
    missing = []
    if not allow_remote:
        missing.append("--allow-remote")
    if not token:
        missing.append("a token (LOOMFS_TOKEN or LOOMFS_TOKEN_FILE)")
    if not missing:
        return None
    return (
        f"refusing to listen on non-loopback host {host!r}: that needs --allow-remote and a "
        f"token; missing: {' and '.join(missing)}"
    )


def platform_refusal() -> str | None:
    """Why this platform cannot run the handle-based choke point, or None."""
    needed = (os.open, os.stat, os.mkdir, os.rename, os.unlink, os.readlink)
    if all(fn in os.supports_dir_fd for fn in needed) and os.scandir in os.supports_fd:
        return None
    return (
        "this platform lacks the dir_fd/O_NOFOLLOW system calls that confinement relies on; "
        "refusing to serve rather than fall back to path-string checks that races defeat"
    )


def serve(args: argparse.Namespace, config_path: str, loaded: LoadedConfig) -> int:
    refusal = platform_refusal()
    if refusal:
        print(f"loom-fs-mcp: {refusal}", file=sys.stderr)
        return 1
    settings = Settings()
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    try:
        token = settings.resolved_token()
    except OSError as exc:
        print(f"loom-fs-mcp: LOOMFS_TOKEN_FILE cannot be read ({exc.strerror})", file=sys.stderr)
        return 1
    if args.transport == "http":
        refusal = bind_guard(host, args.allow_remote, token)
        if refusal:
            print(f"loom-fs-mcp: {refusal}", file=sys.stderr)
            return 2
    setup_logging()
    from app.registry import Registry
    from app.server import LoomServer

    try:
        registry = Registry(config_path)
    except ConfigError as exc:
        print(f"loom-fs-mcp: {exc.message}", file=sys.stderr)
        return 1
    from app.fs.sweep import sweep_temp_files

    for root in registry.current.roots.values():
        sweep_temp_files(root)
    server = LoomServer(registry)
    announce(registry.current.config, args.transport)
    if args.transport == "stdio":
        return _serve_stdio(server)
    return _serve_http(server, host, port, token, settings)


def _serve_stdio(server) -> int:
    import anyio

    from app.server import install_sighup
    from app.stdio import run_stdio

    async def main() -> None:
        install_sighup(server)
        await run_stdio(server)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    return 0


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket (OSError when the address cannot be had)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only when the
    # listening socket says TCP; without it Nagle and delayed ACKs add 40 ms to a call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _serve_http(server, host: str, port: int, token: str | None, settings: Settings) -> int:
    import uvicorn

    from app.http import build_app
    from app.http.limits import uvicorn_limits

    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print(
                f"loom-fs-mcp: port {port} on {host} is already in use; pick another with "
                "--port or LOOMFS_PORT",
                file=sys.stderr,
            )
        else:
            print(f"loom-fs-mcp: cannot listen on {host}:{port} ({exc.strerror})", file=sys.stderr)
        return 1
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"listening on http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    app = build_app(
        server,
        token=token,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
        handle_sighup=True,
    )
    server_class = _uvicorn_server_class()
    # httptools (uvicorn's C parser; 5-20% less server CPU per small call than h11,
    # benchmarks/http_modes.py, docs/measured.md) with the header cap, read
    # timeouts and connection cap that app.http.limits adds.
    # proxy_headers=False: uvicorn otherwise trusts X-Forwarded-For from 127.0.0.1, which is
    # every local client, and the audit log would record whatever address a client claims.
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=5,
        proxy_headers=False, forwarded_allow_ips="", **uvicorn_limits(),
    )
    server_class(config).run(sockets=[sock])
    return 0


def _uvicorn_server_class():
    import uvicorn

    class QuietExit(uvicorn.Server):
        """Shut down gracefully on SIGINT/SIGTERM, then exit 0 instead of re-raising."""

        def handle_exit(self, sig, frame):
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            else:
                self.should_exit = True

    return QuietExit
