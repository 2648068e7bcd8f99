"""The HTTP transport: a Starlette app serving /mcp (the SDK's Streamable HTTP) and /healthz.

- `factory.py`: `build_app`, the app and its guard stack, outermost first:
  `HostOriginGuard`, `BearerAuth` (`guards.py`), `BodyLimit` (`body.py`: the body read
  once, bounded), `TrimMcpHeaders` (`guards.py`), `CancelOnDisconnect` (`disconnect.py`),
  `JsonWhenNothingStreams` (`response_mode.py`).
- `limits.py`: the limits uvicorn and the SDK lack (head size, read deadlines,
  connections, sessions).

Imported only when serving HTTP (`app.startup`): stdio never loads Starlette.
"""

from app.http.factory import build_app

__all__ = ["build_app"]
