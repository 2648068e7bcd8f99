"""Published output schemas are flat (no `$ref`), accept/refuse exactly as before, and are
what `output_schemas.json` pins, tool by tool, as a client reads them from tools/list.

After a deliberate change of a result model, rewrite the pin and review its diff:
`.venv/bin/python -m tests.service.test_output_schemas`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from app.fs.search.results import SearchFilesResult
from app.registry import Registry
from app.server import LoomServer
from app.tools.base import flat_schema
from tests.kit import config_file, roots_toml

PINNED = Path(__file__).with_name("output_schemas.json")


def valid(schema: dict[str, Any], value: Any) -> bool:
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(value))


async def test_every_published_output_schema_is_self_contained(one_root_config) -> None:
    server = LoomServer(Registry(str(one_root_config("workspace"))))
    tools = await server.list_tools()
    assert len(tools) > 5
    for t in tools:
        text = json.dumps(t.output_schema)
        assert "$ref" not in text and "$defs" not in text, t.name


async def published_output_schemas(folder: Path) -> dict[str, Any]:
    """Every tool's outputSchema from tools/list, on a config that registers every tool."""
    root = folder / "root"
    (root / ".git").mkdir(parents=True)  # the history tools need a repository at the top
    cfg = config_file(folder, roots_toml(("main", root, "workspace"), audit_log=None,
                                         extra="search_fetch_tools = true"))
    async with Client(LoomServer(Registry(str(cfg)))) as client:
        tools = (await client.list_tools()).tools
    return {t.name: t.output_schema for t in tools}


async def test_every_tools_output_schema_is_the_pinned_one(tmp_path: Path) -> None:
    published = await published_output_schemas(tmp_path)
    pinned = json.loads(PINNED.read_text())
    assert sorted(published) == sorted(pinned)
    changed = [name for name in sorted(pinned) if published[name] != pinned[name]]
    assert changed == [], "output schemas differ from tests/service/output_schemas.json"


GOOD = {
    "matches": [
        {"path": "a.py", "type": "file", "size": 3},
        {"path": "d", "type": "dir", "size": None},
    ],
    "offset": 0,
    "limit": 100,
    "returned": 2,
    "has_more": False,
    "next_offset": None,
    "truncated": False,
    "note": None,
    "examined_entries": 4,
    "skipped_links": 0,
}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (GOOD, True),
        # A nested item with a wrong type, a missing field, a wrong top-level type.
        ({**GOOD, "matches": [{"path": "a.py", "type": "file", "size": "3"}]}, False),
        ({**GOOD, "matches": [{"type": "file", "size": 3}]}, False),
        ({**GOOD, "returned": "2"}, False),
    ],
)
def test_flat_schema_validates_exactly_like_the_original(value: Any, ok: bool) -> None:
    original = SearchFilesResult.model_json_schema()
    assert "$defs" in original  # the case that matters: a list of nested models
    flat = flat_schema(original)
    assert valid(original, value) is ok
    assert valid(flat, value) is ok


def test_a_recursive_schema_is_left_unchanged() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
        "$ref": "#/$defs/Node",
    }
    assert flat_schema(schema) == schema


if __name__ == "__main__":
    import asyncio
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        schemas = asyncio.run(published_output_schemas(Path(folder)))
    PINNED.write_text(json.dumps(dict(sorted(schemas.items())), indent=1, sort_keys=True) + "\n")
    print(f"{len(schemas)} output schemas written to {PINNED}")
