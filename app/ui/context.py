"""What the owner's page reads: one `UiContext` per process that serves it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.registry import Registry
from app.ui.owner import OwnerKeys
from app.ui.sessions import OwnerSessions

UI_AUDIT = "ui-audit.log"  # beside the audit log: the owner's lines of a `--ui` process

OwnerLog = Callable[[str, str, str, str, "str | None"], None]


def ui_audit_path(audit_log: str) -> str:
    return os.path.join(os.path.dirname(audit_log), UI_AUDIT)


@dataclass
class UiContext:
    registry: Registry
    keys: OwnerKeys
    sessions: OwnerSessions = field(default_factory=OwnerSessions)
    # The MCP sessions' policy of the serving process (`app.http.sessions.SessionPolicy`);
    # None in a `--ui` process, which serves no client.
    mcp_sessions: Any = None
    # Where clients connect, for the connection snippets ("http://127.0.0.1:8000/mcp").
    mcp_url: str | None = None
    # The owner's lines: the serving process's audit log, or `ui-audit.log` under `--ui`.
    owner_log: OwnerLog | None = None
    # LOOMFS_TOKEN's value, for the snippets, when the token is not read from a file.
    server_token: str | None = None

    @property
    def standalone(self) -> bool:
        return self.mcp_sessions is None


@contextlib.contextmanager
def acting_as_owner() -> Iterator[None]:
    """Inside, the audit lines and trash records made are `client=owner` (no peer, no
    `[[clients]]` client)."""
    from app.audit import current_client, current_grant

    peer, grant = current_client.set("owner"), current_grant.set(None)
    try:
        yield
    finally:
        current_client.reset(peer)
        current_grant.reset(grant)


def _as_owner(write: Callable[[], object]) -> None:
    """`write()` an audit line as `client=owner`."""
    with acting_as_owner():
        write()


def owner_log_of(registry: Registry) -> OwnerLog:
    """The owner's lines in the serving process's audit log, as `client=owner`."""

    def log(decision: str, root: str, rel: str, op: str, rule: str | None) -> None:
        audit = registry.current.audit
        if audit is not None:
            _as_owner(lambda: audit(decision, root, rel, op, rule))

    return log


def ui_audit_log(registry: Registry) -> OwnerLog:
    """A `--ui` process's owner lines, in `ui-audit.log` beside the audit log (two
    processes never write one audit file: each rotates its own)."""
    from app.audit import AuditLog

    loaded = registry.current.config
    audit = AuditLog(ui_audit_path(loaded.audit_log), loaded.model.audit_log_max_bytes,
                     loaded.model.audit_log_backups)

    def log(decision: str, root: str, rel: str, op: str, rule: str | None) -> None:
        _as_owner(lambda: audit(decision, root, rel, op, rule))

    return log
