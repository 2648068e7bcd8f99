"""Every tool's input schema converts under OpenAI strict rules, two ways.

1. The OpenAI Agents SDK's own conversion (`ensure_strict_json_schema`, what
   `MCPServer*(convert_schemas_to_strict=True)` runs on each MCP tool); a tool
   whose schema it refuses silently falls back to non-strict there.
2. A check written from OpenAI's published "Supported schemas" rules: every
   object closed (`additionalProperties: false`), no `$ref`/`$defs`, only
   keywords of the strict subset, no root `anyOf`, nesting and enum limits.
Read from `tools/list` of a live server with every tool registered.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from agents.strict_schema import ensure_strict_json_schema

from tests.kit import roots_toml
from tests.live import LiveServer, live_server

# The published strict subset (structured outputs, "Supported properties"), less the
# length keywords some models still refuse; `description` and `default` are annotations.
ALLOWED = {
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
    "const", "description", "default",
    "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems",
}  # fmt: skip
MAX_DEPTH = 10
MAX_ENUM = 1000


def strict_problems(schema: Any, where: str = "", depth: int = 0) -> list[str]:
    """What in `schema` OpenAI's strict mode would refuse (empty: it converts)."""
    if not isinstance(schema, dict):
        return [f"{where or '/'}: not a schema object"]
    found = []
    if depth > MAX_DEPTH:
        found.append(f"{where}: nested deeper than {MAX_DEPTH}")
    for key in schema:
        if key not in ALLOWED:
            found.append(f"{where or '/'}: keyword {key!r} is outside the strict subset")
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            found.append(f"{where or '/'}: object without additionalProperties: false")
        for name, sub in schema.get("properties", {}).items():
            found += strict_problems(sub, f"{where}/{name}", depth + 1)
    if "items" in schema:
        found += strict_problems(schema["items"], f"{where}/items", depth + 1)
    for i, sub in enumerate(schema.get("anyOf", [])):
        found += strict_problems(sub, f"{where}/anyOf{i}", depth)
    if len(schema.get("enum", [])) > MAX_ENUM:
        found.append(f"{where}: enum over {MAX_ENUM} values")
    return found


@pytest.fixture(scope="module")
def every_tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("strict")
    (base / "ws").mkdir()
    cfg = base / "roots.toml"
    cfg.write_text(roots_toml(("ws", base / "ws", "workspace"), audit_log=base / "audit.log",
                              extra="search_fetch_tools = true"))
    with live_server(cfg) as srv:
        yield srv


async def input_schemas(srv: LiveServer) -> dict[str, dict[str, Any]]:
    async with srv.session() as s:
        return {t.name: t.input_schema for t in (await s.list_tools()).tools}


async def test_every_input_schema_converts_with_the_agents_sdk(every_tool: LiveServer) -> None:
    schemas = await input_schemas(every_tool)
    assert len(schemas) >= 16
    for name, schema in schemas.items():
        # As the Agents SDK's MCP bridge calls it: objects that permit undeclared
        # properties are refused rather than silently closed.
        converted = ensure_strict_json_schema(copy.deepcopy(schema), _reject_open_objects=True)
        assert converted["additionalProperties"] is False, name
        # The conversion only adds `required` for every property; nothing else moves.
        assert set(converted["required"]) == set(schema["properties"]), name


async def test_every_input_schema_follows_the_published_strict_rules(
    every_tool: LiveServer,
) -> None:
    schemas = await input_schemas(every_tool)
    problems = {name: strict_problems(s) for name, s in schemas.items()}
    assert {n: p for n, p in problems.items() if p} == {}
    for name, schema in schemas.items():
        assert schema["type"] == "object" and "anyOf" not in schema, name
        assert "$defs" not in str(schema) and "$ref" not in str(schema), name


def test_the_rule_check_catches_what_strict_mode_refuses() -> None:
    """The check itself bites: each known refusal is reported."""
    open_object = {"type": "object", "properties": {}}
    nested_ref = {
        "type": "object", "additionalProperties": False, "$defs": {"E": {"type": "object"}},
        "properties": {"e": {"$ref": "#/$defs/E"}},
    }  # fmt: skip
    long_string = {
        "type": "object", "additionalProperties": False,
        "properties": {"s": {"type": "string", "maxLength": 1 << 28, "title": "S"}},
    }  # fmt: skip
    open_item = {
        "type": "object", "additionalProperties": False,
        "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {}}}},
    }  # fmt: skip
    assert strict_problems(open_object)
    assert any("$defs" in p for p in strict_problems(nested_ref))
    assert any("$ref" in p for p in strict_problems(nested_ref))
    assert len(strict_problems(long_string)) == 2
    assert any("/l/items" in p for p in strict_problems(open_item))
    with pytest.raises(Exception, match="undeclared properties"):
        ensure_strict_json_schema(copy.deepcopy(open_item), _reject_open_objects=True)
