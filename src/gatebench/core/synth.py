"""Example values synthesized from JSON Schema: the mock backend's bodies and ``body: synthesized``.

Deterministic: the same schema always gives the same value, so a mock answers the same bytes
through every gateway and a workload sends the same body to every target. The IR rewrites
every ``$ref`` to ``#/schemas/<name>`` (a key of ``Api.schemas``); references are followed
with a depth limit so recursive schemas stay finite (a recursive property is left out, a
recursive array item gives an empty array). A schema no finite value matches (a required
property, or a non-empty array, whose schema leads back to itself) still gives a value: the
branch it cannot close is null there; :func:`closes` tells the two apart, so that a plan can
say so where it asks for such a body.

Precedence, first match wins: ``const``, ``example``, ``examples[0]``, ``default``, ``enum[0]``,
then ``allOf`` (merged), ``oneOf``/``anyOf`` (first alternative), then by ``type`` (the first
non-null of a type list; inferred from ``properties``/``items`` when absent). Strings honour
``format`` (date-time, date, time, email, uuid, uri, hostname, ipv4, ipv6, byte, binary,
password) and ``minLength``/``maxLength``/``pattern``-free lengths; numbers honour
``minimum``/``maximum`` (exclusive too) and ``multipleOf``; arrays ``minItems``/``maxItems``;
objects list every ``required`` property and every declared property.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 8
"""References followed along one path before a branch is cut short."""

_FORMATS: dict[str, str] = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uri-reference": "/example",
    "iri": "https://example.com/",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "ZXhhbXBsZQ==",
    "binary": "example",
    "password": "example",
    "duration": "P1D",
    "regex": ".*",
    "json-pointer": "/example",
}


class _Cut(Exception):
    """A branch reached the depth limit through references (recursion)."""


def synthesize(schema: Any, schemas: dict[str, Any] | None = None) -> Any:
    """An example value valid for ``schema`` in the common cases (see the module docstring);
    where no finite value is valid (:func:`closes` is false), the recursion is cut with null."""
    try:
        return _value(schema, schemas or {}, (), 0)
    except _Cut:
        return _value(schema, schemas or {}, (), 0, lenient=True)


def closes(schema: Any, schemas: dict[str, Any] | None = None) -> bool:
    """Whether :func:`synthesize` finds a finite value of ``schema`` without cutting a branch
    it requires (a required property or a non-empty array that leads back to its own schema)."""
    try:
        _value(schema, schemas or {}, (), 0)
    except _Cut:
        return False
    return True


def _resolve(schema: dict[str, Any], schemas: dict[str, Any], seen: tuple[str, ...]) -> Any:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema, seen
    name = ref.removeprefix("#/schemas/")
    if name == ref or name not in schemas:
        return {}, seen  # an unknown reference: anything goes
    if seen.count(name) >= 1 or len(seen) >= MAX_DEPTH:
        raise _Cut()
    target = schemas[name]
    if isinstance(target, dict) and len(schema) > 1:  # siblings of $ref (3.1) apply too
        target = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return target, (*seen, name)


def _value(
    schema: Any, schemas: dict[str, Any], seen: tuple[str, ...], depth: int, lenient: bool = False
) -> Any:
    """``lenient``: a branch that cannot close is null instead of cutting its parent."""
    if schema is True or not isinstance(schema, dict):
        return None if schema is False else "example"
    schema, seen = _resolve(schema, schemas, seen)
    if not isinstance(schema, dict):
        return "example"
    if "const" in schema:
        return schema["const"]
    if "example" in schema:
        return schema["example"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in all_of:
            try:
                resolved, _ = (
                    _resolve(part, schemas, seen) if isinstance(part, dict) else ({}, seen)
                )
            except _Cut:
                continue
            merged = _merge(merged, resolved if isinstance(resolved, dict) else {})
        return _value(merged, schemas, seen, depth + 1, lenient)
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            rest = {k: v for k, v in schema.items() if k != key}
            for option in options:
                try:
                    if isinstance(option, dict) and rest:
                        resolved, inner = _resolve(option, schemas, seen)
                        return _value(_merge(rest, resolved), schemas, inner, depth + 1, lenient)
                    return _value(option, schemas, seen, depth + 1, lenient)
                except _Cut:
                    continue
            if lenient:
                return None
            raise _Cut()
    kind = _type(schema)
    if kind == "object":
        return _object(schema, schemas, seen, depth, lenient)
    if kind == "array":
        return _array(schema, schemas, seen, depth, lenient)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return int(_number(schema, integer=True))
    if kind == "number":
        return _number(schema, integer=False)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "example"


def _type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "additionalProperties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "multipleOf")):
        return "number"
    if any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
        return "string"
    return None


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if key == "properties" and isinstance(value, dict):
            out["properties"] = {**out.get("properties", {}), **value}
        elif key == "required" and isinstance(value, list):
            out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
        else:
            out.setdefault(key, value)
    return out


def _object(
    schema: dict[str, Any],
    schemas: dict[str, Any],
    seen: tuple[str, ...],
    depth: int,
    lenient: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    properties = schema.get("properties")
    raw_required = schema.get("required")
    required: list[Any] = raw_required if isinstance(raw_required, list) else []
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if isinstance(sub, dict) and (sub.get("readOnly") is True and name not in required):
                continue
            try:
                out[str(name)] = _value(sub, schemas, seen, depth + 1, lenient)
            except _Cut:
                if name in required and not lenient:
                    raise
                if name in required:
                    out[str(name)] = None
    for name in required:
        if isinstance(name, str) and name not in out:
            out[name] = "example"
    return out


def _array(
    schema: dict[str, Any],
    schemas: dict[str, Any],
    seen: tuple[str, ...],
    depth: int,
    lenient: bool,
) -> list[Any]:
    low = schema.get("minItems", 1)
    high = schema.get("maxItems")
    count = max(low if isinstance(low, int) else 1, 1)
    if isinstance(high, int):
        count = min(count, high)
    items = schema.get("items", {})
    if isinstance(items, list):  # draft-4 tuple form
        items = items[0] if items else {}
    try:
        item = _value(items, schemas, seen, depth + 1, lenient)
    except _Cut:
        if isinstance(schema.get("minItems"), int) and schema["minItems"] > 0 and not lenient:
            raise
        return []
    return [item] * count


def _string(schema: dict[str, Any]) -> str:
    fmt = schema.get("format")
    text = _FORMATS.get(fmt, "example") if isinstance(fmt, str) else "example"
    low = schema.get("minLength")
    high = schema.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    if isinstance(high, int) and high >= 0 and len(text) > high:
        text = text[:high]
    return text


def _number(schema: dict[str, Any], *, integer: bool) -> float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    ex_low = schema.get("exclusiveMinimum")
    ex_high = schema.get("exclusiveMaximum")
    step = 1.0 if integer else 0.5
    # OpenAPI 3.0 / draft 4 booleans; 3.1 numbers.
    if ex_low is True and isinstance(low, int | float):
        low = low + step
    elif isinstance(ex_low, int | float) and not isinstance(ex_low, bool):
        low = ex_low + step
    if ex_high is True and isinstance(high, int | float):
        high = high - step
    elif isinstance(ex_high, int | float) and not isinstance(ex_high, bool):
        high = ex_high - step
    value: float
    if isinstance(low, int | float) and not isinstance(low, bool):
        value = float(low)
    elif isinstance(high, int | float) and not isinstance(high, bool):
        value = float(min(high, 1))
    else:
        value = 1.0
    if integer:
        value = float(math.ceil(value))
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and not isinstance(multiple, bool) and multiple > 0:
        value = math.ceil(value / multiple) * multiple
    if integer:
        return float(int(value))
    return value


__all__ = ["MAX_DEPTH", "closes", "synthesize"]
