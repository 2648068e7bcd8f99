"""Tool arguments at the edge: closed, flat input schemas and errors in the server's words.

The SDK derives each tool's input schema and argument model from the handler's
signature. Left as is, the schema is open (an unknown argument is dropped
without a word, so a misspelled `dryrun` writes), `edit_file`'s is nested
through `$defs`/`$ref`, and every schema carries pydantic `title`s and length
bounds outside OpenAI's strict subset. `published_schema()` rewrites it once at
registration; `check_names()` refuses an argument the tool does not take before
the SDK validates the rest (once, as it calls the tool), and `describe()` says
what that validation refused, naming each argument.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

from app.messages import location, sentence, shown
from app.tools.base import flat_schema

# Kept out of the published schema: `title` is noise for a model; length bounds are outside
# OpenAI's strict subset for some models and are enforced here anyway (the error says the limit).
DROPPED_KEYWORDS = frozenset({"title", "minLength", "maxLength"})
# Ranges are enforced at the edge and named by the error (`context must be at most 10 (got
# 20)`), not published: a model pays for a schema's every token on every turn, and meets a
# range once in a long while.
RANGE_KEYWORDS = ("minimum", "maximum", "minItems", "maxItems")
# A default that is its type's empty value says nothing the parameter's being optional does not.
EMPTY_DEFAULTS: tuple[Any, ...] = (None, False, "", 0, [])
NULL = {"type": "null"}
MAX_REPORTED = 3
MAX_GUESSED = 64


def _lean(node: dict[str, Any]) -> dict[str, Any]:
    """One schema node as a model reads it: a nullable value as one `type` list (not an
    `anyOf` of two schemas), no empty default, no range."""
    variants = node.get("anyOf")
    if isinstance(variants, list) and len(variants) == 2 and NULL in variants:
        other = variants[1 - variants.index(NULL)]
        if isinstance(other.get("type"), str):
            node = {k: v for k, v in node.items() if k != "anyOf"}
            node |= {**other, "type": [other["type"], "null"]}
    if "default" in node and any(
        node["default"] == e and type(node["default"]) is type(e) for e in EMPTY_DEFAULTS
    ):
        node = {k: v for k, v in node.items() if k != "default"}
    return {k: v for k, v in node.items() if k not in RANGE_KEYWORDS}


def published_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema as clients see it: flat, every object closed, no extra keywords,
    each node as lean as `_lean` makes it."""

    def close(node: Any) -> Any:
        if isinstance(node, list):
            return [close(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: close(v) for k, v in node.items() if k not in DROPPED_KEYWORDS}
        if "properties" in node:  # keys of `properties` are names, not keywords
            out["properties"] = {k: close(v) for k, v in node["properties"].items()}
        if out.get("type") == "object":
            out.setdefault("properties", {})
            out["additionalProperties"] = False
        return _lean(out)

    return close(flat_schema(schema))


def _normal(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


# Tool names of the reference filesystem server a model may have learned, and ours for them.
ELSEWHERE = {
    "read_file": "read_text_file",
    "get_file_info": "stat_path",
    "list_allowed_directories": "list_roots",
    "list_directory_with_sizes": "list_directory",
    "directory_tree": "list_directory",
}


def _guess(given: str, known: list[str]) -> str | None:
    """The known name `given` most probably meant, or None (a long name gets no guess)."""
    if len(given) > MAX_GUESSED:  # a name no one misspelled
        return None
    g = _normal(given)
    guess = [k for k in known if _normal(k) == g]  # startLine, overWrite, dry-run
    guess = guess or difflib.get_close_matches(given, known, n=1, cutoff=0.75)  # dryrun
    if not guess and len(g) >= 4:  # depth -> max_depth, sha256 -> expected_sha256
        part = [k for k in known if g in _normal(k)]
        guess = part if len(part) == 1 else []
    return guess[0] if guess else None


def _unknown(kind: str, given: str, known: list[str], guess: str | None, valid: str) -> str:
    hint = f" (did you mean '{guess}'?)" if guess else ""
    return f"unknown {kind} {shown(given)}{hint}; {valid}"


def unknown_argument(tool: str, known: list[str], given: str) -> str:
    """`unknown argument 'dryrun' (did you mean 'dry_run'?); edit_file takes: path, ...`."""
    takes = ", ".join(known) if known else "no arguments"
    return _unknown("argument", given, known, _guess(given, known), f"{tool} takes: {takes}")


def unknown_tool(given: str, known: list[str]) -> str:
    """`unknown tool 'read_txt_file' (did you mean 'read_text_file'?); the tools are: ...`,
    the same words as an unknown argument's; a reference server's name gets ours for it."""
    guess = ELSEWHERE.get(given) if ELSEWHERE.get(given) in known else _guess(given, known)
    return _unknown("tool", given, known, guess, "the tools are: " + ", ".join(known))


def _properties_at(schema: dict[str, Any], loc: tuple[Any, ...]) -> list[str]:
    """The property names of the object at `loc` in a flat schema (for nested unknown keys)."""
    node: Any = schema
    for part in loc:
        if not isinstance(node, dict):
            return []
        if isinstance(part, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part, {})
        if isinstance(node, dict) and "anyOf" in node:
            node = next((x for x in node["anyOf"] if x.get("type") != "null"), {})
    return list(node.get("properties", {})) if isinstance(node, dict) else []


def describe(tool: str, schema: dict[str, Any], exc: ValidationError) -> str:
    """At most a few short sentences, one per faulty argument, naming each."""
    said: list[str] = []
    seen: set[str] = set()
    errors = exc.errors(include_url=False)
    # An unknown key explains the other errors at the same place (a missing `old_text`
    # beside an `oldText`): say it alone.
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    for err in unknown or errors:
        loc = tuple(err["loc"])
        where = location(loc)
        if where in seen:
            continue
        seen.add(where)
        if err["type"] == "extra_forbidden":
            parent = location(loc[:-1])
            known = _properties_at(schema, loc[:-1])
            said.append(
                unknown_argument(f"{parent} in {tool}" if parent else tool, known, str(loc[-1]))
            )
        else:
            said.append(sentence(where, err))
        if len(said) == MAX_REPORTED:
            break
    more = len({location(tuple(e["loc"])) for e in (unknown or errors)}) - len(said)
    return "; ".join(said) + (f"; and {more} more" if more > 0 else "")


def nulls_as_defaults(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` without the explicit nulls given to optional parameters.

    Many clients send `null` for a parameter the model left unset (and OpenAI strict
    mode makes the model send every parameter); for a parameter with a default, null
    means that default, never a type error. A required parameter's null stays, and is
    refused by validation.
    """
    required = set(schema.get("required", ()))
    if not any(v is None and k not in required for k, v in arguments.items()):
        return arguments
    return {k: v for k, v in arguments.items() if v is not None or k in required}


def check_names(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """A refusal naming the first argument the tool does not take, else None (the SDK's
    validation of the values, which would drop it silently, may proceed)."""
    known = list(schema.get("properties", {}))
    for given in arguments:
        if given not in known:
            return unknown_argument(tool, known, given)
    return None
