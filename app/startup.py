"""Start a transport: stdio, or HTTP under uvicorn with the bind guard."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import shlex
import signal
import socket
import sys
from dataclasses import dataclass

from app.config import LoadedConfig
from app.config_checks import check_token_file, resolve_links
from app.errors import ConfigError
from app.security import ops, statedir
from app.security.tokenfile import (
    TokenFile,
    TokenHolder,
    default_token_path,
    ensure_token,
    read_token,
)
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
    """The reason a bind must be refused, or None (`token`: one the person configured)."""
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


@dataclass(frozen=True)
class HttpAuth:
    """What /mcp requires: LOOMFS_TOKEN's value, a token file's (configured or made), or,
    with --no-auth, nothing."""

    token: str | None = None
    file: TokenFile | None = None
    made_now: bool = False
    clients: bool = False  # [[clients]]: each client's own token, read by the registry


def http_auth(
    args: argparse.Namespace, settings: Settings, host: str, loaded: LoadedConfig
) -> HttpAuth | tuple[int, str]:
    """Closed by default: the token the person configured, else one made at the first start
    (and reused); or the exit code and the reason to refuse."""
    from app.http.guards import is_loopback

    configured = settings.token or settings.token_file
    if loaded.clients:
        beside = [name for name, given in (
            ("LOOMFS_TOKEN", settings.token), ("LOOMFS_TOKEN_FILE", settings.token_file),
            ("--no-auth", args.no_auth)) if given]
        if beside:
            return 2, (
                f"{' and '.join(beside)} beside [[clients]] in the config: with [[clients]] "
                "each client has its own token; drop one of them"
            )
        refusal = bind_guard(host, args.allow_remote, "clients")
        return (2, refusal) if refusal else HttpAuth(clients=True)
    if settings.token and settings.token_file:
        return 2, "LOOMFS_TOKEN and LOOMFS_TOKEN_FILE are both set: keep one"
    if args.no_auth:
        if configured:
            return 2, (
                "--no-auth asks for no token, but LOOMFS_TOKEN or LOOMFS_TOKEN_FILE gives "
                "one: drop one of them"
            )
        if not is_loopback(host):
            return 2, f"refusing --no-auth on non-loopback host {host!r}: it is for loopback only"
        return HttpAuth()
    refusal = bind_guard(host, args.allow_remote, configured)
    if refusal:
        return 2, refusal
    if settings.token:
        return HttpAuth(token=settings.token)
    if settings.token_file:
        given = TokenFile(os.path.abspath(settings.token_file))
        return _usable(given) or HttpAuth(file=given)
    path = default_token_path()
    try:
        check_token_file(list(loaded.roots), *resolve_links(path), made=True)
        made = ensure_token(path)
    except ConfigError as exc:
        return 1, exc.message
    except OSError as exc:
        return 1, f"cannot make the token file {path} ({exc.strerror})"
    return _usable(TokenFile(path, made=True)) or HttpAuth(
        file=TokenFile(path, made=True), made_now=made
    )


def _usable(tf: TokenFile) -> tuple[int, str] | None:
    """Why the token file cannot serve, with its path (the operator's terminal), or None."""
    try:
        read_token(tf)
    except ConfigError as exc:
        return 1, f"{exc.message} ({tf.path})"
    return None


def announce_auth(auth: HttpAuth, url: str) -> None:
    """Where the token is and the command lines that use it (the operator's terminal)."""
    err = sys.stderr
    if auth.clients:
        return
    if auth.token is None and auth.file is None:
        print("WARNING: --no-auth: /mcp requires no token; every process of every user on "
              "this machine can use these roots", file=err, flush=True)
        return
    if auth.file is None:
        print("token: from LOOMFS_TOKEN; /mcp requires it", file=err, flush=True)
        return
    how = "LOOMFS_TOKEN_FILE"
    if auth.file.made:
        how = "made now" if auth.made_now else "made at an earlier start"
    path = shlex.quote(auth.file.path)
    print(f"token: {auth.file.path} ({how}; read again at every reload); /mcp requires it. "
          "A client connects with:", file=err)
    print(f'  claude mcp add --transport http loom-fs {url} --header '
          f'"Authorization: Bearer $(cat {path})"', file=err)
    print(f'  export LOOMFS_TOKEN="$(cat {path})"   # for clients that read it from the '
          "environment (docs/clients.md)", file=err, flush=True)


def announce_clients(registry, url: str) -> None:
    """Each client, its grant, where its token is and a command line that uses it (the
    operator's terminal; docs/clients.md)."""
    err = sys.stderr
    for c in registry.current.config.clients:
        tf = registry.client_token_file(c)
        how = "token_file"
        if tf.made:
            how = "made now" if c.name in registry.made_now else "made at an earlier start"
        grant = ", ".join(f"{root} [{', '.join(perms)}]" for root, perms in c.grants)
        print(f"client {c.name}: {grant}; token {tf.path} ({how}; read again at every "
              "reload)", file=err)
        print(f'  claude mcp add --transport http loom-fs-{c.name} {url} --header '
              f'"Authorization: Bearer $(cat {shlex.quote(tf.path)})"', file=err)
    err.flush()


def platform_refusal() -> str | None:
    """Why this platform cannot run the handle-based choke point, or None."""
    if ops.supported():
        return None
    why = (
        "this platform lacks the dir_fd/O_NOFOLLOW system calls that confinement relies on; "
        "refusing to serve rather than fall back to path-string checks that races defeat"
    )
    if sys.platform == "win32":  # a docs/clients.md heading (tests/test_front_door.py)
        why += '. On Windows, run it inside WSL2: docs/clients.md, "Windows (WSL2)"'
    return why


def settle_state_folder(args: argparse.Namespace, settings: Settings, loaded: LoadedConfig) -> bool:
    """When this start uses the state folder (the default audit log and the index beside
    it, or a token to make), settle it and say what was done (`statedir.settle`); False
    when it cannot be used (said). stdio names it without its host path, as `announce`."""
    makes_token = args.transport == "http" and not (
        args.no_auth or settings.token or settings.token_file
    )
    if args.transport == "http" and loaded.clients:
        makes_token = any(c.token_file is None for c in loaded.clients)
    # Over HTTP the owner's page reads (or makes) its secret there (`app.ui.owner`).
    owner_page = args.transport == "http" or getattr(args, "ui", False)
    if loaded.model.audit_log is not None and not makes_token and not owner_page:
        return True
    given = os.path.normpath(statedir.state_dir())
    place = "$XDG_STATE_HOME" if os.path.isabs(os.environ.get("XDG_STATE_HOME") or "") else (
        "~/.local/state")

    def unnamed(path: str) -> str:
        return f"{place}/{statedir.STATE_NAME}" if path == given else "its real place"

    try:
        notes = statedir.settle(show=str if args.transport == "http" else unnamed)
    except ConfigError as exc:
        print(f"loom-fs-mcp: {exc.message}", file=sys.stderr)
        return False
    for note in notes:
        print(note, file=sys.stderr)
    return True


def _ready(args: argparse.Namespace, loaded: LoadedConfig) -> tuple[Settings, str, int] | None:
    """What every start does first: this platform can run the server, the state folder
    settled; the settings, host and port (None when it cannot start, said)."""
    refusal = platform_refusal()
    if refusal:
        print(f"loom-fs-mcp: {refusal}", file=sys.stderr)
        return None
    settings = Settings()
    if not settle_state_folder(args, settings, loaded):
        return None
    port = args.port if args.port is not None else settings.port
    return settings, args.host or settings.host, port


def serve(args: argparse.Namespace, config_path: str, loaded: LoadedConfig) -> int:
    ready = _ready(args, loaded)
    if ready is None:
        return 1
    settings, host, port = ready
    auth: HttpAuth | None = None
    if args.transport == "http":
        decided = http_auth(args, settings, host, loaded)
        if isinstance(decided, tuple):
            print(f"loom-fs-mcp: {decided[1]}", file=sys.stderr)
            return decided[0]
        auth = decided
    setup_logging()
    from app.registry import Registry
    from app.server import LoomServer

    client = getattr(args, "client", None)
    if client is not None and (auth is not None or not any(
            c.name == client for c in loaded.clients)):
        print("loom-fs-mcp: --client is for stdio and names a [[clients]] table of the "
              f"config; {client!r} is none", file=sys.stderr)
        return 2
    try:
        # stdio reads no token; LOOMFS_TOKEN_FILE, if set, is protected all the same.
        registry = Registry(config_path) if auth is None else Registry(
            config_path, token_file=auth.file, client_tokens=auth.clients
        )
    except ConfigError as exc:
        print(f"loom-fs-mcp: {exc.message}", file=sys.stderr)
        return 1
    registry.serves_client = client
    from app.fs.change.sweep import sweep_temp_files

    for root in registry.current.roots.values():
        sweep_temp_files(root)
    server = LoomServer(registry)
    announce(registry.current.config, args.transport)
    if client is not None:
        print(f"client {client}: stdio serves its grant only", file=sys.stderr)
    if auth is None:
        return _serve_stdio(server)
    return _serve_http(server, host, port, auth, settings)


def _serve_stdio(server) -> int:
    import anyio

    from app.server import install_sighup
    from app.stdio import run_stdio

    async def main() -> None:
        install_sighup(server)
        try:
            await run_stdio(server)
        finally:
            with anyio.CancelScope(shield=True):
                await server.close()

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


def _serve_http(server, host: str, port: int, auth: HttpAuth, settings: Settings) -> int:
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
    announce_auth(auth, f"http://{shown}:{bound}/mcp")
    if auth.clients:
        announce_clients(server.registry, f"http://{shown}:{bound}/mcp")
    ui = owner_page(server.registry, host, bound, f"http://{shown}:{bound}/mcp")
    if ui is None:
        sock.close()
        return 1
    ui.server_token = auth.token
    # A fixed LOOMFS_TOKEN, or the holder the registry refills from the token file at each
    # reload (None with --no-auth).
    token = TokenHolder(auth.token) if auth.token else server.registry.token
    app = build_app(
        server,
        token=token,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
        handle_sighup=True,
        ui=ui,
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


def owner_keys(loaded: LoadedConfig):
    """The owner's page's keys (`app.ui.owner`), its secret made at the first start; None
    when it cannot be had (said on stderr)."""
    from app.ui.owner import OwnerKeys, load_secret, secret_path

    path = secret_path()
    try:
        check_token_file(list(loaded.roots), *resolve_links(path), made=True)
        return OwnerKeys(load_secret(path))
    except ConfigError as exc:
        print(f"loom-fs-mcp: owner secret {path}: {exc.message}", file=sys.stderr)
    except OSError as exc:
        print(f"loom-fs-mcp: cannot make the owner secret {path} ({exc.strerror})",
              file=sys.stderr)
    return None


def owner_page(registry, host: str, port: int, mcp_url: str | None, *, standalone=False):
    """The owner's page of this process (`app.ui.context.UiContext`), its login link
    printed (the operator's terminal); None when its secret cannot be had (said)."""
    from app.ui.context import UiContext, owner_log_of, ui_audit_log

    keys = owner_keys(registry.current.config)
    if keys is None:
        return None
    log = ui_audit_log(registry) if standalone else owner_log_of(registry)
    print(f"owner's page: {keys.link(host, port)}  (single use, for 10 minutes; "
          "loom-fs-mcp --ui-link prints a fresh one)", file=sys.stderr, flush=True)
    return UiContext(registry=registry, keys=keys, mcp_url=mcp_url, owner_log=log)


def ui_link(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    """`--ui-link`: a fresh login link to the page of the server on --port (stdout)."""
    settings = Settings()
    if not settle_state_folder(args, settings, loaded):
        return 1
    keys = owner_keys(loaded)
    if keys is None:
        return 1
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    print(keys.link(host, port))
    return 0


def serve_ui(args: argparse.Namespace, config_path: str, loaded: LoadedConfig) -> int:
    """`--ui`: the owner's page alone, for servers that run over stdio: the same config,
    audit log and trash; its own owner lines in `ui-audit.log`."""
    ready = _ready(args, loaded)
    if ready is None:
        return 1
    settings, host, port = ready
    from app.http.guards import is_loopback

    if not is_loopback(host):
        print(f"loom-fs-mcp: --ui serves loopback only; refusing host {host!r}", file=sys.stderr)
        return 2
    setup_logging()
    from app.registry import Registry

    try:
        registry = Registry(config_path, audit=False)
    except ConfigError as exc:
        print(f"loom-fs-mcp: {exc.message}", file=sys.stderr)
        return 1
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        print(f"loom-fs-mcp: cannot listen on {host}:{port} ({exc.strerror})", file=sys.stderr)
        return 1
    bound = sock.getsockname()[1]
    ui = owner_page(registry, host, bound, None, standalone=True)
    if ui is None:
        sock.close()
        return 1
    import uvicorn

    from app.http.limits import uvicorn_limits
    from app.http.ui_only import build_ui_app

    app = build_ui_app(ui, settings.allowed_hosts, settings.allowed_origins)
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=5,
        proxy_headers=False, forwarded_allow_ips="", **uvicorn_limits(),
    )
    _uvicorn_server_class()(config).run(sockets=[sock])
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
