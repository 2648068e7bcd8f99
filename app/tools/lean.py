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
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def lean(model: BaseModel) -> dict[str, Any]:
    """`model` as structured content: JSON without its defaults nor `LEAN_EXCLUDE`."""
    exclude = getattr(type(model), "LEAN_EXCLUDE", None)
    return model.model_dump(mode="json", exclude_defaults=True, exclude=exclude)
