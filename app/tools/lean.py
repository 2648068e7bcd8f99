"""What `structuredContent` holds: a result as lean as its readable text allows.

Some clients hand the model `structuredContent` instead of the text item
(docs/clients.md), and JSON repeats every key of every entry. So a result's
structured content leaves out what a client can restore from the output
schema (docs/tools.md#what-structuredcontent-holds):

- every field that holds its default (null, false, 0, a listing entry's
  `type` "file"), which the model's class declares and the published schema
  says (`default`, and absent from `required`);
- what the model's class names in `LEAN_EXCLUDE` (a pydantic `exclude`
  spec): a listing entry's `name` (the last part of its `path`) and
  `modified`, which the text does not show and `stat_path` answers.

Every field a client needs to continue or act holds a value that is never its
default when it matters (`has_more` true, `next_offset`, `note`, paths,
hashes), so it is always there when it is needed. Validating the lean dict
with the model's class gives back the whole result (`modified` aside), and
`text_format = "json"` sends the whole result as the text item.

`lean_of` makes it from the whole result's JSON (the dump the text is rendered
from), so a result is dumped once: each class's fields and their defaults are
read once (`_plan`); a class whose defaults are not plain values (a
`default_factory`, a list) is dumped again by pydantic, exactly.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, NamedTuple

from pydantic import BaseModel

PLAIN = (type(None), bool, int, float, str)


def lean(model: BaseModel) -> dict[str, Any]:
    """`model` as structured content: JSON without its defaults nor `LEAN_EXCLUDE`."""
    exclude = getattr(type(model), "LEAN_EXCLUDE", None)
    return model.model_dump(mode="json", exclude_defaults=True, exclude=exclude)


class _Field(NamedTuple):
    name: str
    default: Any  # `_REQUIRED` when there is none
    inner: type[BaseModel] | None  # the model a value holds (itself, in a list, or None)


_REQUIRED = object()


def _inner_model(annotation: Any) -> type[BaseModel] | bool | None:
    """The model class a field's value holds (`X`, `X | None`, `list[X]`), None when it
    holds none, False when it is some other shape this does not follow."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None:
        return None
    found = [_inner_model(a) for a in args if a is not type(None)]
    if origin in (typing.Union, types.UnionType, list) and len(found) == 1:
        return found[0]
    return False if any(f is not None for f in found) else None


@functools.cache
def _plan(cls: type[BaseModel]) -> tuple[_Field, ...] | None:
    """Each field of `cls` with its default, or None when a default is not a plain value
    or a field holds models in a shape `_inner_model` does not follow."""
    if getattr(cls, "LEAN_EXCLUDE", None) is not None:
        return None
    out = []
    for name, info in cls.model_fields.items():
        if info.default_factory is not None or info.alias is not None:
            return None
        default = _REQUIRED if info.is_required() else info.default
        if default is not _REQUIRED and not isinstance(default, PLAIN):
            return None
        inner = _inner_model(info.annotation)
        if inner is False or (inner is not None and _plan(inner) is None):
            return None
        out.append(_Field(name, default, inner))  # type: ignore[arg-type]
    return tuple(out)


def _drop_defaults(plan: tuple[_Field, ...], data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for f in plan:
        value = out.get(f.name, _REQUIRED)
        if value is _REQUIRED:
            continue
        if f.default is not _REQUIRED and value == f.default:  # as pydantic compares
            del out[f.name]
        elif f.inner is not None and value is not None:
            sub = _plan(f.inner)
            assert sub is not None  # `_plan` checked it
            out[f.name] = ([_drop_defaults(sub, v) for v in value] if isinstance(value, list)
                           else _drop_defaults(sub, value))
    return out


def lean_of(model: BaseModel, whole: dict[str, Any]) -> dict[str, Any]:
    """`lean(model)`, from `whole` (`model.model_dump(mode="json")`) without dumping again
    where `model`'s class allows it."""
    plan = _plan(type(model))
    return lean(model) if plan is None else _drop_defaults(plan, whole)
