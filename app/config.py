"""The roots file: pydantic models, loading (TOML or JSON) and validation.

Every inconsistency stops the load with a message naming the field and the
root; there is no degraded mode. `validate` runs the checks against the disk
(`app.config_checks`, one function per rule) in a fixed order. Messages never
quote a configured host path, because `reload_config` sends them to the client.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app import hostfiles
from app.budget import Rate
from app.config_checks import (
    check_allow,
    check_budget,
    check_client_budget,
    check_client_name,
    check_client_roots,
    check_name,
    check_overlaps,
    check_own_files,
    default_root_of,
    expand,
    resolve_links,
    root_path,
    root_permissions,
)
from app.errors import ConfigError
from app.messages import sentence
from app.security.policy import Recovery
from app.security.statedir import state_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Role = Literal["reference", "sourcecode", "workspace"]
Permission = Literal["read", "write", "delete"]
Positive = Annotated[int, Field(strict=True, gt=0)]

# A config file is a few kilobytes; past this it is refused, read no further (a path
# swapped for something endless, at a reload, must not hold the server).
MAX_CONFIG_BYTES = 1 << 20

DEFAULT_MAX_READ = {"reference": 1 << 20, "sourcecode": 2 << 20, "workspace": 8 << 20}

SENSITIVE_REFUSAL = (
    "allow_sensitive_files: true is refused: the built-in deny list cannot be switched "
    "off by a config file (a guarantee a config file can switch off is no guarantee). "
    'Re-open precisely the names you need with a root\'s `allow` list, e.g. allow = [".env"]'
)


class BudgetConfig(BaseModel):
    """`[budget]`, or a root's `budget = {...}`: a token bucket of bytes (app.budget)."""

    model_config = ConfigDict(extra="forbid")

    bytes_per_minute: Positive
    burst_bytes: Positive

    def rate(self) -> Rate:
        return Rate(self.bytes_per_minute, self.burst_bytes)


class RootConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: str
    role: Role
    permissions: list[Permission] | None = None
    deny: list[str] = []
    allow: list[str] = []
    max_read_bytes: Positive | None = None
    budget: BudgetConfig | None = None  # tighter than the server's, for this root
    keep_versions: bool | None = None  # default: on for workspace and sourcecode roots
    version_max_bytes: Positive = 64 << 20
    trash_max_bytes: Positive = 1 << 30
    trash_max_items: Positive = 10_000


class ClientConfig(BaseModel):
    """`[[clients]]`: one HTTP client, its own token and its grant (docs/clients.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    roots: dict[str, list[Permission]]  # root name -> permissions within the root's
    token_file: str | None = None  # else made at first start: state folder, tokens/<name>
    budget: BudgetConfig | None = None  # tighter than the server's, paid on top of it


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default_root: str | None = None
    audit_log: str | None = None
    audit_log_max_bytes: Positive = 8 << 20
    audit_log_backups: Positive = 3
    max_search_results: Positive = 200
    max_search_bytes: Positive = 64 << 20
    max_search_file_bytes: Positive | None = None
    max_output_chars: Positive = 65536
    max_read_bytes: Positive | None = None  # default for every root (local-readonly-mcp)
    deny: list[str] = []
    allow: list[str] = []  # re-opens base names in every root (local-readonly-mcp)
    search_fetch_tools: bool = False
    search_index: bool = False  # a trigram index per root for search_text (configuration.md)
    text_format: Literal["text", "json"] = "text"  # the tool result's text item (docs/tools.md)
    public_base_url: str | None = None
    budget: BudgetConfig | None = None  # no byte budget unless set
    allow_sensitive_files: Literal[False] = False
    roots: list[RootConfig]
    clients: list[ClientConfig] = []

    @model_validator(mode="before")
    @classmethod
    def _compat(cls, data: Any) -> Any:
        """Accept the local-readonly-mcp JSON shape as is."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("allow_sensitive_files", False) is not False:
            raise ValueError(SENSITIVE_REFUSAL)
        data.pop("allow_sensitive_files", None)
        _rename_list(data, "deny_patterns", "deny")
        _rename_list(data, "allow_patterns", "allow")
        roots = data.get("roots")
        if isinstance(roots, dict):
            data["roots"] = [_compat_root(alias, spec) for alias, spec in roots.items()]
        elif isinstance(roots, list):
            data["roots"] = [_drop_sensitive(spec) for spec in roots]
        return data


def _rename_list(data: dict[str, Any], old: str, new: str) -> None:
    if old in data:
        value = data.pop(old)
        if isinstance(value, list) and isinstance(data.get(new, []), list):
            data[new] = [*data.get(new, []), *value]
        else:
            data[new] = value


def _drop_sensitive(spec: Any) -> Any:
    """`allow_sensitive_files = false` is what we always do; `true` is refused, naming the root."""
    if not isinstance(spec, dict) or "allow_sensitive_files" not in spec:
        return spec
    spec = dict(spec)
    if spec.pop("allow_sensitive_files") is not False:
        raise ValueError(f"root '{spec.get('name', '?')}': {SENSITIVE_REFUSAL}")
    return spec


def _compat_root(alias: str, spec: Any) -> Any:
    """One root of either shape; `allow_sensitive_files` is refused or dropped here."""
    if isinstance(spec, str):
        return {"name": alias, "path": spec, "role": "reference"}
    if not isinstance(spec, dict):
        return spec
    spec = _drop_sensitive({"name": alias, "role": "reference", **spec})
    _rename_list(spec, "deny_patterns", "deny")
    _rename_list(spec, "allow_patterns", "allow")
    return spec


@dataclass(frozen=True)
class ResolvedRoot:
    name: str
    role: str
    permissions: tuple[str, ...]
    real: str  # host path, never sent to a client
    deny: tuple[str, ...]
    allow: tuple[str, ...]
    max_read_bytes: int
    recovery: Recovery
    budget: Rate | None = None  # the root's own bucket, if it has one


@dataclass(frozen=True)
class ResolvedClient:
    """One `[[clients]]` table once checked: its grant, in the config's root order."""

    name: str
    grants: tuple[tuple[str, tuple[str, ...]], ...]  # (root, permissions in PERMISSION_ORDER)
    token_file: str | None  # the configured token file, expanded (host path); None: made
    budget: Rate | None = None

    def grant(self, root: str) -> tuple[str, ...] | None:
        """The permissions this client holds on `root`, or None when it is not granted."""
        return next((perms for name, perms in self.grants if name == root), None)


@dataclass(frozen=True)
class LoadedConfig:
    source: str  # real path of the config file
    model: Config
    roots: tuple[ResolvedRoot, ...]
    audit_log: str
    default_root: str | None
    source_links: tuple[str, ...] = ()  # where the links on the config's path sit
    clients: tuple[ResolvedClient, ...] = ()  # `[[clients]]`; empty: one token opens all

    @property
    def protected_files(self) -> tuple[str, ...]:
        """Files the agent must never reach, wherever they are: config and audit log."""
        logs = [self.audit_log] + [
            f"{self.audit_log}.{i}" for i in range(1, self.model.audit_log_backups + 1)
        ]
        # The owner's lines of a `--ui` process (`app.ui.context.UI_AUDIT`), beside the log.
        logs.append(os.path.join(os.path.dirname(self.audit_log), "ui-audit.log"))
        return (self.source, *logs)


def default_audit_log() -> str:
    return os.path.join(state_dir(), "audit.log")


Hold = Callable[[int], object]


def read_file(path: str | os.PathLike[str], hold: Hold | None = None) -> dict[str, Any]:
    """The file's data; `hold` is given the descriptor of the very file read (the
    server protects its config by that identity, even when this load refuses it)."""
    p = Path(path)
    try:
        text = hostfiles.read_small(str(p), MAX_CONFIG_BYTES, hold)
    except FileNotFoundError:
        raise ConfigError("config: file not found") from None
    except OSError as exc:
        raise ConfigError(f"config: cannot be read ({exc.strerror})") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if p.suffix.lower() == ".json" else "TOML"
        raise ConfigError(f"config: not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("config: the top level must be a table/object")
    return data


def _format_validation(exc: ValidationError, data: dict[str, Any]) -> str:
    lines = []
    roots = data.get("roots")
    clients = data.get("clients")
    for err in exc.errors():
        loc = list(err["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] == "clients" and isinstance(loc[1], int):
            name = "?"
            if isinstance(clients, list) and loc[1] < len(clients) and isinstance(
                clients[loc[1]], dict
            ):
                name = str(clients[loc[1]].get("name", "?"))
            where = f"client '{name}': "
            loc = loc[2:]
        elif len(loc) >= 2 and loc[0] == "roots" and isinstance(loc[1], int):
            name = "?"
            if isinstance(roots, list) and loc[1] < len(roots) and isinstance(roots[loc[1]], dict):
                name = str(roots[loc[1]].get("name", "?"))
            elif isinstance(roots, dict) and loc[1] < len(roots):
                name = list(roots)[loc[1]]
            where = f"root '{name}': "
            loc = loc[2:]
        # In the server's words, quoting the bad value; a whole-config check (loc
        # empty) names its own field and root in its message.
        field = ".".join(str(p) for p in loc if not isinstance(p, int))
        lines.append(where + sentence(field, err))
    return "invalid config: " + "; ".join(lines)


def load(path: str | os.PathLike[str], hold: Hold | None = None) -> LoadedConfig:
    """Read and validate a config file; raise ConfigError naming field and root."""
    source, links = resolve_links(os.fspath(path))
    data = read_file(source, hold)
    try:
        model = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(exc, data)) from None
    return validate(model, source, links)


def validate(model: Config, source: str, source_links: tuple[str, ...] = ()) -> LoadedConfig:
    """Check the model against the disk and resolve every root, or raise `ConfigError`.

    Phases, each refusing with the first problem it finds: names, paths,
    permissions, allow entries and the server's own files per root (in file
    order), then overlaps between roots, then the default root.
    """
    base = Path(source).parent
    if not model.roots:
        raise ConfigError("invalid config: roots: at least one root is required")
    audit_log, audit_links = resolve_links(
        expand(model.audit_log, base) if model.audit_log else default_audit_log()
    )
    own_files = (
        ("config file", source, source_links),
        ("audit log (audit_log)", audit_log, audit_links),
    )
    seen: set[str] = set()
    resolved: list[ResolvedRoot] = []
    for r in model.roots:
        where = f"invalid config: root '{r.name}'"
        check_name(r.name, seen, where)
        seen.add(r.name)
        real = root_path(r.path, base, where)
        perms = root_permissions(r, where)
        allow = (*model.allow, *r.allow)
        check_allow(allow, where)
        check_own_files(real, perms, own_files, where)
        max_read = r.max_read_bytes or model.max_read_bytes or DEFAULT_MAX_READ[r.role]
        check_budget(r.budget, model.budget, max_read, model.max_output_chars, where)
        resolved.append(
            ResolvedRoot(
                name=r.name,
                role=r.role,
                permissions=perms,
                real=real,
                deny=(*model.deny, *r.deny),
                allow=allow,
                max_read_bytes=max_read,
                budget=r.budget.rate() if r.budget else None,
                recovery=Recovery(
                    keep_versions=Recovery.of_role(r.role).keep_versions
                    if r.keep_versions is None else r.keep_versions,
                    version_max_bytes=r.version_max_bytes,
                    trash_max_bytes=r.trash_max_bytes,
                    trash_max_items=r.trash_max_items,
                ),
            )
        )
    check_overlaps(resolved)
    default = default_root_of(model.default_root, seen, resolved)
    clients = resolve_clients(model, resolved, base)
    return LoadedConfig(
        source, model, tuple(resolved), audit_log, default, source_links, clients
    )


def resolve_clients(
    model: Config, resolved: list[ResolvedRoot], base: Path
) -> tuple[ResolvedClient, ...]:
    """Each `[[clients]]` table checked against the roots, in file order: its name, its
    grant (known roots, permissions within each root's), its budget. Token files are
    checked where they are read (`registry`), tokens compared there too."""
    seen: set[str] = set()
    out: list[ResolvedClient] = []
    for c in model.clients:
        where = f"invalid config: client '{c.name}'"
        check_client_name(c.name, seen, where)
        seen.add(c.name)
        grants = check_client_roots(c.roots, resolved, where)
        granted = [r for r in resolved if r.name in c.roots]
        for r in granted:
            check_client_budget(c.budget, model.budget, r.max_read_bytes,
                                model.max_output_chars, where)
        out.append(
            ResolvedClient(
                name=c.name,
                grants=grants,
                token_file=expand(c.token_file, base) if c.token_file else None,
                budget=c.budget.rate() if c.budget else None,
            )
        )
    return tuple(out)


