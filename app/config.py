"""The roots file: pydantic models, loading (TOML or JSON) and validation.

Every inconsistency stops the load with a message naming the field and the
root; there is no degraded mode. Messages never quote a configured host path,
because `reload_config` sends them to the client.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.errors import ConfigError
from app.messages import sentence
from app.security.deny import floor_pattern_of
from app.security.policy import PERMISSION_ORDER, ROLE_CEILINGS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Role = Literal["reference", "sourcecode", "workspace"]
Permission = Literal["read", "write", "delete"]
Positive = Annotated[int, Field(strict=True, gt=0)]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,31}$")
DEFAULT_MAX_READ = {"reference": 1 << 20, "sourcecode": 2 << 20, "workspace": 8 << 20}
SYSTEM_TREES = ("/proc", "/sys", "/dev")

SENSITIVE_REFUSAL = (
    "allow_sensitive_files: true is refused: the built-in deny list cannot be switched "
    "off by a config file (a guarantee a config file can switch off is no guarantee). "
    'Re-open precisely the names you need with a root\'s `allow` list, e.g. allow = [".env"]'
)


class RootConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    path: str
    role: Role
    permissions: list[Permission] | None = None
    deny: list[str] = []
    allow: list[str] = []
    max_read_bytes: Positive | None = None


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
    text_format: Literal["text", "json"] = "text"  # the tool result's text item (README)
    public_base_url: str | None = None
    allow_sensitive_files: Literal[False] = False
    roots: list[RootConfig]

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


@dataclass(frozen=True)
class LoadedConfig:
    source: str  # real path of the config file
    model: Config
    roots: tuple[ResolvedRoot, ...]
    audit_log: str
    default_root: str | None
    source_links: tuple[str, ...] = ()  # where the links on the config's path sit

    @property
    def protected_files(self) -> tuple[str, ...]:
        """Files the agent must never reach, wherever they are: config and audit log."""
        logs = [self.audit_log] + [
            f"{self.audit_log}.{i}" for i in range(1, self.model.audit_log_backups + 1)
        ]
        return (self.source, *logs)


def expand(raw: str, base: Path) -> str:
    path = os.path.expandvars(os.path.expanduser(raw))
    if not os.path.isabs(path):
        path = str(base / path)
    return os.path.normpath(path)


def default_audit_log() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(state, "loom-fs-mcp", "audit.log")


def read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_bytes()
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
    for err in exc.errors():
        loc = list(err["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] == "roots" and isinstance(loc[1], int):
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


def resolve_links(path: str) -> tuple[str, tuple[str, ...]]:
    """The real path of `path`, and where each symlink met on the way sits (its own
    location, with its folder resolved). A link anywhere on the way to the config file
    decides which file is read as much as the file does."""
    # Not abspath: it would drop `link/..` lexically, where the system resolves the link first.
    full = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    pending = [p for p in full.split(os.sep) if p]
    cur = os.sep
    links: list[str] = []
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, name)
        if not os.path.islink(nxt):
            cur = nxt
            continue
        links.append(nxt)
        if len(links) > 40:
            raise ConfigError("config: too many levels of symbolic links on its path")
        try:
            target = os.readlink(nxt)
        except OSError as exc:
            raise ConfigError(
                f"config: a link on its path cannot be read ({exc.strerror})"
            ) from None
        if os.path.isabs(target):
            cur = os.sep
        pending[:0] = [p for p in target.split(os.sep) if p]
    return cur, tuple(links)


def contains(parent: str, child: str) -> bool:
    """Component-wise containment (never a string prefix)."""
    a = [p for p in parent.split(os.sep) if p]
    b = [p for p in child.split(os.sep) if p]
    return b[: len(a)] == a


def load(path: str | os.PathLike[str]) -> LoadedConfig:
    """Read and validate a config file; raise ConfigError naming field and root."""
    source, links = resolve_links(os.fspath(path))
    data = read_file(source)
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
        _check_name(r.name, seen, where)
        seen.add(r.name)
        real = _root_path(r.path, base, where)
        perms = _root_permissions(r, where)
        allow = (*model.allow, *r.allow)
        _check_allow(allow, where)
        _check_own_files(real, perms, own_files, where)
        resolved.append(
            ResolvedRoot(
                name=r.name,
                role=r.role,
                permissions=perms,
                real=real,
                deny=(*model.deny, *r.deny),
                allow=allow,
                max_read_bytes=r.max_read_bytes or model.max_read_bytes or DEFAULT_MAX_READ[r.role],
            )
        )
    _check_overlaps(resolved)
    default = _default_root(model.default_root, seen, resolved)
    return LoadedConfig(source, model, tuple(resolved), audit_log, default, source_links)


def _check_name(name: str, seen: set[str], where: str) -> None:
    if not NAME_RE.match(name):
        raise ConfigError(f"{where}: name must match ^[a-z0-9][a-z0-9._-]{{0,31}}$")
    if name in seen:
        raise ConfigError(f"{where}: name is used by two roots")


def _root_path(path: str, base: Path, where: str) -> str:
    """The root's real path: an existing directory, neither / nor a system tree."""
    real = os.path.realpath(expand(path, base))
    if not os.path.exists(real):
        raise ConfigError(f"{where}: path does not exist")
    if not os.path.isdir(real):
        raise ConfigError(f"{where}: path is not a directory")
    if real == os.path.abspath(os.sep) or any(contains(t, real) for t in SYSTEM_TREES):
        raise ConfigError(f"{where}: path is / or a system tree (/proc, /sys, /dev)")
    return real


def _root_permissions(r: RootConfig, where: str) -> tuple[str, ...]:
    """The granted permissions (the role's ceiling by default), in PERMISSION_ORDER."""
    ceiling = ROLE_CEILINGS[r.role]
    perms = tuple(ceiling) if r.permissions is None else tuple(r.permissions)
    if not perms:
        raise ConfigError(f"{where}: permissions is empty; a root must grant something")
    for perm in perms:
        if perm not in ceiling:
            raise ConfigError(
                f"invalid config: root '{r.name}' (role {r.role}) cannot be granted {perm}; "
                f"its permissions may name only: {', '.join(ceiling)}"
            )
    return tuple(p for p in PERMISSION_ORDER if p in perms)


def _check_allow(allow: tuple[str, ...], where: str) -> None:
    for entry in allow:
        floor = floor_pattern_of(entry)
        if floor is not None:
            raise ConfigError(
                f"{where}: allow: '{entry}' would re-open the floor pattern '{floor}', "
                "which nothing can re-open"
            )


def _check_own_files(
    real: str,
    perms: tuple[str, ...],
    own_files: tuple[tuple[str, str, tuple[str, ...]], ...],
    where: str,
) -> None:
    """A root that may change things must not hold the server's own files or links to them."""
    changes = [p for p in perms if p != "read"]
    if not changes:
        return
    # An agent that can change the file defining its own roots (or a link on the way
    # to it) can swap it and reload: refused at start and on every reload.
    for label, file, links in own_files:
        if contains(real, file):
            raise ConfigError(
                f"{where}: grants {', '.join(changes)} and contains the server's {label}; "
                "move it out of the root or make the root read-only"
            )
        if any(contains(real, link) for link in links):
            raise ConfigError(
                f"{where}: grants {', '.join(changes)} and holds a symbolic link on the "
                f"path to the server's {label}, so an agent could swap the file; give "
                "its real path, or make the root read-only"
            )


def _check_overlaps(resolved: list[ResolvedRoot]) -> None:
    for i, a in enumerate(resolved):
        for b in resolved[i + 1 :]:
            if contains(a.real, b.real) or contains(b.real, a.real):
                raise ConfigError(
                    f"invalid config: roots '{a.name}' and '{b.name}' overlap: one path contains "
                    "the other (after resolving links); the effective permission would be ambiguous"
                )


def _default_root(default: str | None, seen: set[str], resolved: list[ResolvedRoot]) -> str | None:
    if default is not None and default not in seen:
        raise ConfigError(
            f"invalid config: default_root '{default}' is not a configured root "
            f"(known: {', '.join(sorted(seen))})"
        )
    if default is None and len(resolved) == 1:
        return resolved[0].name
    return default
