"""What the tool handlers declare and how their results become text (`app/tools/render.py`).

A handler answers a `CallToolResult` and says so, with the model of its structured
content beside it (`Annotated[CallToolResult, Model]`: the SDK publishes that
model's schema, pinned in tests/service/output_schemas.json). The text item's
renderer is found by the model's class: a model that only shares a result's
name is sent as JSON, never printed by another result's renderer.
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any

import pytest
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, create_model

from app.server import collect_tools
from app.tools.base import ok_result
from app.tools.deep_research import FetchResult, SearchResult
from app.tools.render import RENDERERS

# Handlers still declared as returning their model, each with why.
# An entry that no longer occurs fails the test: delete it when the handler is typed.
UNTYPED: dict[str, str] = {}
# OpenAI's published shape: one text item holding exactly the JSON.
JSON_ONLY = {SearchResult, FetchResult}


def declared() -> dict[str, Any]:
    """Each tool's return annotation, resolved."""
    return {spec.name: typing.get_type_hints(fn, include_extras=True)["return"]
            for spec, fn in collect_tools()}


def model_of(annotation: Any) -> Any:
    if typing.get_origin(annotation) is Annotated:
        return typing.get_args(annotation)[1]
    return annotation


def test_every_handler_declares_a_call_result_and_its_model() -> None:
    wrong = []
    for name, annotation in declared().items():
        args = typing.get_args(annotation) if typing.get_origin(annotation) is Annotated else ()
        typed = len(args) == 2 and args[0] is CallToolResult and issubclass(args[1], BaseModel)
        if not typed and name not in UNTYPED:
            wrong.append(f"{name} -> {annotation}")
    assert wrong == []


def test_every_listed_untyped_handler_is_still_untyped() -> None:
    typed = {name for name, annotation in declared().items()
             if typing.get_origin(annotation) is Annotated}
    assert set(UNTYPED) & typed == set(), "these are typed now: delete them from UNTYPED"


def test_every_declared_model_has_a_renderer_or_is_sent_as_json() -> None:
    models = {name: model_of(a) for name, a in declared().items()}
    assert {n: m for n, m in models.items() if m not in RENDERERS and m not in JSON_ONLY} == {}
    assert set(RENDERERS) <= set(models.values()), "a renderer no tool answers with"


@pytest.mark.parametrize("name", sorted(cls.__name__ for cls in RENDERERS))
def test_a_model_sharing_a_results_name_is_sent_as_json(name: str) -> None:
    impostor = create_model(name, x=(int, ...))
    result = ok_result(impostor(x=1))
    assert isinstance(result, CallToolResult)
    assert result.structured_content == {"x": 1}
    item = result.content[0]
    assert isinstance(item, TextContent) and json.loads(item.text) == {"x": 1}
