"""stdio: the SDK's transport on asyncio pipes (`pipes`), with back-pressure (`intake`).

`run_stdio` serves one session until stdin closes. Every message from the
client passes `intake.Intake` before the server sees it, on pipes and on the
SDK's own threaded path alike (stdin a regular file or a terminal).
"""

from __future__ import annotations

from typing import Any

from app import sdk
from app.stdio.intake import Answers, Intake, Requests
from app.stdio.pipes import line_limit, pipes


async def run_stdio(server: Any) -> None:
    """Serve `server` (an MCPServer) over stdio until stdin closes."""
    from mcp.server.stdio import stdio_server

    async with pipes(lambda: line_limit(server)) as ends:
        stdin, stdout = ends if ends is not None else (None, None)
        async with stdio_server(stdin, stdout) as (read, write):  # type: ignore[arg-type]
            intake = Intake()
            await sdk.run_session(server, Requests(read, intake), Answers(write, intake))
