"""Builders shared by the tests: one way to make each kind of fixture."""

from __future__ import annotations

import functools
import json
import os
import textwrap
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from app.security import DenyRules, Root

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
) -> Root:
    """A `Root` on `path` without a config: the role's ceiling unless `permissions`.

    `engine` "openat2" or "walk" forces the resolution engine on this instance
    (`openat2.available()` is probed once per process); None keeps the probe's choice.
    """
    root = Root(
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


def loaded_root(config: Path | str, name: str = "main") -> Root:
    """A `Root` exactly as the server builds it from `config` (no audit log)."""
    from app.registry import Registry

    return Registry(str(config), audit=False).current.root(name)


TomlValue = str | int | bool | Path | Sequence[str]
RootOptions = Mapping[str, TomlValue]
RootSpec = tuple[str, Path | str, str] | tuple[str, Path | str, str, RootOptions]


def dump(x: Any) -> Any:
    """A tool result as JSON data (pydantic models dumped, tuples as lists), for comparing."""
    if hasattr(x, "model_dump"):
        return x.model_dump(mode="json")
    if isinstance(x, tuple):
        return [dump(v) for v in x]
    return x


def toml_value(value: TomlValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # JSON's string escapes are TOML basic-string escapes
    return "[" + ", ".join(json.dumps(v) for v in value) + "]"


def roots_toml(*roots: RootSpec, audit_log: Path | str | None, extra: str = "") -> str:
    """A TOML config: `audit_log` (None: no line), the `extra` top-level lines, then one
    `[[roots]]` table per (name, path, role) or (name, path, role, {key: value, ...})."""
    lines = [] if audit_log is None else [f"audit_log = {toml_value(audit_log)}"]
    lines.append(extra)
    for name, path, role, *options in roots:
        lines += ["[[roots]]", f"name = {toml_value(name)}", f"path = {toml_value(path)}",
                  f"role = {toml_value(role)}"]
        for opts in options:
            lines += [f"{key} = {toml_value(value)}" for key, value in opts.items()]
    return "\n".join(lines) + "\n"


def config_file(
    folder: Path, text: str, name: str = "roots.toml", *, audit: bool = True
) -> Path:
    """Write `text` (dedented) as folder/cfg/`name`; a TOML config without an `audit_log`
    line gets folder/state/audit.log unless `audit` is False."""
    (folder / "cfg").mkdir(exist_ok=True)
    path = folder / "cfg" / name
    text = textwrap.dedent(text)
    if audit and name.endswith(".toml") and "audit_log" not in text:
        text = roots_toml(audit_log=folder / "state" / "audit.log", extra=text)
    path.write_text(text)
    return path


@functools.cache
def result_models() -> dict[str, type[BaseModel]]:
    """Each tool's result model: the `Model` of the `Annotated[CallToolResult, Model]` its
    handler declares (search and fetch, OpenAI's shape, are left out: sent as they are)."""
    from app.server import collect_tools
    from app.tools.deep_research import FetchResult, SearchResult

    out = {}
    for spec, fn in collect_tools():
        args = typing.get_args(typing.get_type_hints(fn, include_extras=True)["return"])
        if len(args) == 2 and args[1] not in (SearchResult, FetchResult):
            out[spec.name] = args[1]
    return out


def complete(tool: str, data: Any) -> Any:
    """A tool's structured content as the whole result: the fields its lean form leaves out
    (app/tools/lean.py) restored from their defaults by validating it with the result's
    model, as a client holding the output schema or our models does. A listing entry's
    `modified` is not restored (None): the JSON text has it (docs/tools.md)."""
    model = result_models().get(tool)
    if model is None or not isinstance(data, dict):
        return data
    return model.model_validate(data).model_dump(mode="json")


def count_folder_opens(monkeypatch: Any) -> list[int]:
    """Count the folders `os.open` opens (O_DIRECTORY) from now until `monkeypatch` is undone:
    the work of a walk or of folder-making, counted rather than timed. One cell, read as [0]."""
    count = [0]
    real = os.open

    def counting(path: Any, flags: int, *a: Any, **kw: Any) -> int:
        if flags & os.O_DIRECTORY:
            count[0] += 1
        return real(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", counting)
    return count
