"""The views beyond the overview, each in its own module; their routes, in one list."""

from __future__ import annotations

from starlette.routing import Route

ROUTES: list[Route] = []
