"""Roots on real disk for the security tests, resolved by both engines.

`engine` runs a test twice where the kernel allows it: once through
`openat2(RESOLVE_BENEATH)` and once through the component walk that replaces
it on kernels (or sandboxes) without it. The walk is forced on the instance,
because `openat2.available()` is probed once per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.security import Root
from app.security import openat2 as openat2_mod
from tests.kit import secure_root

ENGINES = ["openat2", "walk"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_mod.available():
        pytest.skip("openat2 is not available on this kernel (the walk engine still runs)")
    return str(request.param)


def make_root(path: Path, *, engine: str = "walk", **kwargs: Any) -> Root:
    """`tests.kit.secure_root`, through the walk engine unless `engine` says otherwise."""
    return secure_root(path, engine=engine, **kwargs)
