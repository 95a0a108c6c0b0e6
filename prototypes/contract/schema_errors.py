"""JSON Schema violations in plain words: one line per error, naming the file (or other source),
the dotted key path and what was expected.

Every document the pipeline validates against a JSON Schema (prototype manifests, campaigns,
cells, network profiles) reports its errors through :func:`schema_error_line`, so a user reads
the same shape everywhere::

    t.yaml: key matrix.0.players.1: expected an integer >= 1, found 0 (an integer)
    cell.json: key colour: unknown key; expected one of duration_s, players, ...
    prototype.yaml: key transports.2.native_channels.0: expected one of reliable, unreliable,
        found "both" (a string)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

TOP_LEVEL = "(top level)"

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "array": "a list",
    "object": "a mapping",
    "boolean": "true or false",
    "null": "null",
}
_BOUND_WORDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
)
_SIZE_WORDS = {
    "minItems": ("at least", "item(s)"),
    "maxItems": ("at most", "item(s)"),
    "minLength": ("at least", "character(s)"),
    "maxLength": ("at most", "character(s)"),
    "minProperties": ("at least", "key(s)"),
    "maxProperties": ("at most", "key(s)"),
}
# Longer found values are cut here so that a line stays readable.
_FOUND_CHARS = 60


def key_path(parts: Iterable[str | int]) -> str:
    """("matrix", 0, "players") -> "matrix.0.players"; () -> "(top level)"."""
    return ".".join(str(p) for p in parts) or TOP_LEVEL


def describe_value(value: object) -> str:
    """A found value as JSON with its kind in words: '"five" (a string)', '0 (an integer)'."""
    kind = {
        type(None): "null", bool: "a boolean", int: "an integer", float: "a number",
        str: "a string", list: "a list", dict: "a mapping",
    }.get(type(value), type(value).__name__)  # fmt: skip
    text = json.dumps(value, default=str)
    if len(text) > _FOUND_CHARS:
        text = text[: _FOUND_CHARS - 3] + "..."
    return f"{text} ({kind})"


def schema_error_line(source: str, error: jsonschema.ValidationError) -> str:
    """``SOURCE: key PATH: what was expected, found what`` for one validation error."""
    return f"{source}: {schema_problem(error)}"


def schema_problem(error: jsonschema.ValidationError) -> str:
    """``key PATH: what was expected, found what`` (``(top level): ...`` for the document
    itself): :func:`schema_error_line` without the source, for error types that add the source
    themselves."""
    error = _most_specific(error)
    where = list(error.absolute_path)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "required":
        return _required(error, where, schema)
    if error.validator == "additionalProperties":
        return _additional(error, where, schema)
    what = _expected(error, schema)
    if "propertyNames" in list(error.absolute_schema_path)[-2:]:
        # A key's name broke the rule; the error's instance is that name, its path the mapping.
        what = f"bad key name {error.instance!r}: {what}"
    return _line(where, what)


def _expected(error: jsonschema.ValidationError, schema: Mapping[str, Any]) -> str:
    """What was expected and what was found, for every validator but required and
    additionalProperties (which name keys rather than a value)."""
    v = error.validator
    found = describe_value(error.instance)
    if v in ("oneOf", "anyOf") and not error.context:
        return error.message  # a oneOf matched by several branches
    if v in ("type", "oneOf", "anyOf"):
        # oneOf/anyOf only reach here when every branch failed on the type (see _most_specific).
        hint = ""
        if _types(schema) == ["string"] and isinstance(error.instance, int | float):
            hint = " (quote it: YAML reads unquoted 1.20 as a number)"
        elif set(_types(schema)) <= {"number", "integer"} and _numeric_text(error.instance):
            hint = " (write it without quotes: a quoted number is text)"
        return f"expected {_kind_words(schema)}, found {found}{hint}"
    if v == "enum":
        return f"expected one of {', '.join(map(str, error.validator_value))}, found {found}"
    if v == "const":
        return f"expected {error.validator_value}, found {found}"
    if v == "pattern":
        return f"expected text matching {error.validator_value}, found {found}"
    if v in dict(_BOUND_WORDS):
        return f"expected {_kind_words(schema)}, found {found}"
    if v in _SIZE_WORDS:
        most, unit = _SIZE_WORDS[v]
        return f"expected {most} {error.validator_value} {unit}, found {found}"
    if v == "uniqueItems":
        return f"expected no repeated items, found {found}"
    return error.message


def _numeric_text(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def _line(where: list[str | int], what: str) -> str:
    return f"key {key_path(where)}: {what}" if where else f"{TOP_LEVEL}: {what}"


def _most_specific(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf, the error of the branch the value was meant for.

    A branch that failed on the type is one the value was not written for (a mapping where the
    alternative is a string); when every branch failed on the type the error itself is kept and
    reads "expected a string or a mapping". Otherwise jsonschema's best_match picks among the
    remaining branches, descending through nested alternatives.
    """
    while error.validator in ("oneOf", "anyOf") and error.context:
        meant = [
            e
            for e in error.context
            if not (e.validator == "type" and list(e.absolute_path) == list(error.absolute_path))
        ]
        if not meant:
            return error
        chosen = best_match(meant)
        if chosen is None:
            return error
        error = chosen
    return error


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The types a (sub)schema allows, also through the branches of a oneOf/anyOf."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [str(t) for t in declared]
    out: list[str] = []
    for branch in [*schema.get("oneOf", []), *schema.get("anyOf", [])]:
        if isinstance(branch, Mapping):
            out += [t for t in _types(branch) if t not in out]
    return out


def _kind_words(schema: Mapping[str, Any]) -> str:
    """ "an integer >= 1 and <= 1000", "a string or a mapping", "true or false"."""
    types = _types(schema)
    names = [_TYPE_WORDS.get(t, t) for t in types]
    words = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)
    words = words or "a value"
    bounds = [f"{op} {schema[key]}" for key, op in _BOUND_WORDS if key in schema]
    if bounds and not types:
        words = "a number"
    return " ".join([words, " and ".join(bounds)]) if bounds else words


def _required(
    error: jsonschema.ValidationError, where: list[str | int], schema: Mapping[str, Any]
) -> str:
    # jsonschema reports each missing key as its own error, naming it only in the message
    # ("'name' is a required property").
    instance = error.instance if isinstance(error.instance, Mapping) else {}
    missing = [k for k in error.validator_value if k not in instance]
    named = [k for k in missing if error.message.startswith(repr(k))]
    keys = named[:1] or missing
    props = schema.get("properties", {})
    if len(keys) == 1:
        desc = props.get(keys[0], {}).get("description", "") if isinstance(props, Mapping) else ""
        return _line([*where, keys[0]], f"missing; expected {desc or 'a value'}")
    return _line(where, f"missing keys {', '.join(keys)}")


def _additional(
    error: jsonschema.ValidationError, where: list[str | int], schema: Mapping[str, Any]
) -> str:
    props = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    instance = error.instance if isinstance(error.instance, Mapping) else {}
    extra = [k for k in instance if k not in props and not any(re.search(p, k) for p in patterns)]
    allowed = [*sorted(props), *(f"keys matching {p}" for p in patterns)]
    expected = f"expected one of {', '.join(allowed)}" if allowed else "expected no keys here"
    if len(extra) == 1:
        return _line([*where, extra[0]], f"unknown key; {expected}")
    return _line(where, f"unknown keys {', '.join(map(str, extra))}; {expected}")
