"""The views beyond the overview, each in its own module; their routes, in one list."""

from __future__ import annotations

from starlette.routing import Route

from app.ui import activity, changes, restore, trash
from app.ui.connect import connect

ROUTES: list[Route] = [
    Route("/connect", connect),
    *activity.ROUTES,
    *changes.ROUTES,
    *restore.ROUTES,
    *trash.ROUTES,
]
