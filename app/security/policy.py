"""What a root allows and what it records, decided before any disk access.

A root's role sets the ceiling of its permissions (`ROLE_CEILINGS`: a
reference root is read-only whatever the config says); permissions are kept in
`PERMISSION_ORDER`. Every decision about a path is audited: DENY with the rule
that refused it, or ALLOW once the resolution succeeded. The deny rules are
asked here too, by request path and by the identity of the server's own files.
`Root` (resolve.py) holds one `Policy` beside its directory handle and asks it before
every operation; the policy itself never touches the disk.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NoReturn, Protocol, TypedDict, TypeVar, overload

from app.errors import DeniedName, LoomError, PermissionRefused, ServerFile
from app.security.deny import DenyRules

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

ROLE_CEILINGS: dict[str, tuple[str, ...]] = {
    "reference": ("read",),
    "sourcecode": ("read", "write"),
    "workspace": ("read", "write", "delete"),
}
PERMISSION_ORDER = ("read", "write", "delete")

# (decision, root name, path in the root, operation, "rule: message" of a refusal)
AuditFn = Callable[[str, str, str, str, "str | None"], None]


@dataclass(frozen=True)
class Recovery:
    """What a root keeps of the content a change replaces (docs/configuration.md)."""

    keep_versions: bool
    version_max_bytes: int = 64 << 20  # a larger replaced file is not kept
    trash_max_bytes: int = 1 << 30  # what the trash takes on disk; past it the oldest versions go
    trash_max_items: int = 10_000  # items in the trash; past it too (deletes never go)

    @classmethod
    def of_role(cls, role: str) -> Recovery:
        return cls(keep_versions=role in ("workspace", "sourcecode"))


class _Required(TypedDict):
    name: str
    role: str
    permissions: Iterable[str]
    rules: DenyRules
    max_read_bytes: int


class PolicyArgs(_Required, total=False):
    """A root's policy, as keyword arguments (`Root` takes these and `real`, its host path)."""

    audit: AuditFn | None
    recovery: Recovery


class Policy:
    """One root's name, role, permissions and deny rules, the server's own files' identities
    (asked by `check_identity`), and its audit record: every decision about a path, made
    before or after the disk is reached, is one of its methods."""

    def __init__(self, **args: Unpack[PolicyArgs]) -> None:
        # Typed for mypy; at run time a misspelt keyword (an `audit` that would be dropped)
        # must still fail as it did with named parameters.
        known = PolicyArgs.__required_keys__ | PolicyArgs.__optional_keys__
        wrong = sorted(set(args) - known) + sorted(PolicyArgs.__required_keys__ - set(args))
        if wrong:
            raise TypeError(f"Policy: unexpected or missing keyword arguments {wrong}")
        self.name = args["name"]
        self.role = args["role"]
        self.permissions = tuple(p for p in PERMISSION_ORDER if p in set(args["permissions"]))
        self.rules = args["rules"]
        self.max_read_bytes = args["max_read_bytes"]
        self._audit = args.get("audit")
        self.recovery = args.get("recovery") or Recovery.of_role(self.role)
        self.identities = self.rules.identities  # the server's own files, by identity

    def narrowed(self, permissions: Iterable[str]) -> Policy:
        """This policy for a client granted `permissions` on it: the same rules, audit and
        recovery, the permissions those of both (never more than the root's)."""
        view = copy.copy(self)
        wanted = set(permissions)
        view.permissions = tuple(p for p in self.permissions if p in wanted)
        return view

    def unaudited(self) -> Policy:
        """This policy recording nothing: for a caller that writes its own line (the
        owner's page writes one `owner_*` line per action, whatever it resolved)."""
        view = copy.copy(self)
        view._audit = None
        return view

    def permit(self, perm: str) -> None:
        if perm not in self.permissions:
            granted = ", ".join(self.permissions)
            raise PermissionRefused(
                f"root '{self.name}' (role {self.role}) grants [{granted}], not {perm}"
            )

    def check_identity(self, st: os.stat_result | None) -> None:
        """Refuse the server's own files (config, token, audit logs) whatever their name."""
        if st is not None and self.identities is not None and self.identities.hit(st):
            raise ServerFile()

    def check_deny(self, parts: Iterable[str]) -> None:
        hit = self.rules.path(tuple(parts))
        if hit is not None:
            raise DeniedName(hit)

    @contextlib.contextmanager
    def audited(self, rel: str, op: str) -> Iterator[None]:
        """One audit line for the resolution inside: DENY with the rule, or ALLOW."""
        try:
            yield
        except LoomError as exc:
            self.record("DENY", rel, op, exc)
            raise
        self.record("ALLOW", rel, op)

    def record(self, decision: str, rel: str, op: str, exc: LoomError | None = None) -> None:
        if self._audit is not None:
            rule = None if exc is None else f"{exc.rule}: {exc.message}"
            self._audit(decision, self.name, rel, op, rule)

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "role": self.role,
            "permissions": list(self.permissions),
            "max_read_bytes": self.max_read_bytes,
        }


T = TypeVar("T")


class _HoldsPolicy(Protocol):
    @property
    def policy(self) -> Policy: ...


class FromPolicy(Generic[T]):
    """An attribute of the class holding a `Policy` as `policy` that is the policy's own:
    `name = FromPolicy(lambda p: p.name)` reads `holder.policy.name`, typed as the
    policy's attribute (`get` is checked against `Policy`). Read-only on the holder:
    setting it raises `AttributeError`, and mypy refuses the assignment (set it on the
    policy)."""

    def __init__(self, get: Callable[[Policy], T]) -> None:
        self._get = get
        self._name = "?"

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, holder: None, owner: type | None = None) -> FromPolicy[T]: ...

    @overload
    def __get__(self, holder: _HoldsPolicy, owner: type | None = None) -> T: ...

    def __get__(self, holder: _HoldsPolicy | None,
                owner: type | None = None) -> T | FromPolicy[T]:
        if holder is None:
            return self
        return self._get(holder.policy)

    def __set__(self, holder: _HoldsPolicy, value: NoReturn) -> None:
        raise AttributeError(f"'{self._name}' is the policy's: set it on the policy")


__all__ = [
    "PERMISSION_ORDER",
    "ROLE_CEILINGS",
    "AuditFn",
    "FromPolicy",
    "Policy",
    "PolicyArgs",
    "Recovery",
]
