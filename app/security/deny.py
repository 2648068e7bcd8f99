"""Deny matching: which names the agent may never see.

Three levels only add: built-in (in code, so no config file can switch it
off), the config's `deny`, the root's `deny`. The built-in list has a *floor*
that nothing re-opens and a *base* that a root's `allow` may re-open name by
name. Matching is per path component, case-insensitive and Unicode-folded, so
`.ENV`, `.Env` and an NFD spelling all hit `.env`: matching too much is the
safe side of a deny list. Patterns containing `/` match the relative path and
each of its prefixes (so a denied directory hides everything below it).
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.security.protected import Protected

FLOOR: tuple[str, ...] = (
    ".mcp-trash",
    ".mcp-tmp-*",
    ".git",
    ".ssh",
    ".gnupg",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_ecdsa*",
    "id_ed25519*",
)
BASE: tuple[str, ...] = (
    ".env",
    ".env.*",
    ".aws",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    "service-account*.json",
    ".venv",
    "node_modules",
    "__pycache__",
)
TEMPLATES: tuple[str, ...] = (".env.example", ".env.sample", ".env.template")

# Code points that HFS+/APFS ignore in names, so `.e\u200bnv` is `.env` there.
IGNORABLE = dict.fromkeys(
    [*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0xFEFF]
)


def fold_name(name: str) -> str:
    """The form in which names and patterns are compared."""
    if name.isascii():
        folded = name.lower()
    else:
        folded = unicodedata.normalize("NFKC", name).translate(IGNORABLE).casefold()
        folded = unicodedata.normalize("NFKC", folded)
    stripped = folded.rstrip(". ")
    # `.` and `..` stay themselves; a name of only dots and spaces keeps its fold.
    return stripped or folded


def _fold_pattern(pattern: str) -> str:
    return "/".join(fold_name(part) for part in pattern.split("/"))


def _compile(patterns: Iterable[str]) -> re.Pattern[str] | None:
    pats = list(patterns)
    if not pats:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats), re.DOTALL)


@dataclass(frozen=True)
class _Level:
    """One group of patterns: a combined regex for the fast miss, the list to name the hit."""

    patterns: tuple[tuple[str, str], ...]  # (as written, folded)
    regex: re.Pattern[str] | None

    @classmethod
    def of(cls, patterns: Iterable[str]) -> _Level:
        pairs = tuple((p, _fold_pattern(p)) for p in patterns)
        return cls(pairs, _compile(f for _, f in pairs))

    def first(self, folded: str) -> str | None:
        if self.regex is None or not self.regex.fullmatch(folded):
            return None
        for written, pat in self.patterns:
            if fnmatch.fnmatchcase(folded, pat):
                return written
        return None  # pragma: no cover - the combined regex and the list agree


def _literal_head(folded: str) -> str:
    """The text of a folded pattern before its first wildcard."""
    cut = min((i for i in (folded.find(c) for c in "*?[") if i >= 0), default=len(folded))
    return folded[:cut]


def floor_pattern_of(pattern: str) -> str | None:
    """The floor pattern that `pattern` equals or is matched by, if any."""
    folded = _fold_pattern(pattern)
    for floor in FLOOR:
        f = _fold_pattern(floor)
        if folded == f or fnmatch.fnmatchcase(folded, f) or fnmatch.fnmatchcase(f, folded):
            return floor
    return None


class _NameCache(dict):
    """name -> deny pattern or None, computed on first sight, bounded in size."""

    __slots__ = ("_compute",)
    MAX = 65536

    def __init__(self, compute: Callable[[str], str | None]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, name: str) -> str | None:
        hit = self._compute(name)
        if len(self) < self.MAX:
            self[name] = hit
        return hit


class DenyRules:
    """The compiled deny/allow rules of one root. Immutable once built.

    `name(component)` is the pattern denying one path component, or None.
    """

    def __init__(
        self,
        extra: Sequence[str] = (),
        allow: Sequence[str] = (),
        protected: Sequence[str] = (),
        identities: Protected | None = None,
    ) -> None:
        comp_extra = [p for p in extra if "/" not in p.strip("/")]
        path_extra = [p.strip("/") for p in extra if "/" in p.strip("/")]
        self._floor = _Level.of(FLOOR)
        self._base = _Level.of(BASE)
        self._templates = _Level.of(TEMPLATES)
        # An allow entry re-opens a *name*: `*/.env` (local-readonly-mcp's spelling)
        # re-opens `.env` at any depth, like `.env` does.
        self._allow = _Level.of(p.strip("/").rsplit("/", 1)[-1] for p in allow)
        self._extra = _Level.of(comp_extra)
        self._path_extra = _Level.of(path_extra)
        # The server's own config file and audit log, as paths relative to this root.
        self._protected = {_fold_pattern(p): p for p in protected}
        # The same files (and the token file, every audit log written) by identity.
        self.identities = identities
        # `name` is the walk's per-entry test, so a hit is one C-level dict lookup.
        self.name: Callable[[str], str | None] = _NameCache(self._match_name).__getitem__

    def _match_name(self, name: str) -> str | None:
        """The pattern denying one path component, or None (see `name`)."""
        folded = fold_name(name)
        hit = self._floor.first(folded)
        if hit is None:
            hit = self._extra.first(folded)
        if hit is None:
            base = self._base.first(folded)
            if base is not None and not (
                self._templates.first(folded) or self._allow.first(folded)
            ):
                hit = base
        return hit

    def path(self, parts: Sequence[str]) -> str | None:
        """The pattern denying a relative path (any component, or a `/` pattern)."""
        for part in parts:
            hit = self.name(part)
            if hit is not None:
                return hit
        return self.prefixes(parts)

    def prefixes(self, parts: Sequence[str]) -> str | None:
        """Only the whole-path rules, for callers that checked each name already."""
        if not self._path_extra.patterns and not self._protected:
            return None
        folded = [fold_name(p) for p in parts]
        for end in range(1, len(folded) + 1):
            prefix = "/".join(folded[:end])
            if prefix in self._protected:
                return self._protected[prefix]
            hit = self._path_extra.first(prefix)
            if hit is not None:
                return hit
        return None

    def may_deny_below(self, parts: Sequence[str]) -> bool:
        """Could a whole-path rule deny something strictly below `parts`?

        Conservative: compares the literal text before a pattern's first wildcard,
        so `config/prod.yaml` may deny below `config` and not below `src`, and a
        pattern starting with a wildcard may deny below anything.
        """
        if not self.protects_whole_paths():
            return False
        here = "/".join(fold_name(p) for p in parts) + "/" if parts else ""
        literals = [*self._protected, *(_literal_head(f) for _, f in self._path_extra.patterns)]
        return any(lit.startswith(here) or here.startswith(lit) for lit in literals)

    def protects_whole_paths(self) -> bool:
        return bool(self._path_extra.patterns or self._protected)
