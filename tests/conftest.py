"""Shared fixtures: real directories on disk, real configs, real roots."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a TOML config into tmp_path/cfg and return its path."""

    def _write(body: str, name: str = "roots.toml") -> Path:
        cfg_dir = tmp_path / "cfg"
        cfg_dir.mkdir(exist_ok=True)
        path = cfg_dir / name
        text = textwrap.dedent(body)
        if "audit_log" not in text and name.endswith(".toml"):
            text = f'audit_log = "{tmp_path / "state" / "audit.log"}"\n' + text
        path.write_text(text)
        return path

    return _write
