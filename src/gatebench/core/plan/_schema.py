"""The structure of ``x-gatebench`` as a JSON Schema (draft 2020-12), shipped with the package.

``schemas/x-gatebench.schema.json`` is the one list of the keys each part of a plan may hold,
with their types and a description of each: editors complete plans from it (the
``yaml-language-server: $schema=`` line, docs/input.md), and ``build_plan`` checks every
section with it through jsonschema-rs. The schema decides which keys are unknown; the reader
(``_reader``) turns its verdict into the located message with a suggestion, where the walk
meets the mapping, so problems keep the document's order. Values (ranges, durations, sizes,
names) are read in ``_build`` with messages that say what was expected, and what depends on
the API description is checked in ``_checks``: a schema cannot know either.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

import jsonschema_rs

from gatebench.core._locations import PACKAGE_DIR

SCHEMA_PATH = PACKAGE_DIR / "core" / "schemas" / "x-gatebench.schema.json"
"""The shipped schema (a document whose ``x-gatebench`` property is the plan)."""
SECTION = "x-gatebench"

Path_ = tuple[str, ...]


@cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


@cache
def _validator() -> Any:
    return jsonschema_rs.validator_for(_schema())


def _plain(value: Any) -> Any:
    """``value`` as JSON (the validator's input): keys as strings, anything else JSON has no
    word for (a non-finite number, an unexpected type) as its text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return repr(value)


class SectionSchema:
    """The schema's verdict on one section: which keys it refused, by mapping."""

    def __init__(self, section: Any) -> None:
        self.unknown: dict[Path_, set[str]] = {}
        for error in _validator().iter_errors({SECTION: _plain(section)}):
            unexpected = getattr(error.kind, "unexpected", None)
            if type(error.kind).__name__ != "AdditionalProperties" or unexpected is None:
                continue  # values are read (and their problems worded) by _build
            where = tuple(str(t) for t in list(error.instance_path)[1:])
            self.unknown.setdefault(where, set()).update(str(k) for k in unexpected)

    def refused(self, where: Any) -> set[str]:
        """The keys the schema refused in the mapping at ``where`` (tokens from the section)."""
        return self.unknown.get(tuple(str(t) for t in where), set())


def node(name: str) -> dict[str, Any]:
    """A part of the plan (``$defs`` entry): ``title`` names it in messages, ``properties``
    lists its keys in the order suggestions name them."""
    found: dict[str, Any] = _schema()["$defs"][name]
    return found


def keys(name: str) -> tuple[str, ...]:
    return tuple(node(name)["properties"])


__all__ = ["SCHEMA_PATH", "SectionSchema", "keys", "node"]
