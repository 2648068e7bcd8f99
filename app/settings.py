"""Process settings: environment (`LOOMFS_*`), then CLI flags, which win.

`LOOMFS_CONFIG` (which config file) is read before any of these, by
`app.cli.config_path`, so it is not a field here.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


def _list(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [v.strip() for v in text.split(",") if v.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOOMFS_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    token_file: str | None = None
    allowed_hosts: Annotated[list[str], NoDecode] = []
    allowed_origins: Annotated[list[str], NoDecode] = []

    _split = field_validator("allowed_hosts", "allowed_origins", mode="before")(_list)

