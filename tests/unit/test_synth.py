"""The JSON-Schema example synthesizer: deterministic, recursion-safe, honours constraints."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft4Validator, Draft202012Validator

from gatebench.core.synth import UUID_PREFIX, closes, numbered, numbered_value, synthesize


def test_precedence_const_example_default_enum() -> None:
    assert synthesize({"type": "string", "const": "c", "example": "e"}) == "c"
    assert synthesize({"type": "string", "example": "e", "default": "d"}) == "e"
    assert synthesize({"type": "string", "examples": ["x", "y"]}) == "x"
    assert synthesize({"type": "integer", "default": 7, "enum": [1, 2]}) == 7
    assert synthesize({"enum": ["red", "green"]}) == "red"


def test_formats_and_lengths() -> None:
    assert synthesize({"type": "string", "format": "date-time"}) == "2024-01-01T00:00:00Z"
    assert (
        synthesize({"type": "string", "format": "uuid"}) == "00000000-0000-4000-8000-000000000000"
    )
    assert synthesize({"type": "string", "format": "email"}) == "user@example.com"
    assert synthesize({"type": "string", "minLength": 10}) == "examplexxx"
    assert synthesize({"type": "string", "maxLength": 3}) == "exa"


def test_numbers_respect_bounds() -> None:
    assert synthesize({"type": "integer", "minimum": 5}) == 5
    assert synthesize({"type": "integer", "minimum": 5, "exclusiveMinimum": True}) == 6
    assert synthesize({"type": "integer", "exclusiveMinimum": 9}) == 10
    assert synthesize({"type": "number", "maximum": 0.25}) == 0.25
    assert synthesize({"type": "integer", "minimum": 3, "multipleOf": 5}) == 5
    assert synthesize({"type": "number"}) == 1.0


def test_objects_arrays_and_type_lists() -> None:
    schema = {
        "type": "object",
        "required": ["id", "tags"],
        "properties": {
            "id": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "secret": {"type": "string", "readOnly": True},
        },
    }
    assert synthesize(schema) == {"id": 1, "tags": ["example", "example"]}


def test_refs_all_of_one_of() -> None:
    schemas = {
        "Base": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}},
        "Named": {
            "allOf": [{"$ref": "#/schemas/Base"}, {"properties": {"name": {"type": "string"}}}]
        },
    }
    assert synthesize({"$ref": "#/schemas/Named"}, schemas) == {"id": 1, "name": "example"}
    assert synthesize({"oneOf": [{"type": "boolean"}, {"type": "string"}]}) is True
    assert synthesize({"anyOf": [{"$ref": "#/schemas/Base"}]}, schemas) == {"id": 1}


def test_recursive_schema_is_finite() -> None:
    schemas = {
        "Node": {
            "type": "object",
            "required": ["value"],
            "properties": {
                "value": {"type": "integer"},
                "next": {"$ref": "#/schemas/Node"},
                "children": {"type": "array", "items": {"$ref": "#/schemas/Node"}},
            },
        }
    }
    assert synthesize({"$ref": "#/schemas/Node"}, schemas) == {"value": 1, "children": []}
    assert closes({"$ref": "#/schemas/Node"}, schemas)


def test_a_schema_no_finite_value_matches_still_gives_a_value_and_says_so() -> None:
    """A required property (or a non-empty list) that leads back to its own schema: no finite
    JSON matches it. The value ends that branch with null (the request is still sent, the
    plan warns) instead of raising out of a run."""
    schemas = {
        "Node": {
            "type": "object",
            "required": ["child", "id"],
            "properties": {"child": {"$ref": "#/schemas/Node"}, "id": {"type": "integer"}},
        },
        "Forest": {
            "type": "object",
            "required": ["trees"],
            "properties": {
                "trees": {"type": "array", "minItems": 1, "items": {"$ref": "#/schemas/Forest"}}
            },
        },
        "Either": {"oneOf": [{"$ref": "#/schemas/Either"}]},
    }
    node = {"$ref": "#/schemas/Node"}
    assert not closes(node, schemas)
    assert synthesize(node, schemas) == {"child": None, "id": 1}
    assert not closes({"$ref": "#/schemas/Forest"}, schemas)
    assert synthesize({"$ref": "#/schemas/Forest"}, schemas) == {"trees": []}
    assert not closes({"$ref": "#/schemas/Either"}, schemas)
    assert synthesize({"$ref": "#/schemas/Either"}, schemas) is None
    wrapped = {"type": "object", "properties": {"n": node}}  # optional: left out, closes
    assert closes(wrapped, schemas) and synthesize(wrapped, schemas) == {}


def test_deterministic() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}}
    assert synthesize(schema) == synthesize(schema)


VALID_BY_CONSTRUCTION = [
    {"type": "string", "pattern": r"^[A-Z]{3}-\d{2}$"},
    {"type": "string", "pattern": r"^\d{5}(-\d{4})?$", "minLength": 10},
    {"type": "string", "pattern": r"^(ab|cd){2,}$"},
    {"type": "string", "pattern": r"^\+?[1-9]\d{1,14}$", "minLength": 8},
    {"type": "string", "pattern": r"^#[0-9a-fA-F]{6}$"},
    {"type": "string", "pattern": r"^\S+@\S+\.\S+$"},
    {"type": "string", "pattern": r"[\t]", "minLength": 4},
    {"type": "string", "pattern": r"^[^a-z]+$", "maxLength": 3},
    {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string", "format": "date"}],
        "items": False,
    },
    {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}], "minItems": 3},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3, "uniqueItems": True},
    {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 3, "uniqueItems": True},
    {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": True},
    {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2},
    {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 3},
    # allOf: a property both parts describe is both (minLength 10 was lost to maxLength 12)
    {
        "allOf": [
            {"required": ["a"], "properties": {"a": {"type": "string", "minLength": 10}}},
            {"required": ["b"], "properties": {"a": {"maxLength": 12}, "b": {"minimum": 5}}},
        ]
    },
    {
        "properties": {"n": {"type": "integer", "minimum": 10}},
        "allOf": [{"properties": {"n": {"maximum": 20, "multipleOf": 3}}}],
    },
    # bounds: an open lower bound stepped past the maximum (0.5 for a maximum of 0.2)
    {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 0.2},
    {"type": "integer", "maximum": -3.5},
    {"type": "number", "multipleOf": 0.1, "minimum": 0.25},  # 0.30000000000000004
    {
        "type": "array",
        "items": {"type": "number", "multipleOf": 0.1},
        "minItems": 3,
        "uniqueItems": True,
    },
    # unique objects ({"k": "example"} three times)
    {
        "type": "array",
        "minItems": 3,
        "uniqueItems": True,
        "items": {"type": "object", "properties": {"k": {"type": "string"}}},
    },
    # a required name no property describes takes additionalProperties' schema ('example')
    {
        "type": "object",
        "required": ["count"],
        "minProperties": 3,
        "additionalProperties": {"type": "integer", "minimum": 2},
    },
]

VALID_2020 = [  # OpenAPI 3.1's numeric exclusive bounds and contentEncoding
    {"type": "number", "exclusiveMinimum": 0, "maximum": 0.3},
    {"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 4},
    {"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1.2},
]


@pytest.mark.parametrize("schema", VALID_2020, ids=lambda s: json.dumps(s)[:60])
def test_what_is_synthesized_is_valid_for_its_2020_12_schema(schema: dict[str, Any]) -> None:
    value = synthesize(schema)
    assert not list(Draft202012Validator(schema).iter_errors(value)), value


def test_a_discriminator_names_the_schema_the_value_was_built_from() -> None:
    """The Discriminator Object's property went out as 'example': a server that dispatches
    on it refused every request. Now the mapping's key, else the schema's name, also when a
    schema that inherits the discriminator (allOf) is built by itself."""
    pet = {
        "type": "object",
        "required": ["petType"],
        "properties": {"petType": {"type": "string"}},
        "discriminator": {"propertyName": "petType"},
    }
    schemas = {
        "Pet": pet,
        "Cat": {
            "allOf": [{"$ref": "#/schemas/Pet"}, {"properties": {"meow": {"type": "boolean"}}}]
        },
        "Dog": {
            "allOf": [{"$ref": "#/schemas/Pet"}, {"properties": {"bark": {"type": "boolean"}}}]
        },
    }
    either = [{"$ref": "#/schemas/Cat"}, {"$ref": "#/schemas/Dog"}]
    mapped = {
        "oneOf": either,
        "discriminator": {
            "propertyName": "petType",
            "mapping": {"kitty": "#/components/schemas/Cat", "doggo": "#/components/schemas/Dog"},
        },
    }
    assert synthesize(mapped, schemas) == {"petType": "kitty", "meow": True}
    plain = {"anyOf": either, "discriminator": {"propertyName": "petType"}}
    assert synthesize(plain, schemas) == {"petType": "Cat", "meow": True}
    assert synthesize({"$ref": "#/schemas/Dog"}, schemas) == {"petType": "Dog", "bark": True}
    assert synthesize({"type": "string", "contentEncoding": "base64"}) == "ZXhhbXBsZQ=="


@pytest.mark.parametrize("schema", VALID_BY_CONSTRUCTION, ids=lambda s: json.dumps(s)[:60])
def test_what_is_synthesized_is_valid_for_its_schema(schema: dict[str, Any]) -> None:
    """A server that validates its input answers 400 to a body its schema refuses: pattern,
    prefixItems (and draft 4's list of items), uniqueItems and minProperties are honoured (a
    pattern was ignored: 'example' was sent for ^[A-Z]{3}-\\d{2}$)."""
    value = synthesize(schema)
    validator = Draft202012Validator if "prefixItems" in schema else Draft4Validator
    assert not list(validator(schema).iter_errors(value)), value


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(\d+|-|:|T)+Z?X$",  # a repetition inside a repetition: exponential to check
        r"^(?!admin)[a-z]+$",  # a lookaround
        r"(a)\1",  # a back-reference
        r"^\p{L}+$",  # ECMA 262, not Python
        "x{1000000}",  # longer than a string made to match
    ],
)
def test_a_pattern_not_matched_in_linear_time_is_left_as_it_is(pattern: str) -> None:
    """No pattern from a description is run against a string that could take exponential
    time: such a pattern is not synthesized from (the value is as without it)."""
    assert synthesize({"type": "string", "pattern": pattern, "minLength": 8}) == "examplex"


def test_read_only_properties_are_not_sent_and_write_only_ones_not_answered() -> None:
    """OpenAPI: a readOnly property, required or not, is not part of a request (a server
    that validates refuses a client-set id), and a writeOnly one not part of a response (the
    mock never echoes a password); ``required`` applies to the other direction only."""
    schema = {
        "type": "object",
        "required": ["id", "name", "password"],
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "name": {"type": "string"},
            "password": {"type": "string", "writeOnly": True},
            "stamp": {"$ref": "#/schemas/Stamp"},
        },
    }
    schemas = {"Stamp": {"type": "string", "format": "date-time", "readOnly": True}}
    assert synthesize(schema, schemas) == {"name": "example", "password": "example"}
    assert synthesize(schema, schemas, sent_by="server") == {
        "id": 1,
        "name": "example",
        "stamp": "2024-01-01T00:00:00Z",
    }


@pytest.mark.parametrize(
    ("schema", "count", "form"),
    [
        ({"type": "string"}, 150, (1, "v", 0)),
        ({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, 21, (1, "AAA-00", 2)),
        ({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, 9_999, (1, "AAA-", 4)),
        ({"type": "string", "pattern": "^ord_[a-z0-9]{8}$"}, 500, (1, "ord_aaaaa", 3)),
        ({"type": "string", "minLength": 6, "maxLength": 8}, 40, (1, "examp", 2)),
        ({"type": "string", "format": "uuid"}, 3, (1, UUID_PREFIX, 12)),
        ({"type": "integer", "minimum": 1, "maximum": 50}, 50, (1, None, 0)),
        ({"type": "integer", "minimum": 10, "exclusiveMinimum": True}, 5, (11, None, 0)),
        ({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 4}, 3, (1, None, 0)),
    ],
)
def test_numbered_values_valid_for_their_schema(
    schema: dict[str, Any], count: int, form: tuple[Any, ...]
) -> None:
    """A parameter's distinct synthetic values (an import's replay) are valid for its schema:
    every one of them, not only the first."""
    assert numbered(schema, count) == form
    start, prefix, width = form
    pattern = schema.get("pattern", "")
    for n in range(start, start + count):
        value = numbered_value(n, prefix, width)
        assert re.search(pattern, str(value)), value
        assert len(str(value)) <= schema.get("maxLength", 99) or prefix is None
        assert value != "" and (prefix is not None or value <= schema.get("maximum", 1e9))


@pytest.mark.parametrize(
    ("schema", "count"),
    [
        ({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, 10_000),  # more than it has
        ({"type": "string", "pattern": "^[a-z]+$"}, 2),  # no digit fits
        ({"type": "string", "format": "date"}, 2),
        ({"type": "integer", "minimum": 1, "maximum": 50}, 51),
        ({"type": "integer", "multipleOf": 5}, 3),
        ({"type": "string", "maxLength": 1}, 10),
        ({"type": "string", "enum": ["a", "b"]}, 2),
    ],
)
def test_no_numbered_form_where_none_is_valid(schema: dict[str, Any], count: int) -> None:
    assert numbered(schema, count) is None


def test_a_numbered_prefix_keeps_to_the_characters_asked() -> None:
    schema = {"type": "string", "pattern": "^a b [0-9]{3}$"}
    assert numbered(schema, 5) == (1, "a b 00", 1)
    assert numbered(schema, 5, prefixes=r"[a-z]*") is None
