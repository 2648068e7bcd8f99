"""A live server with the owner's page, and a browser-less owner for the HTTP tests.

`ui_server` starts the real app under uvicorn (`tests.live.LiveServer`) with `/ui/` on,
its owner secret known to the test (`SECRET`), so a test makes login codes as
`loom-fs-mcp --ui-link` does. `Owner` is an httpx client logged in through a code: it
keeps the cookie and reads the page's CSRF token off the page, as a browser would.
"""

from __future__ import annotations

import contextlib
import re
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
