"""The in-process root registry: one immutable snapshot, swapped atomically.

A call takes `registry.current` once and works on that snapshot to the end,
so a reload never changes the ground under a call in flight. `reload()`
builds a complete new snapshot (config validated, every root handle opened)
before the swap; any failure raises and leaves the old snapshot in place.
Root handles close when the last snapshot holding them is gone.

The registry also knows the server's own files (`Protected`): the config, the
token file (`LOOMFS_TOKEN_FILE`) and every audit log written so far, which every
root denies by path and by identity, across reloads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app import config as config_mod
from app.audit import AuditLog
from app.config_checks import contains
from app.errors import ConfigError, UnknownRoot
from app.fs.history.gitdir import has_repository
from app.security.deny import DenyRules
from app.security.policy import PERMISSION_ORDER
from app.security.protected import Protected
from app.security.resolve import SecureRoot

_FROM_ENV = object()


@dataclass(frozen=True, eq=False)
class Snapshot:
    config: config_mod.LoadedConfig
    roots: dict[str, SecureRoot]
    audit: AuditLog | None
    generation: int

    @property
    def limits(self) -> config_mod.Config:
        return self.config.model

    @property
    def default_root(self) -> str | None:
        return self.config.default_root

    def root(self, name: str | None) -> SecureRoot:
        if name is None or name == "":
            if self.default_root is None:
                raise UnknownRoot(
                    "no root given and no default_root configured; pass root= one of: "
                    + ", ".join(self.roots)
                )
            name = self.default_root
        try:
            return self.roots[name]
        except (KeyError, TypeError):
            raise UnknownRoot(
                f"unknown root '{name}'; known roots: {', '.join(self.roots)}"
            ) from None

    def granted(self) -> frozenset[str]:
        """Every permission some root grants: it decides which tools exist."""
        return frozenset(p for r in self.roots.values() for p in r.permissions)

    def surface_key(self) -> tuple[str, ...]:
        granted = self.granted()
        extras: tuple[str, ...] = ("search_fetch",) if self.limits.search_fetch_tools else ()
        if any("read" in r.permissions and has_repository(r) for r in self.roots.values()):
            extras += ("git",)  # the history tools (app.tools.history)
        return tuple(p for p in PERMISSION_ORDER if p in granted) + extras


def build(
    loaded: config_mod.LoadedConfig,
    audit: AuditLog | None,
    generation: int,
    *,
    protected_files: Sequence[str] = (),
    identities: Protected | None = None,
) -> Snapshot:
    roots: dict[str, SecureRoot] = {}
    protected = tuple(dict.fromkeys((*loaded.protected_files, *protected_files)))
    for r in loaded.roots:
        inside = [
            os.path.relpath(f, r.real).replace(os.sep, "/")
            for f in protected
            if contains(r.real, f) and f != r.real
        ]
        rules = DenyRules(extra=r.deny, allow=r.allow, protected=inside, identities=identities)
        try:
            roots[r.name] = SecureRoot(
                name=r.name,
                role=r.role,
                permissions=r.permissions,
                real=r.real,
                rules=rules,
                max_read_bytes=r.max_read_bytes,
                audit=audit,
            )
        except OSError as exc:
            raise ConfigError(
                f"invalid config: root '{r.name}': cannot be opened ({exc.strerror})"
            ) from None
    return Snapshot(loaded, roots, audit, generation)


class Registry:
    def __init__(
        self, config_path: str, *, audit: bool = True, token_file: str | object | None = _FROM_ENV
    ) -> None:
        self.config_path = config_path
        self._with_audit = audit
        if token_file is _FROM_ENV:
            token_file = os.environ.get("LOOMFS_TOKEN_FILE") or None
        self.token_file = os.path.realpath(token_file) if isinstance(token_file, str) else None
        self.protected = Protected()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Snapshot, Snapshot], None]] = []
        self._current = self._load(None, 1)

    @property
    def current(self) -> Snapshot:
        return self._current

    def on_swap(self, listener: Callable[[Snapshot, Snapshot], None]) -> None:
        self._listeners.append(listener)

    def _load(self, old: Snapshot | None, generation: int) -> Snapshot:
        loaded = config_mod.load(self.config_path)
        m = loaded.model
        key = (loaded.audit_log, m.audit_log_max_bytes, m.audit_log_backups)
        # The file at the config path is the config, even when this reload refuses it.
        self.protected.set_fixed(
            [loaded.source, self.token_file, old.config.source if old is not None else None]
        )
        if self._with_audit:
            self.protected.note_log_path(loaded.audit_log, m.audit_log_backups)
        # The links on the way to the config too (in a read-only root: it cannot be swapped,
        # but nor need the agent see the way to the file that defines its roots).
        own = (self.token_file, *loaded.source_links, *self.protected.log_paths())
        audit = old.audit if old is not None else None
        fresh = None
        if self._with_audit and audit is None:
            try:
                fresh = audit = AuditLog(*key, on_open=self.protected.add_log)
            except OSError as exc:
                raise ConfigError(
                    f"invalid config: audit_log: cannot be opened ({exc.strerror})"
                ) from None
        try:
            snapshot = build(
                loaded, audit, generation,
                protected_files=[f for f in own if f], identities=self.protected,
            )
            if audit is not None and audit.key != key:
                # Last, so a failure here leaves everything as it was.
                try:
                    audit.reconfigure(*key)
                except OSError as exc:
                    raise ConfigError(
                        f"invalid config: audit_log: cannot be opened ({exc.strerror})"
                    ) from None
            return snapshot
        except BaseException:
            if fresh is not None:
                fresh.close()
            raise

    def reload(self) -> Snapshot:
        """Validate and swap in a new snapshot, or raise and change nothing."""
        with self._lock:
            old = self._current
            new = self._load(old, old.generation + 1)
            self._current = new
        for listener in list(self._listeners):
            listener(old, new)
        return new
