"""Closed by default: HTTP with no configured token makes one, requires it, reuses it, and
reads its file again at every reload (docs/service.md, "The bearer token").

Each test runs the console script as a person would, with XDG_STATE_HOME in a folder of
its own (tests/conftest.py), and talks to it over TCP.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from app import startup
from app.cli import main
from app.errors import DeniedName, LoomError
from app.fs.reading import listing
from app.fs.reading import read as read_mod
from app.registry import Registry
from tests.kit import roots_toml
from tests.live import (
    INIT_REQUEST,
    MCP_POST_HEADERS,
    env_without_loomfs,
    free_port,
    open_raw_session,
    rpc_messages,
    tool_request,
)
from tests.service.test_cli_http import EXE, wait_healthy


class Running:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc, self.port = proc, port
        self.base = f"http://127.0.0.1:{port}"

    def status(self, token: str | None, *, scheme: str = "Bearer") -> int:
        """The answer to a raw `initialize` with this token (None: no header)."""
        headers = dict(MCP_POST_HEADERS)
        if token is not None:
            headers["Authorization"] = f"{scheme} {token}"
        return httpx.post(f"{self.base}/mcp", json=INIT_REQUEST, headers=headers,
                          timeout=10).status_code

    def call(self, token: str, name: str, arguments: dict[str, object]) -> str:
        """One tool call on a new session, the answer's text."""
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=30) as http:
            open_raw_session(http)
            r = http.post("/mcp", headers=MCP_POST_HEADERS, json=tool_request(2, name, arguments))
        result = rpc_messages(r)[-1]["result"]
        return " ".join(c.get("text", "") for c in result["content"])


@pytest.fixture
def serve(one_root_config: Callable[..., Path]) -> Iterator[Callable[..., Running]]:
    started: list[subprocess.Popen[str]] = []

    def _serve(*args: str, config: Path | None = None, **env: str) -> Running:
        port = free_port()
        proc = subprocess.Popen(
            [EXE, "--config", str(config or one_root_config("reference")), "--transport",
             "http", "--port", str(port), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env_without_loomfs(**env), stdin=subprocess.DEVNULL,
        )
        started.append(proc)
        wait_healthy(port, proc)
        return Running(proc, port)

    yield _serve
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)


def stop(srv: Running) -> str:
    """SIGTERM, and what the server said on stderr."""
    srv.proc.send_signal(signal.SIGTERM)
    _, err = srv.proc.communicate(timeout=20)
    assert srv.proc.returncode == 0, err
    return err


def made_path(state: Path) -> Path:
    return state / "loom-fs-mcp" / "token"


def rotate(path: Path, token: str) -> None:
    """What docs/service.md tells a person to do: a new private file renamed over the old."""
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, f"{token}\n".encode())
    os.close(fd)
    os.replace(tmp, path)


def wait_for(check: Callable[[], bool], what: str, deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, what
        time.sleep(0.05)


# -- made, required, reused ---------------------------------------------------------


def test_http_without_a_token_makes_one_requires_it_and_reuses_it(
    serve: Callable[..., Running], private_state_home: Path
) -> None:
    path = made_path(private_state_home)
    srv = serve()
    token = path.read_text().strip()
    assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert httpx.get(f"{srv.base}/healthz", timeout=5).status_code == 200
    assert srv.status(None) == 401
    assert srv.status("wrong") == 401
    assert srv.status(token) == 200
    assert srv.status(token, scheme="bearer") == 200
    err = stop(srv)
    assert f"token: {path} (made now" in err
    # The printed command line works as printed: the shell reads the file.
    (line,) = [ln.strip() for ln in err.splitlines() if ln.strip().startswith("claude mcp add")]
    args = shlex.split(line)
    assert args[:7] == ["claude", "mcp", "add", "--transport", "http", "loom-fs", f"{srv.base}/mcp"]
    header = subprocess.run(["bash", "-c", f'printf %s "{args[-1]}"'], capture_output=True,
                            text=True, check=True).stdout
    assert header == f"Authorization: Bearer {token}"
    assert token not in err  # where it is, never what it is

    again = serve()
    assert path.read_text().strip() == token
    assert again.status(token) == 200 and again.status(None) == 401
    assert "(made at an earlier start" in stop(again)


@pytest.mark.parametrize("how", ["sighup", "reload_config"])
@pytest.mark.parametrize("source", ["made", "LOOMFS_TOKEN_FILE"])
def test_a_rotated_token_takes_effect_at_reload_and_the_old_one_stops_working(
    serve: Callable[..., Running], private_state_home: Path, tmp_path: Path,
    source: str, how: str,
) -> None:
    if source == "made":
        srv, path = serve(), made_path(private_state_home)
    else:
        path = tmp_path / "secrets" / "token"
        path.parent.mkdir()
        path.write_text("first-token\n")
        srv = serve(LOOMFS_TOKEN_FILE=str(path))
    old = path.read_text().strip()
    rotate(path, "second-token")
    assert srv.status(old) == 200 and srv.status("second-token") == 401  # not before a reload
    if how == "sighup":
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: srv.status("second-token") == 200, "SIGHUP did not read the token")
    else:
        assert "reloaded" in srv.call(old, "reload_config", {}).lower()
        assert srv.status("second-token") == 200
    assert srv.status(old) == 401


def test_a_reload_whose_token_file_cannot_be_used_keeps_the_token(
    serve: Callable[..., Running], private_state_home: Path
) -> None:
    srv, path = serve(), made_path(private_state_home)
    token = path.read_text().strip()
    os.chmod(path, 0o644)  # open to others: refused, never used
    said = srv.call(token, "reload_config", {})
    assert "token file: open to other users (mode 0644)" in said
    assert str(path) not in said  # a reload's message goes to the client: no host path
    assert srv.status(token) == 200


# -- no token: explicit, loopback only ---------------------------------------------


def test_no_auth_serves_without_a_token_and_says_so(
    serve: Callable[..., Running], private_state_home: Path
) -> None:
    srv = serve("--no-auth")
    assert srv.status(None) == 200
    err = stop(srv)
    assert "WARNING: --no-auth" in err and "every process" in err
    assert not made_path(private_state_home).exists()


REFUSED_STARTS = [
    # --no-auth is for loopback only, and never beside a token.
    (["--no-auth", "--host", "0.0.0.0", "--allow-remote"], {}, "loopback only"),
    (["--no-auth"], {"LOOMFS_TOKEN": "t"}, "--no-auth asks for no token"),
    (["--no-auth"], {"LOOMFS_TOKEN_FILE": "/nonexistent"}, "--no-auth asks for no token"),
    # A made token is not a token the person configured: no remote listening on it.
    (["--host", "0.0.0.0", "--allow-remote"], {}, "missing: a token"),
    ([], {"LOOMFS_TOKEN": "t", "LOOMFS_TOKEN_FILE": "/x"}, "both set"),
    ([], {"LOOMFS_TOKEN_FILE": "/nonexistent/token"}, "token file: cannot be read"),
]


def refused_start(
    config: Path, args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    """The console script's own code (`app.cli.main`) on a start it must refuse, in this
    process: a refusal returns before anything is served."""
    for name in [n for n in os.environ if n.startswith("LOOMFS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def served(*args: object) -> int:
        raise AssertionError("this start was served")

    monkeypatch.setattr(startup, "_serve_http", served)
    code = main(["--config", str(config), "--transport", "http", "--port", "0", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("args", "env", "said"), REFUSED_STARTS)
def test_starts_that_would_serve_open_or_unclear_are_refused(
    one_root_config: Callable[..., Path], private_state_home: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], env: dict[str, str], said: str,
) -> None:
    made_path(private_state_home).parent.mkdir(mode=0o700)
    made_path(private_state_home).write_text("made-earlier\n")
    os.chmod(made_path(private_state_home), 0o600)
    code, err = refused_start(one_root_config("reference"), args, env, monkeypatch, capsys)
    assert code != 0 and said in err, err
    assert "listening on" not in err


# -- the made file: the server's, or refused ----------------------------------------


def _fifo(p: Path) -> None:
    os.mkfifo(p, 0o600)


def _link(p: Path) -> None:
    (p.parent / "elsewhere").write_text("linked-token\n")
    os.chmod(p.parent / "elsewhere", 0o600)
    os.symlink(p.parent / "elsewhere", p)


def _private(content: bytes) -> Callable[[Path], None]:
    def make(p: Path) -> None:
        p.write_bytes(content)
        os.chmod(p, 0o600)
    return make


def _open_to_others(p: Path) -> None:
    p.write_text("a-token\n")
    os.chmod(p, 0o640)


BAD_MADE_FILES = [
    ("open to others", _open_to_others, "open to other users (mode 0640); chmod 600 it"),
    ("a link", _link, "cannot be read (Too many levels of symbolic links)"),
    ("a FIFO", _fifo, "not a regular file"),
    ("a folder", lambda p: p.mkdir(mode=0o700), "not a regular file"),
    ("empty", _private(b"\n"), "empty"),
    ("too big", _private(b"x" * 5000), "larger than 4096 bytes"),
    ("two words", _private(b"one two\n"), "must hold one word of printable ASCII"),
    ("not ASCII", _private("t\u00f6ken\n".encode()), "must hold one word of printable ASCII"),
]


@pytest.mark.parametrize(("make", "said"), [c[1:] for c in BAD_MADE_FILES],
                         ids=[c[0] for c in BAD_MADE_FILES])
def test_a_made_token_file_that_is_not_the_servers_is_refused_never_repaired(
    one_root_config: Callable[..., Path], private_state_home: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None], said: str,
) -> None:
    path = made_path(private_state_home)
    path.parent.mkdir(mode=0o700)
    make(path)
    before = os.lstat(path)
    code, err = refused_start(one_root_config("reference"), [], {}, monkeypatch, capsys)
    assert code == 1, err
    assert f"token file: {said}" in err and str(path) in err, err
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_the_made_token_is_never_inside_a_root(
    write_config: Callable[..., Path], private_state_home: Path, tmp_path: Path,
    serve: Callable[..., Running], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At start nothing is made when a root would hold it; a reload that would put it in
    a root is refused and changes nothing."""
    state = private_state_home
    inside = write_config(roots_toml(("top", state, "reference"), audit_log=None))
    code, err = refused_start(inside, [], {}, monkeypatch, capsys)
    assert code == 1 and "holds the place of the token file the server makes" in err
    assert not made_path(state).exists()

    (tmp_path / "docs").mkdir()
    cfg = tmp_path / "cfg" / "other.toml"
    cfg.write_text(roots_toml(("docs", tmp_path / "docs", "reference"), audit_log=None))
    srv = serve(config=cfg)
    token = made_path(state).read_text().strip()
    cfg.write_text(roots_toml(("docs", tmp_path / "docs", "reference"),
                              ("top", state, "reference"), audit_log=None))
    said = srv.call(token, "reload_config", {})
    assert "holds the place of the token file the server makes" in said and str(state) not in said
    assert "top" not in srv.call(token, "list_roots", {})


def test_the_made_tokens_place_is_protected_whichever_token_is_used(
    write_config: Callable[..., Path], private_state_home: Path, tmp_path: Path
) -> None:
    """A server on stdio (or with its own token) whose read-only root holds the state folder
    of another one: the made token there is refused by path, and by identity under
    another name."""
    path = made_path(private_state_home)
    path.parent.mkdir(mode=0o700)
    path.write_text("another-servers-token\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.link(path, ws / "innocent.txt")
    cfg = write_config(roots_toml(("top", private_state_home, "reference"),
                                  ("ws", ws, "workspace"), audit_log=None))
    reg = Registry(str(cfg), token_file=None)
    snap = reg.current
    for root, rel in (("top", "loom-fs-mcp/token"), ("ws", "innocent.txt")):
        r = snap.root(root)
        with pytest.raises(LoomError) as info:
            read_mod.read_text_file(r, rel, start=1, end=2, tail=None, cap=1000)
        assert isinstance(info.value, DeniedName), rel
        with pytest.raises(DeniedName):
            listing.stat_path(r, rel)


def test_a_configured_token_file_in_a_root_that_grants_write_is_refused(
    write_config: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Read again at every reload: an agent that could swap it would choose who connects."""
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "token").write_text("configured-token\n")
    cfg = write_config(roots_toml(("ws", ws, "workspace"), audit_log=None))
    code, err = refused_start(
        cfg, [], {"LOOMFS_TOKEN_FILE": str(ws / "secrets" / "token")}, monkeypatch, capsys
    )
    assert code == 1
    assert "grants write, delete and contains the server's token file (LOOMFS_TOKEN_FILE)" in err
