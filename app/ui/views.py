"""The views beyond the overview, each in its own module; their routes, in one list."""

from __future__ import annotations

from starlette.routing import Route

ROUTES: list[Route] = []

# --- activity (app/ui/activity.py): /ui/activity and its polling, /ui/activity/rows ---
from app.ui import activity  # noqa: E402

ROUTES += activity.ROUTES
# --- end activity ---
