"""Walking a description's objects without mistaking data for structure.

Example values (``example``, an Example Object's ``value``, a JSON Schema's ``examples``
list), ``default``, ``enum``, ``const`` and every ``x-`` extension are literal data: a
``$ref``, ``$id`` or ``$anchor`` key there means nothing. Keys of mappings named by the
description (``properties``, ``paths``, ``responses``, ...) are names, not keywords: a
property called ``example`` is a schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gatebench.core.errors import escape_pointer_token

NAME_MAPS = frozenset(
    {
        "callbacks",
        "content",
        "encoding",
        "headers",
        "links",
        "parameters",
        "pathItems",
        "paths",
        "requestBodies",
        "responses",
        "securityDefinitions",
        "securitySchemes",
        "variables",
        "webhooks",
        "x-ms-paths",
    }
)
"""Mappings keyed by names the description chooses; their ``x-`` keys are extensions."""

SCHEMA_NAME_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "schemas"}
)
"""Mappings of schemas keyed by names, where ``x-foo`` is a name like any other."""

_DATA_KEYS = frozenset({"example", "default", "enum", "const"})


def is_data(key: str, kind: str = "") -> bool:
    """Whether the value under ``key`` is literal data (``kind`` is ``example-object``
    inside an Example Object, whose ``value`` is data)."""
    if key == "x-ms-paths":  # AutoRest's second paths object: structure, read as paths
        return False
    return (
        key in _DATA_KEYS or key.startswith("x-") or (key == "value" and kind == "example-object")
    )


def walk_objects(
    data: Any, stop: Callable[[dict[str, Any]], bool] | None = None
) -> Iterator[tuple[dict[str, Any], str]]:
    """Every object of a description that is not data, with its JSON pointer. Below an
    object for which ``stop`` is true nothing more is yielded."""
    stack: list[tuple[Any, str, str]] = [(data, "", "")]
    while stack:
        value, pointer, kind = stack.pop()
        if isinstance(value, list):
            stack.extend(
                (v, f"{pointer}/{i}", "")
                for i, v in reversed(list(enumerate(value)))
                if isinstance(v, dict | list)
            )
            continue
        if not isinstance(value, dict):
            continue
        if kind in ("names", "schema-names"):
            for key, item in value.items():
                key = str(key)
                if isinstance(item, dict | list) and (
                    kind == "schema-names" or not key.startswith("x-")
                ):
                    stack.append((item, f"{pointer}/{escape_pointer_token(key)}", ""))
            continue
        if kind == "examples":  # name -> Example Object (or Reference Object)
            for key, item in value.items():
                if isinstance(item, dict):
                    stack.append(
                        (item, f"{pointer}/{escape_pointer_token(str(key))}", "example-object")
                    )
            continue
        yield value, pointer
        if stop is not None and stop(value):
            continue
        for key, item in value.items():
            key = str(key)
            if not isinstance(item, dict | list) or is_data(key, kind):
                continue
            child = f"{pointer}/{escape_pointer_token(key)}"
            if key == "examples":
                if isinstance(item, dict):
                    stack.append((item, child, "examples"))
                continue
            stack.append(
                (
                    item,
                    child,
                    "schema-names"
                    if key in SCHEMA_NAME_MAPS
                    else ("names" if key in NAME_MAPS else ""),
                )
            )


__all__ = ["NAME_MAPS", "SCHEMA_NAME_MAPS", "is_data", "walk_objects"]
