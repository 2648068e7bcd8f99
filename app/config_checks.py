"""The checks a config must pass against the disk, one function per rule (`config.validate`).

Each raises `ConfigError` naming the root and the field, never quoting a host path
(`reload_config` sends the message to the client). `resolve_links` and `contains`
are the path arithmetic the rules share: containment is by component, and a
symlink on the way to a file counts as much as the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from app import hostfiles
from app.budget import largest_call
from app.errors import ConfigError
from app.security.deny import floor_pattern_of
from app.security.policy import PERMISSION_ORDER, ROLE_CEILINGS


# What the checks read of `app.config`'s models (which import this module), read-only.
class ConfiguredRoot(Protocol):
    """A root as configured (`config.RootConfig`)."""

    @property
    def name(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def permissions(self) -> Sequence[str] | None: ...


class CheckedRoot(Protocol):
    """A root once checked (`config.ResolvedRoot`)."""

    @property
    def name(self) -> str: ...
    @property
    def real(self) -> str: ...
    @property
    def permissions(self) -> tuple[str, ...]: ...


class Bucket(Protocol):
    """A byte budget as configured (`config.BudgetConfig`)."""

    @property
    def bytes_per_minute(self) -> int: ...
    @property
    def burst_bytes(self) -> int: ...


NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,31}$")
SYSTEM_TREES = ("/proc", "/sys", "/dev")


def expand(raw: str, base: Path) -> str:
    path = os.path.expandvars(os.path.expanduser(raw))
    if not os.path.isabs(path):
        path = str(base / path)
    return os.path.normpath(path)



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
            target = hostfiles.readlink(nxt)
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


def check_name(name: str, seen: set[str], where: str) -> None:
    if not NAME_RE.match(name):
        raise ConfigError(f"{where}: name must match ^[a-z0-9][a-z0-9._-]{{0,31}}$")
    if name in seen:
        raise ConfigError(f"{where}: name is used by two roots")


def root_path(path: str, base: Path, where: str) -> str:
    """The root's real path: an existing directory, neither / nor a system tree."""
    real = os.path.realpath(expand(path, base))
    if not os.path.exists(real):
        raise ConfigError(f"{where}: path does not exist")
    if not os.path.isdir(real):
        raise ConfigError(f"{where}: path is not a directory")
    if real == os.path.abspath(os.sep) or any(contains(t, real) for t in SYSTEM_TREES):
        raise ConfigError(f"{where}: path is / or a system tree (/proc, /sys, /dev)")
    return real


def root_permissions(r: ConfiguredRoot, where: str) -> tuple[str, ...]:
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


def check_allow(allow: tuple[str, ...], where: str) -> None:
    for entry in allow:
        floor = floor_pattern_of(entry)
        if floor is not None:
            raise ConfigError(
                f"{where}: allow: '{entry}' would re-open the floor pattern '{floor}', "
                "which nothing can re-open"
            )


def check_own_files(
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


def check_token_file(
    resolved: Sequence[CheckedRoot], token: str, links: tuple[str, ...], made: bool
) -> None:
    """The token file a client must show: the one the server made sits in no root (nor
    any link on the way to it); a configured one follows `check_own_files`."""
    own = (("token file (LOOMFS_TOKEN_FILE)", token, links),)
    for r in resolved:
        if not made:
            check_own_files(r.real, r.permissions, own, f"invalid config: root '{r.name}'")
        elif contains(r.real, token) or any(contains(r.real, link) for link in links):
            raise ConfigError(
                f"root '{r.name}' holds the place of the token file the server makes (or a "
                "link on the way to it): set XDG_STATE_HOME to a folder outside every root, "
                "or give LOOMFS_TOKEN_FILE"
            )


def check_overlaps(resolved: Sequence[CheckedRoot]) -> None:
    for i, a in enumerate(resolved):
        for b in resolved[i + 1 :]:
            if contains(a.real, b.real) or contains(b.real, a.real):
                raise ConfigError(
                    f"invalid config: roots '{a.name}' and '{b.name}' overlap: one path contains "
                    "the other (after resolving links); the effective permission would be ambiguous"
                )


def default_root_of(
    default: str | None, seen: set[str], resolved: Sequence[CheckedRoot]
) -> str | None:
    """The default root: the one named, or the only root there is."""
    if default is not None and default not in seen:
        raise ConfigError(
            f"invalid config: default_root '{default}' is not a configured root "
            f"(known: {', '.join(sorted(seen))})"
        )
    if default is None and len(resolved) == 1:
        return resolved[0].name
    return default


def check_budget(
    own: Bucket | None,
    server: Bucket | None,
    max_read_bytes: int,
    max_output_chars: int,
    where: str,
) -> None:
    """A root's budget is tighter than the server's, and every bucket covering the root can
    hold the largest call on it (a call the burst can never pay would be refused forever)."""
    if own is not None and server is not None:
        for field in ("bytes_per_minute", "burst_bytes"):
            if getattr(own, field) > getattr(server, field):
                raise ConfigError(
                    f"{where}: budget.{field} ({getattr(own, field)}) is above the server's "
                    f"budget.{field} ({getattr(server, field)}); a root's budget can only be "
                    "tighter (every call pays both)"
                )
    largest = largest_call(max_read_bytes, max_output_chars)
    what = (
        "its max_read_bytes" if largest == max_read_bytes
        else "a text answer of max_output_chars, at 4 bytes a character"
    )
    for name, bucket in (("budget.burst_bytes", own), ("the server's budget.burst_bytes", server)):
        if bucket is not None and bucket.burst_bytes < largest:
            raise ConfigError(
                f"{where}: {name} ({bucket.burst_bytes}) is below the largest call on this "
                f"root ({largest} bytes: {what}), which could then never run; raise "
                "burst_bytes or lower that limit"
            )


# -- [[clients]] (docs/clients.md) ------------------------------------------------------


def check_client_name(name: str, seen: set[str], where: str) -> None:
    if not NAME_RE.match(name):
        raise ConfigError(f"{where}: name must match ^[a-z0-9][a-z0-9._-]{{0,31}}$")
    if name in seen:
        raise ConfigError(f"{where}: name is used by two clients")


def check_client_roots(
    roots: Mapping[str, Sequence[str]], resolved: Sequence[CheckedRoot], where: str
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The client's grant, in the config's root order: every root it names is configured,
    each with some permissions, all of them within the root's."""
    if not roots:
        raise ConfigError(f"{where}: roots is empty; a client must be granted a root")
    known = {r.name: r for r in resolved}
    for name, perms in roots.items():
        root = known.get(name)
        if root is None:
            raise ConfigError(
                f"{where}: roots: '{name}' is not a configured root "
                f"(known: {', '.join(known)})"
            )
        if not perms:
            raise ConfigError(f"{where}: roots.{name}: permissions is empty; grant read at least")
        above = [p for p in PERMISSION_ORDER if p in perms and p not in root.permissions]
        if above:
            raise ConfigError(
                f"{where}: roots.{name}: {', '.join(above)} is above what root '{name}' "
                f"grants ([{', '.join(root.permissions)}]); a client's grant is within the root's"
            )
    return tuple(
        (r.name, tuple(p for p in PERMISSION_ORDER if p in roots[r.name]))
        for r in resolved if r.name in roots
    )


def check_client_budget(
    own: Bucket | None, server: Bucket | None, max_read_bytes: int, max_output_chars: int,
    where: str,
) -> None:
    """A client's budget is tighter than the server's and can pay the largest call on each
    root it is granted (`check_budget`, in the client's words)."""
    if own is None:
        return
    check_budget(own, server, max_read_bytes, max_output_chars, where)


def check_client_token_file(
    client: str,
    resolved: Sequence[CheckedRoot],
    token: str,
    links: tuple[str, ...],
    made: bool,
) -> None:
    """A client's token file: the one the server makes sits in no root (nor a link on the
    way to it); a configured one is in no root that grants write or delete."""
    where = f"invalid config: client '{client}'"
    for r in resolved:
        inside = contains(r.real, token) or any(contains(r.real, link) for link in links)
        if not inside:
            continue
        if made:
            raise ConfigError(
                f"{where}: root '{r.name}' holds the place of the token the server makes "
                "for it (state folder, tokens/): set XDG_STATE_HOME to a folder outside "
                "every root, or give token_file"
            )
        changes = [p for p in r.permissions if p != "read"]
        if changes:
            raise ConfigError(
                f"{where}: token_file is inside root '{r.name}', which grants "
                f"{', '.join(changes)} (or a link on the way to it is); move it out of the "
                "root or make the root read-only"
            )
