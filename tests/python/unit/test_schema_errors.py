"""prototypes.contract.schema_errors: one line per JSON Schema violation, naming the source, the
dotted key path and what was expected; one test per kind of violation."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from prototypes.contract.schema_errors import key_path, schema_error_line, schema_problem

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$", "description": "Lower-case name."},
        "version": {"type": "string"},
        "schema": {"const": 1},
        "players": {"type": "integer", "minimum": 1, "maximum": 1000},
        "loss": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "workload": {"enum": ["idle", "active"]},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}},
        "label": {"type": "string", "minLength": 2},
        "env": {"type": "object", "propertyNames": {"pattern": "^[A-Z_]+$"}},
        "matrix": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"players": {"type": "integer", "minimum": 1}},
            },
        },
        "transports": {
            "type": "array",
            "items": {
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}},
                    },
                ]
            },
        },
    },
}


def problems(doc: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [schema_problem(e) for e in errors]


def only(doc: dict[str, Any]) -> str:
    (problem,) = problems({"name": "ok", **doc})
    return problem


def test_key_path_is_dotted() -> None:
    assert key_path(["matrix", 0, "players"]) == "matrix.0.players"
    assert key_path([]) == "(top level)"


def test_line_names_the_source_first() -> None:
    (error,) = jsonschema.Draft202012Validator(SCHEMA).iter_errors({"name": "ok", "players": 0})
    assert schema_error_line("campaigns/t.yaml", error) == (
        "campaigns/t.yaml: key players: expected an integer >= 1 and <= 1000, found 0 (an integer)"
    )


def test_missing_key_names_the_key_and_its_description() -> None:
    assert problems({}) == ["key name: missing; expected Lower-case name."]


def test_each_missing_key_is_its_own_line() -> None:
    assert problems({"matrix": [{}], "transports": [{}]}) == [
        "key name: missing; expected Lower-case name.",
        "key transports.0.name: missing; expected a value",
    ]


def test_unknown_key_lists_the_allowed_keys() -> None:
    assert only({"matrix": [{"players": 2, "colour": "red"}]}) == (
        "key matrix.0.colour: unknown key; expected one of players"
    )


def test_several_unknown_keys_share_one_line() -> None:
    assert only({"matrix": [{"size": 1, "colour": "red"}]}) == (
        "key matrix.0: unknown keys size, colour; expected one of players"
    )


def test_wrong_type_says_the_type_in_words() -> None:
    assert only({"flag": "yes"}) == 'key flag: expected true or false, found "yes" (a string)'
    assert only({"tags": "a"}) == 'key tags: expected a list, found "a" (a string)'
    assert only({"tags": [None]}) == "key tags.0: expected a string, found null (null)"


def test_number_where_a_string_is_expected_gets_the_yaml_hint() -> None:
    assert only({"version": 1.2}) == (
        "key version: expected a string, found 1.2 (a number) "
        "(quote it: YAML reads unquoted 1.20 as a number)"
    )


def test_enum_lists_the_allowed_values() -> None:
    assert only({"workload": "dance"}) == (
        'key workload: expected one of idle, active, found "dance" (a string)'
    )


def test_const_names_the_one_value() -> None:
    assert only({"schema": 2}) == "key schema: expected 1, found 2 (an integer)"


def test_pattern_names_the_pattern() -> None:
    assert problems({"name": "Bad"}) == [
        'key name: expected text matching ^[a-z]+$, found "Bad" (a string)'
    ]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"players": 0}, "key players: expected an integer >= 1 and <= 1000, found 0"),
        ({"players": 1001}, "key players: expected an integer >= 1 and <= 1000, found 1001"),
        ({"loss": 0}, "key loss: expected a number > 0 and < 1, found 0"),
        ({"loss": 1.0}, "key loss: expected a number > 0 and < 1, found 1.0"),
        ({"matrix": [{"players": 0}]}, "key matrix.0.players: expected an integer >= 1, found 0"),
    ],
)
def test_bounds_name_both_limits(doc: dict[str, Any], expected: str) -> None:
    assert only(doc).startswith(expected)


def test_sizes_say_how_many() -> None:
    assert only({"tags": []}) == "key tags: expected at least 1 item(s), found [] (a list)"
    assert (
        only({"label": "x"}) == 'key label: expected at least 2 character(s), found "x" (a string)'
    )


def test_repeated_items() -> None:
    assert only({"tags": ["a", "a"]}) == (
        'key tags: expected no repeated items, found ["a", "a"] (a list)'
    )


def test_bad_key_name() -> None:
    assert only({"env": {"lower": "1"}}) == (
        "key env: bad key name 'lower': expected text matching ^[A-Z_]+$, "
        'found "lower" (a string)'
    )


def test_alternatives_that_all_fail_on_type_list_every_type() -> None:
    assert only({"transports": [5]}) == (
        "key transports.0: expected a string or a mapping, found 5 (an integer)"
    )


def test_alternative_meant_for_the_value_explains_itself() -> None:
    # A mapping was meant for the mapping branch: its problem, not "5 is not a string".
    assert only({"transports": [{"name": "tcp", "mtu": 5}]}) == (
        "key transports.0.mtu: unknown key; expected one of name"
    )


def test_document_itself_is_the_top_level() -> None:
    assert problems(["a list"]) == ['(top level): expected a mapping, found ["a list"] (a list)']
