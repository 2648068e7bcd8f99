"""A live server with the owner's page, and a browser-less owner for the HTTP tests.

`ui_server` starts the real app under uvicorn (`tests.live.LiveServer`) with `/ui/` on,
its owner secret known to the test (`SECRET`), so a test makes login codes as
`loom-fs-mcp --ui-link` does. `Owner` is an httpx client logged in through a code: it
keeps the cookie and reads the page's CSRF token off the page, as a browser would.
"""

from __future__ import annotations

import contextlib
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from app.ui.context import UiContext, owner_log_of
from app.ui.owner import OwnerKeys, make_code
from tests.kit import roots_toml
from tests.live import LiveServer

SECRET = b"owner-secret-of-the-tests-0123456789"
TOKEN = "mcp-token-of-the-ui-tests"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
DEADLINE = 30.0  # for a line a started process prints


@contextlib.contextmanager
def ui_server(tmp_path: Path, *, extra: str = "", roots: tuple[Any, ...] = (),
              **kwargs: Any) -> Iterator[LiveServer]:
    """A live server of one workspace root `ws` (plus `roots`), `/ui/` served."""
    ws = tmp_path / "ws"
    ws.mkdir()
    config = tmp_path / "roots.toml"
    specs = (("ws", ws, "workspace"), *roots)
    config.write_text(roots_toml(*specs, audit_log=tmp_path / "audit.log", extra=extra))
    def page(srv: LiveServer) -> UiContext:
        return UiContext(registry=srv.registry, keys=OwnerKeys(SECRET), mcp_url=srv.url,
                         owner_log=owner_log_of(srv.registry), server_token=TOKEN)

    srv = LiveServer(config, token=TOKEN, ui=page, **kwargs)
    srv.owners = []  # type: ignore[attr-defined]
    srv.start()
    try:
        yield srv
    finally:
        for owner in srv.owners:  # type: ignore[attr-defined]
            owner.close()
        srv.stop()


def code() -> str:
    return make_code(SECRET)


class Owner:
    """The person, logged in to `srv`'s page through a fresh code."""

    def __init__(self, srv: LiveServer) -> None:
        self.srv = srv
        self.http = httpx.Client(base_url=srv.base, timeout=30, follow_redirects=False)
        r = self.http.get("/ui/login", params={"code": code()})
        assert r.status_code == 303, r.text
        self.origin = srv.base
        getattr(srv, "owners", []).append(self)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.http.get(path, **kw)

    def csrf(self, path: str = "/ui/") -> str:
        r = self.get(path)
        found = CSRF.search(r.text)
        assert found, r.text
        return found.group(1)

    def post(self, path: str, data: dict[str, str], *, csrf: str | None = None,
             origin: str | None = "same") -> httpx.Response:
        headers = {} if origin is None else {
            "Origin": self.origin if origin == "same" else origin}
        fields = {"csrf": self.csrf() if csrf is None else csrf, **data}
        if csrf == "":
            fields.pop("csrf")
        return self.http.post(path, data=fields, headers=headers)

    def close(self) -> None:
        self.http.close()


class Spawned:
    """A running console script whose stderr lines are read as they come."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([EXE, *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            found = pattern.search(line)
            if found:
                return found
        raise AssertionError(f"not printed in time: {pattern.pattern}\n{''.join(self.seen)}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
