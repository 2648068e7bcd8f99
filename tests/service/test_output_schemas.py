"""Published output schemas are flat (no `$ref`) and accept/refuse exactly as before."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from app.fs.search.results import SearchFilesResult
from app.registry import Registry
from app.server import LoomServer
from app.tools.base import flat_schema


def valid(schema: dict[str, Any], value: Any) -> bool:
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(value))


def test_every_published_output_schema_is_self_contained(one_root_config) -> None:
    server = LoomServer(Registry(str(one_root_config("workspace"))))
    tools = server._tool_manager.list_tools()
    assert len(tools) > 5
    for t in tools:
        text = json.dumps(t.output_schema)
        assert "$ref" not in text and "$defs" not in text, t.name


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
        ({**GOOD, "matches": [{"path": "a.py", "type": "file"}]}, False),
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
