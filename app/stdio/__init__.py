"""stdio: the SDK's transport on asyncio pipes (`pipes`), with back-pressure (`intake`).

`run_stdio` serves one session until stdin closes. Every line from the client
is answered if it is not a message the server can take, and a batch is taken
as its protocol revision says (`every_line.Lines`); every message passes
`intake.Intake` before the server sees it; on pipes and on the SDK's own
threaded path alike (stdin a regular file or a terminal).
"""

from __future__ import annotations

from typing import Any

from app import sdk
from app.stdio.every_line import Lines
from app.stdio.intake import Answers, Intake, Requests
from app.stdio.pipes import line_limit, pipes


async def run_stdio(server: Any) -> None:
    """Serve `server` (an MCPServer) over stdio until stdin closes."""
    from mcp.server.stdio import stdio_server

    async with pipes(lambda: line_limit(server)) as ends:
        stdin, stdout = ends if ends is not None else (None, None)
        async with stdio_server(stdin, stdout) as (read, write):  # type: ignore[arg-type]
            intake = Intake()
            lines = Lines(write, intake, stdin.seen if stdin is not None else None)
            await sdk.run_session(
                server, Requests(read, intake, lines.take), Answers(write, intake, lines.keep)
            )
