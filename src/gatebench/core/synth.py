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
password), ``minLength``/``maxLength`` and ``pattern`` (a string built from the pattern's
parse tree, where it is one Python's ``re`` reads and can match in linear time); numbers
honour ``minimum``/``maximum`` (exclusive too) and ``multipleOf``; arrays
``minItems``/``maxItems``, ``prefixItems`` (and draft 4's list of ``items``) and
``uniqueItems``; objects list every ``required`` property and every declared property, and
more (``key1``...) up to ``minProperties``, but never a ``readOnly`` one in a request nor a
``writeOnly`` one in a response (OpenAPI: ``required`` applies to the other direction only).
"""

from __future__ import annotations

import math
import re
import re._parser as _sre  # type: ignore[import-not-found]  # a pattern's parse tree
from collections.abc import Callable
from decimal import Decimal
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


def synthesize(
    schema: Any, schemas: dict[str, Any] | None = None, *, sent_by: str = "client"
) -> Any:
    """An example value valid for ``schema`` in the common cases (see the module docstring);
    where no finite value is valid (:func:`closes` is false), the recursion is cut with null.
    ``sent_by``: ``client`` (a request: ``readOnly`` properties are left out, required or not)
    or ``server`` (a response: ``writeOnly`` ones are), as OpenAPI says of both."""
    hidden = "readOnly" if sent_by == "client" else "writeOnly"
    try:
        return _value(schema, schemas or {}, (), 0, False, hidden)
    except _Cut:
        return _value(schema, schemas or {}, (), 0, True, hidden)


def closes(schema: Any, schemas: dict[str, Any] | None = None) -> bool:
    """Whether :func:`synthesize` finds a finite value of ``schema`` without cutting a branch
    it requires (a required property or a non-empty array that leads back to its own schema)."""
    try:
        _value(schema, schemas or {}, (), 0)
    except _Cut:
        return False
    return True


def dereferenced(schema: Any, schemas: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` (``#/schemas/<name>``) followed once, its siblings kept;
    ``{}`` for anything but a mapping or an unknown reference."""
    if not isinstance(schema, dict):
        return {}
    found, _ = _resolve(schema, schemas, ())
    return dict(found) if isinstance(found, dict) else {}


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
    schema: Any,
    schemas: dict[str, Any],
    seen: tuple[str, ...],
    depth: int,
    lenient: bool = False,
    hidden: str = "readOnly",
) -> Any:
    """``lenient``: a branch that cannot close is null instead of cutting its parent;
    ``hidden``: the properties left out (:func:`synthesize`)."""
    if schema is True or not isinstance(schema, dict):
        return None if schema is False else "example"
    before = seen
    schema, seen = _resolve(schema, schemas, seen)
    named = seen[-1] if len(seen) > len(before) else None  # the schema's own name, by $ref
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
        found = _value(merged, schemas, seen, depth + 1, lenient, hidden)
        return _discriminated(merged, found, named)
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            rest = {k: v for k, v in schema.items() if k != key}
            for option in options:
                try:
                    ref = option.get("$ref") if isinstance(option, dict) else None
                    chosen = ref.removeprefix("#/schemas/") if isinstance(ref, str) else None
                    if isinstance(option, dict) and rest:
                        resolved, inner = _resolve(option, schemas, seen)
                        found = _value(
                            _merge(rest, resolved), schemas, inner, depth + 1, lenient, hidden
                        )
                    else:
                        found = _value(option, schemas, seen, depth + 1, lenient, hidden)
                    return _discriminated(schema, found, chosen)
                except _Cut:
                    continue
            if lenient:
                return None
            raise _Cut()
    kind = _type(schema)
    if kind == "object":
        return _object(schema, schemas, seen, depth, lenient, hidden)
    if kind == "array":
        return _array(schema, schemas, seen, depth, lenient, hidden)
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


def _places(step: float) -> int:
    """The decimals of ``step`` as written (``0.1``: 1)."""
    return max(0, -int(Decimal(str(step)).as_tuple().exponent))


def _whole_multiple(value: float, step: float) -> bool:
    """Whether ``value / step`` is whole in floating point, as JSON Schema validators compute
    ``multipleOf`` (python-jsonschema, Ajv)."""
    quotient = value / step
    return math.isfinite(quotient) and quotient == int(quotient)


def _discriminated(schema: dict[str, Any], value: Any, name: str | None) -> Any:
    """``value`` with the discriminator's property naming the schema it was built from
    (OpenAPI's Discriminator Object: the key of ``mapping`` that names it, else its name);
    as it is when there is no discriminator or no name to give."""
    found = schema.get("discriminator")
    prop = found.get("propertyName") if isinstance(found, dict) else None
    if not (isinstance(prop, str) and isinstance(value, dict) and name):
        return value
    mapping = found.get("mapping") if isinstance(found, dict) else None
    keys = [
        key
        for key, target in (mapping.items() if isinstance(mapping, dict) else ())
        if isinstance(target, str) and (target == name or target.rsplit("/", 1)[-1] == name)
    ]
    return {**value, prop: keys[0] if keys else name}


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


_LEAST = ("minimum", "minLength", "minItems", "minProperties")
_MOST = ("maximum", "maxLength", "maxItems", "maxProperties")


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two schemas that must both hold (``allOf``): a property both describe is both
    (``allOf`` of the two), a bound both give the tighter."""
    out = dict(a)
    for key, value in b.items():
        if key == "properties" and isinstance(value, dict):
            mine = out.get("properties", {})
            out["properties"] = {
                **mine,
                **{
                    name: {"allOf": [mine[name], sub]} if name in mine else sub
                    for name, sub in value.items()
                },
            }
        elif key == "required" and isinstance(value, list):
            out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
        elif (
            key in _LEAST + _MOST and _bound(value) is not None and _bound(out.get(key)) is not None
        ):
            out[key] = max(out[key], value) if key in _LEAST else min(out[key], value)
        else:
            out.setdefault(key, value)
    return out


def _object(
    schema: dict[str, Any],
    schemas: dict[str, Any],
    seen: tuple[str, ...],
    depth: int,
    lenient: bool,
    hidden: str,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    properties = schema.get("properties")
    raw_required = schema.get("required")
    required: list[Any] = raw_required if isinstance(raw_required, list) else []
    left_out = set()
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if _marked(sub, hidden, schemas):
                left_out.add(name)
                continue
            try:
                out[str(name)] = _value(sub, schemas, seen, depth + 1, lenient, hidden)
            except _Cut:
                if name in required and not lenient:
                    raise
                if name in required:
                    out[str(name)] = None
    least, more = schema.get("minProperties"), schema.get("additionalProperties", True)
    for name in required:  # a required name no property describes: additionalProperties does
        if isinstance(name, str) and name not in out and name not in left_out:
            described = isinstance(more, dict)
            out[name] = (
                _value(more, schemas, seen, depth + 1, lenient, hidden) if described else "example"
            )
    if isinstance(least, int) and more is not False:
        value = "example" if more is True else None
        for n in range(1, min(least, 1000) + 1):
            if len(out) >= least:
                break
            if value is None:
                value = _value(more, schemas, seen, depth + 1, lenient, hidden)
            out.setdefault(f"key{n}", value)
    return out


def _marked(schema: Any, hidden: str, schemas: dict[str, Any]) -> bool:
    """Whether a property's schema (or the one its ``$ref`` names) says ``hidden: true``."""
    if not isinstance(schema, dict):
        return False
    ref = schema.get("$ref")
    target = schemas.get(ref.removeprefix("#/schemas/")) if isinstance(ref, str) else None
    return schema.get(hidden) is True or (isinstance(target, dict) and target.get(hidden) is True)


def _array(
    schema: dict[str, Any],
    schemas: dict[str, Any],
    seen: tuple[str, ...],
    depth: int,
    lenient: bool,
    hidden: str,
) -> list[Any]:
    prefix, items = schema.get("prefixItems"), schema.get("items", {})
    if isinstance(items, list):  # draft 4's tuple form
        prefix, items = items, schema.get("additionalItems", {})
    prefix = prefix if isinstance(prefix, list) else []
    low = schema.get("minItems", 1)
    high = schema.get("maxItems")
    count = max(low if isinstance(low, int) else 1, 1, len(prefix))
    if isinstance(high, int):
        count = min(count, high)
    if items is False:
        count = min(count, len(prefix))
    out: list[Any] = []
    try:
        for i in range(count):
            each = prefix[i] if i < len(prefix) else items
            if i > len(prefix) and not schema.get("uniqueItems"):
                out.append(out[-1])  # the same schema gives the same value
                continue
            found = _value(each, schemas, seen, depth + 1, lenient, hidden)
            out.append(_nth(each, found, i - len(prefix)) if schema.get("uniqueItems") else found)
    except _Cut:
        if isinstance(schema.get("minItems"), int) and schema["minItems"] > 0 and not lenient:
            raise
        return out
    return out


def _nth(schema: Any, value: Any, i: int) -> Any:
    """The ``i``-th of distinct values of ``schema`` (``uniqueItems``), ``value`` the first:
    its enum's, or numbers counted up by their multiple, or text with a number after it."""
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if i <= 0:
        return value
    if isinstance(enum, list) and i < len(enum):
        return enum[i]
    step = schema.get("multipleOf", 1) if isinstance(schema, dict) else 1
    step = step if isinstance(step, int | float) and not isinstance(step, bool) and step > 0 else 1
    if isinstance(value, bool):
        return not value if i == 1 else value
    if isinstance(value, float) and step != int(step):  # the i-th multiple above that divides whole
        places, taken, k = _places(step), 0, 0
        while taken < i and k < _PROBES * (i + 1):
            k += 1
            candidate = round(value + k * step, places)
            taken += _whole_multiple(candidate, step)
        return candidate
    if isinstance(value, int | float):
        return value + i * step
    if isinstance(value, str):
        return f"{value}{i}"
    if isinstance(value, dict):  # an object differs from the others by its first text or number
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        for key, item in value.items():
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                sub = props.get(key) if isinstance(props, dict) else None
                return {**value, key: _nth(sub if isinstance(sub, dict) else {}, item, i)}
    return value


def _string(schema: dict[str, Any]) -> str:
    fmt = schema.get("format")
    if schema.get("contentEncoding") == "base64":  # OpenAPI 3.1's form of format: byte
        fmt = "byte"
    text = _FORMATS.get(fmt, "example") if isinstance(fmt, str) else "example"
    low = schema.get("minLength")
    high = schema.get("maxLength")
    low = low if isinstance(low, int) and not isinstance(low, bool) else 0
    high = high if isinstance(high, int) and not isinstance(high, bool) and high >= 0 else None
    pattern = schema.get("pattern")
    tree = _tree(pattern) if isinstance(pattern, str) else None
    if tree is not None and re.search(str(pattern), text) is None:
        matching = _matching(str(pattern), tree, low, high)
        if matching is not None:
            return matching
    if len(text) < low:
        text = text + "x" * (low - len(text))
    if high is not None and len(text) > high:
        text = text[:high]
    return text


MAX_PATTERN = 1000
"""The longest ``pattern`` a string is made to match."""
MAX_MATCHING = 256
"""The longest string made to match a pattern."""


def _tree(pattern: str) -> list[Any] | None:
    """``pattern`` as Python's ``re`` parses it, when a string is made to match it: not one
    ``re`` cannot read (ECMA 262's ``\\p{L}``), nor one whose matching can take exponential
    time (a repetition inside one of more than once, a lookaround, a back-reference): for
    those the string is made as without the pattern."""
    if len(pattern) > MAX_PATTERN:
        return None
    try:
        tree = list(_sre.parse(pattern))
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    return None if _risky(tree, inside_repeat=False) else tree


def _risky(items: list[Any], inside_repeat: bool) -> bool:
    for op, av in items:
        name = str(op)
        if name in ("ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS"):
            return True
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if inside_repeat or _risky(list(av[2]), inside_repeat=av[1] > 1):
                return True
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            if _risky(list(av[-1] if name == "SUBPATTERN" else av), inside_repeat):
                return True
        elif name == "BRANCH" and any(_risky(list(b), inside_repeat) for b in av[1]):
            return True
    return False


def _matching(pattern: str, tree: list[Any], low: int, high: int | None) -> str | None:
    """The shortest string this finds that ``pattern`` matches (a JSON Schema pattern is a
    search, not anchored), its length from ``low`` to ``high`` where one is found; None when
    none was. Each repetition takes its least count (plus ``extra``, tried upwards for
    ``minLength``), each alternation its first branch, each class its first member."""
    found = None
    for extra in range(0, min(max(low, 1), 64) + 1):
        try:
            text = _sample(tree, extra)
        except (ValueError, StopIteration):
            return None
        if len(text) > MAX_MATCHING or re.search(pattern, text) is None:
            return found
        found = found or text
        if len(text) >= low and (high is None or len(text) <= high):
            return text
        padded = text + "x" * (low - len(text))  # an unanchored end takes more
        if len(text) < low and (high is None or low <= high) and re.search(pattern, padded):
            return padded
        if high is not None and len(text) > high:
            break
    return found


_CANDIDATES = "a0A_-x. Z9z\t"
"""The characters a class is sampled from, in order."""


def _sample(items: list[Any], extra: int) -> str:
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append(next(c for c in _CANDIDATES if ord(c) != av))
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(next(c for c in _CANDIDATES if _member(c, av)))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            least, most, sub = av
            count = min(least + extra, most)
            if count > MAX_MATCHING:
                raise ValueError("longer than a string made to match")
            out.append(_sample(list(sub), extra) * count)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            out.append(_sample(list(av[-1] if name == "SUBPATTERN" else av), extra))
        elif name == "BRANCH":
            out.append(_sample(list(av[1][0]), extra))
        elif name != "AT":
            raise ValueError(name)
    return "".join(out)


_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
}


def _member(c: str, items: list[Any]) -> bool:
    """Whether ``c`` is in a character class (``[...]``, ``\\d``...) as ``re`` parsed it."""
    inside = False
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            inside = inside or ord(c) == av
        elif name == "RANGE":
            inside = inside or av[0] <= ord(c) <= av[1]
        elif name == "CATEGORY":
            test = _CATEGORIES.get(str(av))
            if test is None:
                raise ValueError(str(av))
            inside = inside or bool(test(c))
        else:
            raise ValueError(name)
    return inside != negate


def _number(schema: dict[str, Any], *, integer: bool) -> float:
    """A number within every bound (OpenAPI 3.0's boolean exclusive bounds, 3.1's numeric
    ones) and a multiple of ``multipleOf``, written to its decimals (``0.3``, never
    ``0.30000000000000004``): the least such from the lower bound, else the greatest up to 1
    below the upper one; a point inside an open range when no bound is a candidate."""
    low, low_open = _bound(schema.get("minimum")), schema.get("exclusiveMinimum") is True
    high, high_open = _bound(schema.get("maximum")), schema.get("exclusiveMaximum") is True
    strict_low, strict_high = (
        _bound(schema.get("exclusiveMinimum")),
        _bound(schema.get("exclusiveMaximum")),
    )
    if strict_low is not None and (low is None or strict_low >= low):
        low, low_open = strict_low, True
    if strict_high is not None and (high is None or strict_high <= high):
        high, high_open = strict_high, True

    def fits(v: float) -> bool:
        above = low is None or (v > low if low_open else v >= low)
        return above and (high is None or (v < high if high_open else v <= high))

    multiple = _bound(schema.get("multipleOf"))
    step = multiple if multiple is not None and multiple > 0 else (1.0 if integer else None)
    start = low if low is not None else (min(high, 1.0) if high is not None else 1.0)
    if step is not None:
        places = _places(step)
        up = math.ceil(start / step - 1e-9)
        down = math.floor(start / step + 1e-9)
        first = None
        for k in (*range(up, up + _PROBES), *range(down, down - _PROBES, -1)):
            v = round(k * step, places)
            if not fits(v) or (integer and v != int(v)):
                continue
            # a validator that divides in floating point must see a whole quotient too (0.3 /
            # 0.1 is 2.9999999999999996: 0.5 is the least multiple of 0.1 above 0.25 both agree on)
            if _whole_multiple(v, step):
                return float(v)
            first = v if first is None else first
        return float(round(up * step, places) if first is None else first)
    if fits(start):
        return float(start)
    if low is not None and high is not None:
        return (low + high) / 2
    return float(low + 1 if low is not None else (high or 0) - 1)


UUID_PREFIX = "00000000-0000-4000-8000-"
"""Numbered UUIDs: this prefix, then the number in 12 digits (a valid version 4 UUID)."""
_PROBES = 200
"""Numbers of a numbered form checked against the schema, spread over its range."""


def numbered(
    schema: Any, count: int, prefixes: str | None = None
) -> tuple[int, str | None, int] | None:
    """``count`` distinct values valid for a parameter's scalar ``schema``, as a numbered form
    ``(start, prefix, width)``: whole numbers ``start``, ``start + 1``, ... (prefix None, width
    0), or text, ``prefix`` then the number padded with zeros to ``width`` digits (a weighted
    list's ``others`` in a plan). Text takes ``v1``, ``v2``, ... where the schema allows them,
    else a string made to match its ``pattern`` and lengths with its last characters counted
    up (``^[A-Z]{3}-[0-9]{4}$``: ``AAA-0001``...). None when no such form is found: a number
    range too small, a ``multipleOf``, a ``format`` other than uuid, a pattern no numbered
    text matches. ``prefixes``: a pattern every text prefix must match."""
    if not isinstance(schema, dict) or count < 1:
        return None
    kind = _type(schema)
    if kind in ("integer", "number"):
        if schema.get("multipleOf") not in (None, 1):
            return None
        start = max(1, int(_number(schema, integer=True)))
        return (start, None, 0) if _fits(schema, start, None, 0, count) else None
    if kind not in ("string", None) or "enum" in schema or "const" in schema:
        return None
    if schema.get("format") == "uuid":
        return (1, UUID_PREFIX, 12) if count < 10**12 else None
    if schema.get("format") is not None:
        return None
    digits = len(str(count))
    sample = _string(schema)
    forms = [("v", 0)] + [(sample[:-w], w) for w in range(digits, min(len(sample), 18) + 1)]
    forms += [(sample, digits), ("", digits)]
    forms = [(p, w) for p, w in forms if prefixes is None or re.fullmatch(prefixes, p)]
    return next(((1, p, w) for p, w in forms if _fits(schema, 1, p, w, count)), None)


def numbered_value(number: int, prefix: str | None, width: int) -> Any:
    """The value ``number`` of a numbered form (:func:`numbered`)."""
    return number if prefix is None and not width else f"{prefix or ''}{number:0{width}d}"


def _fits(schema: dict[str, Any], start: int, prefix: str | None, width: int, count: int) -> bool:
    """Whether the numbered form's first, last and :data:`_PROBES` spread values are valid."""
    last = start + count - 1
    if width and len(str(last)) > width:
        return False
    spread = {start + (count - 1) * i // _PROBES for i in range(_PROBES + 1)}
    spread |= {start + i for i in range(min(count, 10))}
    return all(_valid(schema, numbered_value(n, prefix, width)) for n in sorted(spread))


def _bound(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _valid(schema: dict[str, Any], value: Any) -> bool:
    """Whether a scalar ``value`` meets ``schema``'s bounds, lengths and pattern."""
    if isinstance(value, int):
        low, high = _bound(schema.get("minimum")), _bound(schema.get("maximum"))
        ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        above = low is None or (value > low if ex_low is True else value >= low)
        below = high is None or (value < high if ex_high is True else value <= high)
        strict_low, strict_high = _bound(ex_low), _bound(ex_high)  # OpenAPI 3.1: numbers
        return (
            above
            and below
            and (strict_low is None or value > strict_low)
            and (strict_high is None or value < strict_high)
        )
    low, high = schema.get("minLength"), schema.get("maxLength")
    if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
        return False
    pattern = schema.get("pattern")
    if not isinstance(pattern, str):
        return True
    if _tree(pattern) is None:  # not one this can check in linear time: said to fit
        return True
    return re.search(pattern, value) is not None


__all__ = [
    "MAX_DEPTH",
    "UUID_PREFIX",
    "closes",
    "dereferenced",
    "numbered",
    "numbered_value",
    "synthesize",
]
