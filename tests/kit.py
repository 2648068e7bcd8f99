"""Builders shared by the tests: one way to make each kind of fixture."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from app.security import DenyRules, SecureRoot

CEILINGS = {
    "reference": ["read"],
    "sourcecode": ["read", "write"],
    "workspace": ["read", "write", "delete"],
}


def secure_root(
    path: Path | str,
    *,
    name: str = "r",
    role: str = "workspace",
    permissions: Sequence[str] | None = None,
    deny: Sequence[str] = (),
    allow: Sequence[str] = (),
    max_read_bytes: int = 1 << 20,
    audit: Callable[..., None] | None = None,
    engine: str | None = None,
) -> SecureRoot:
    """A `SecureRoot` on `path` without a config: the role's ceiling unless `permissions`.

    `engine` "openat2" or "walk" forces the resolution engine on this instance
    (`openat2.available()` is probed once per process); None keeps the probe's choice.
    """
    root = SecureRoot(
        name=name,
        role=role,
        permissions=list(permissions) if permissions is not None else CEILINGS[role],
        real=os.path.realpath(path),
        rules=DenyRules(extra=deny, allow=allow),
        max_read_bytes=max_read_bytes,
        audit=audit,
    )
    if engine is not None:
        root._use_openat2 = engine == "openat2"
    return root


def roots_toml(*roots: tuple[str, Path | str, str], audit_log: Path | str, extra: str = "") -> str:
    """A TOML config: `audit_log`, the `extra` top-level lines, then one `[[roots]]` table
    per (name, path, role)."""
    lines = [f'audit_log = "{audit_log}"', extra]
    for name, path, role in roots:
        lines += ["[[roots]]", f'name = "{name}"', f'path = "{path}"', f'role = "{role}"']
    return "\n".join(lines) + "\n"
