"""Roots on real disk for the security tests, resolved by both engines.

`engine` runs a test twice where the kernel allows it: once through
`openat2(RESOLVE_BENEATH)` and once through the component walk that replaces
it on kernels (or sandboxes) without it. The walk is forced on the instance,
because `openat2.available()` is probed once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from app.security import DenyRules, SecureRoot
from app.security import openat2 as openat2_mod

ENGINES = ["openat2", "walk"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_mod.available():
        pytest.skip("openat2 is not available on this kernel (the walk engine still runs)")
    return str(request.param)


def make_root(
    path: Path,
    *,
    engine: str = "walk",
    name: str = "r",
    role: str = "workspace",
    permissions: Sequence[str] | None = None,
    deny: Sequence[str] = (),
    allow: Sequence[str] = (),
    audit: Callable[..., None] | None = None,
) -> SecureRoot:
    ceilings = {
        "reference": ["read"],
        "sourcecode": ["read", "write"],
        "workspace": ["read", "write", "delete"],
    }
    root = SecureRoot(
        name=name,
        role=role,
        permissions=permissions if permissions is not None else ceilings[role],
        real=str(path.resolve()),
        rules=DenyRules(extra=deny, allow=allow),
        max_read_bytes=1 << 20,
        audit=audit,
    )
    root._use_openat2 = engine == "openat2"
    return root
