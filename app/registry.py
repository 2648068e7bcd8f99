"""The in-process root registry: one immutable snapshot, swapped atomically.

A call takes `registry.current` once and works on that snapshot to the end,
so a reload never changes the ground under a call in flight. `reload()`
builds a complete new snapshot (config validated, every root handle opened)
before the swap; any failure raises and leaves the old snapshot in place.
Root handles close when the last snapshot holding them is gone.

The registry also knows the server's own files (`Protected`): every config file
loaded, the token file (configured or made) and every audit log written so far,
which every root denies by path and by identity, across reloads, for as long as
each file has a link. The token file is read at every load: `token` holds what
/mcp requires, replaced only when a reload succeeds.

With `[[clients]]` each client's token is read (or made) at every load too, into the
snapshot (`Snapshot.tokens`), and a call runs on the calling client's view of the
snapshot (`Snapshot.view`): the roots of its grant, each narrowed to the grant's
permissions, as if the other roots did not exist. The view is made once per snapshot
and client, from the same snapshot the call took.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app import config as config_mod
from app.audit import AuditLog
from app.budget import Budget
from app.config_checks import (
    check_client_token_file,
    check_token_file,
    contains,
    resolve_links,
)
from app.errors import ConfigError, UnknownRoot
from app.fs.history.gitdir import has_repository
from app.security.deny import DenyRules
from app.security.policy import PERMISSION_ORDER
from app.security.protected import Protected
from app.security.resolve import Root
from app.security.tokenfile import (
    ClientTokens,
    TokenFile,
    TokenHolder,
    client_token_path,
    default_token_path,
    ensure_token,
    owner_secret_path,
    read_token,
)

T = TypeVar("T")
_FROM_ENV = object()
MAX_HELD = 256  # the server's own files held open at once (see app.security.protected)


@dataclass(frozen=True, eq=False)
class Snapshot:
    config: config_mod.LoadedConfig
    roots: dict[str, Root]
    audit: AuditLog | None
    generation: int
    # The byte budget, one for the registry's life: every snapshot shares it, so a reload
    # carries the buckets' levels (`Budget.apply`). A snapshot built alone has none.
    budget: Budget = field(default_factory=Budget)
    # What follows from this snapshot alone, computed at its first use (`once`).
    _once: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    # The client this snapshot is the view of (`view`); None: every root, as configured.
    client: str | None = None
    # Which client a token is (`[[clients]]` over HTTP); None: no client tokens were read.
    tokens: ClientTokens | None = None

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once for this snapshot under `key`: for work that depends
        only on the config and the roots' handles (an index's identity), not redone per
        call. Two threads asking at once may both compute it; one value is kept."""
        try:
            value: T = self._once[key]
        except KeyError:
            value = self._once.setdefault(key, make())
        return value

    @property
    def limits(self) -> config_mod.Config:
        return self.config.model

    @property
    def default_root(self) -> str | None:
        """The config's; in a client's view, the config's if granted, else the grant's only root."""
        named = self.config.default_root
        if self.client is None or named in self.roots:
            return named
        return next(iter(self.roots)) if len(self.roots) == 1 else None

    @property
    def has_clients(self) -> bool:
        return bool(self.config.clients)

    def view(self, client: str | None) -> Snapshot:
        """What `client` sees of this snapshot, as if the other roots did not exist: the
        roots of its grant, each with the root's permissions intersected with the grant's
        (`Root.narrowed`). A name this snapshot has no client of sees no root at all (a
        client a reload removed). None: this snapshot itself. Made once per client."""
        if client is None or client == self.client:
            return self
        if self.client is not None:
            raise ValueError("a client's view has no view of another client")
        return self.once(("client view", client), lambda: self._narrow(client))

    def _narrow(self, client: str) -> Snapshot:
        grant = next((c for c in self.config.clients if c.name == client), None)
        roots = {} if grant is None else {
            name: self.roots[name].narrowed(perms)
            for name, perms in grant.grants if name in self.roots
        }
        return dataclasses.replace(self, roots=roots, client=client, _once={})

    def root(self, name: str | None) -> Root:
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
    budget: Budget | None = None,
    tokens: ClientTokens | None = None,
) -> Snapshot:
    roots: dict[str, Root] = {}
    protected = tuple(dict.fromkeys((*loaded.protected_files, *protected_files)))
    for r in loaded.roots:
        inside = [
            os.path.relpath(f, r.real).replace(os.sep, "/")
            for f in protected
            if contains(r.real, f) and f != r.real
        ]
        rules = DenyRules(extra=r.deny, allow=r.allow, protected=inside, identities=identities)
        try:
            roots[r.name] = Root(
                name=r.name,
                role=r.role,
                permissions=r.permissions,
                real=r.real,
                rules=rules,
                max_read_bytes=r.max_read_bytes,
                audit=audit,
                recovery=r.recovery,
            )
        except OSError as exc:
            raise ConfigError(
                f"invalid config: root '{r.name}': cannot be opened ({exc.strerror})"
            ) from None
    return Snapshot(loaded, roots, audit, generation, budget or Budget(), tokens=tokens)


class Registry:
    def __init__(
        self,
        config_path: str,
        *,
        audit: bool = True,
        token_file: TokenFile | str | object | None = _FROM_ENV,
        budget: Budget | None = None,
        client_tokens: bool = False,
    ) -> None:
        """`token_file`: the file whose token /mcp requires, read at every load (a path, or
        a `TokenFile`); by default none is read and `LOOMFS_TOKEN_FILE`, if set, is only
        protected. `client_tokens`: read (or make, in the state folder) the token of each
        `[[clients]]` table at every load, for the HTTP guard (`Snapshot.tokens`); without
        it they are protected only (stdio)."""
        self.config_path = config_path
        self._with_audit = audit
        # Files that hold a token this server does not read (stdio, or a test): protected all
        # the same. Where a token is made (by this server or another one of this user's) is
        # always among them.
        others = [default_token_path(), owner_secret_path()]  # the owner's page's too
        if token_file is _FROM_ENV:
            others.append(os.environ.get("LOOMFS_TOKEN_FILE") or "")
        elif isinstance(token_file, str):
            token_file = TokenFile(os.path.abspath(token_file))
        self.token_file = token_file if isinstance(token_file, TokenFile) else None
        self._other_tokens = [os.path.abspath(p) for p in others if p]
        self.protected = Protected()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Snapshot, Snapshot], None]] = []
        self.budget = budget or Budget()  # tests pass one on their own clock
        self.client_tokens = client_tokens
        # The client stdio serves (`--client NAME`); None: every root.
        self.serves_client: str | None = None
        self.made_now: set[str] = set()  # clients whose token the last load made
        self._current, token = self._load(None, 1)
        # The token /mcp requires, read again from its file at every reload (None: no file).
        self.token = TokenHolder(token) if token is not None else None

    @property
    def current(self) -> Snapshot:
        self.protected.sweep_due()
        return self._current

    def on_swap(self, listener: Callable[[Snapshot, Snapshot], None]) -> None:
        self._listeners.append(listener)

    def _audit_opened(self, fd: int) -> None:
        self.protected.hold_fd(fd)
        self.protected.sweep()  # a rotation has just removed the oldest backup

    def _read_token(self, loaded: config_mod.LoadedConfig) -> tuple[str | None, list[str]]:
        """The token in the token file (None without one), and the paths that lead to it."""
        tf = self.token_file
        if tf is None:
            return None, []
        try:
            real, links = resolve_links(tf.path)
        except ConfigError as exc:
            raise ConfigError("token file: " + exc.message.removeprefix("config: ")) from None
        check_token_file(list(loaded.roots), real, links, tf.made)
        return read_token(tf, hold=self.protected.hold_fd), [tf.path, real, *links]

    @staticmethod
    def client_token_file(client: config_mod.ResolvedClient) -> TokenFile:
        """The file of `client`'s token: its token_file, or the one made for it."""
        if client.token_file is not None:
            return TokenFile(client.token_file)
        return TokenFile(client_token_path(client.name), made=True)

    def _client_tokens(
        self, loaded: config_mod.LoadedConfig, old: Snapshot | None
    ) -> tuple[ClientTokens | None, list[str]]:
        """Each client's token (made first where the server makes it) and the paths that
        lead to them; read only when this registry serves client tokens (HTTP)."""
        if old is not None and self.client_tokens and old.has_clients != bool(loaded.clients):
            raise ConfigError(
                "invalid config: clients: [[clients]] cannot be added to or removed from a "
                "running server (it decides which tokens exist); restart it"
            )
        paths: list[str] = []
        tokens: dict[str, str] = {}
        made_now: set[str] = set()
        for c in loaded.clients:
            tf = self.client_token_file(c)
            where = f"invalid config: client '{c.name}'"
            try:
                real, links = resolve_links(tf.path)
            except ConfigError as exc:
                raise ConfigError(
                    f"{where}: token_file: " + exc.message.removeprefix("config: ")
                ) from None
            check_client_token_file(c.name, list(loaded.roots), real, links, tf.made)
            paths += [tf.path, real, *links]
            if not self.client_tokens:
                continue
            if tf.made:
                try:
                    if ensure_token(tf.path):
                        made_now.add(c.name)
                except OSError as exc:
                    raise ConfigError(
                        f"{where}: its token cannot be made ({exc.strerror})"
                    ) from None
            try:
                tokens[c.name] = read_token(tf, hold=self.protected.hold_fd)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc.message}") from None
        if not self.client_tokens or not loaded.clients:
            return None, paths
        by_token: dict[str, str] = {}
        for name, token in tokens.items():
            if token in by_token:
                raise ConfigError(
                    f"invalid config: client '{name}': token is the same as client "
                    f"'{by_token[token]}''s; each client needs its own"
                )
            by_token[token] = name
        self.made_now = made_now
        return ClientTokens(tokens), paths

    def _load(self, old: Snapshot | None, generation: int) -> tuple[Snapshot, str | None]:
        self.protected.sweep()
        # The file at the config path is the config, even when this load refuses it.
        loaded = config_mod.load(self.config_path, hold=self.protected.hold_fd)
        token, token_paths = self._read_token(loaded)
        tokens, client_paths = self._client_tokens(loaded, old)
        try:
            self.protected.hold_paths([*self._other_tokens, *client_paths])
        except OSError as exc:
            raise ConfigError(f"token file: cannot be held ({exc.strerror})") from None
        if len(self.protected) > MAX_HELD:
            raise ConfigError(
                f"the server already holds {len(self.protected)} of its own old files (config, "
                "token, audit log) that still have links elsewhere; restart it"
            )
        m = loaded.model
        key = (loaded.audit_log, m.audit_log_max_bytes, m.audit_log_backups)
        if self._with_audit:
            self.protected.note_log_path(loaded.audit_log, m.audit_log_backups)
        # The links on the way to the config too (in a read-only root: it cannot be swapped,
        # but nor need the agent see the way to the file that defines its roots).
        own = (
            *token_paths, *client_paths, *self._other_tokens,
            *map(os.path.realpath, self._other_tokens),
            *loaded.source_links, *self.protected.log_paths(),
            old.config.source if old is not None else None,
        )
        audit = old.audit if old is not None else None
        fresh = None
        if self._with_audit and audit is None:
            try:
                fresh = audit = AuditLog(*key, on_open=self._audit_opened)
            except OSError as exc:
                raise ConfigError(
                    f"invalid config: audit_log: cannot be opened ({exc.strerror})"
                ) from None
        try:
            snapshot = build(
                loaded, audit, generation,
                protected_files=[f for f in own if f], identities=self.protected,
                budget=self.budget, tokens=tokens,
            )
            if audit is not None and audit.key != key:
                # Last, so a failure here leaves everything as it was.
                try:
                    audit.reconfigure(*key)
                except OSError as exc:
                    raise ConfigError(
                        f"invalid config: audit_log: cannot be opened ({exc.strerror})"
                    ) from None
            # Last of all (it cannot fail): the buckets take the new settings only when the
            # new snapshot is sure to be swapped in.
            server = loaded.model.budget
            self.budget.apply(
                server.rate() if server else None,
                {r.name: r.budget for r in loaded.roots if r.budget is not None},
                {c.name: c.budget for c in loaded.clients if c.budget is not None},
            )
            return snapshot, token
        except BaseException:
            if fresh is not None:
                fresh.close()
            raise

    def reload(self) -> Snapshot:
        """Validate and swap in a new snapshot (and the token its file holds now), or raise
        and change nothing."""
        with self._lock:
            old = self._current
            new, token = self._load(old, old.generation + 1)
            self._current = new
            if self.token is not None and token is not None:
                self.token.replace(token)
        for listener in list(self._listeners):
            listener(old, new)
        return new
