"""Firestore's REST encoding of documents, for the workflow's connector calls.

The workflow creates a run's document with the Firestore connector (``createDocument``), so
the parse function hands it the document already in REST form (``{"fields": {...}}``). The
encoding matches what the Python client writes for the same values, so the result store
(``gatebench.store``) reads the document back unchanged; like the store, an array directly
inside an array becomes ``{"_nested_list": [...]}`` (Firestore refuses nested arrays).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

NESTED_LIST = "_nested_list"


def firestore_value(value: Any, *, in_array: bool = False) -> dict[str, Any]:
    if value is None:
        return {"nullValue": None}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"integerValue": str(value)}  # int64 travels as a string in JSON
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return {"doubleValue": str(value).replace("inf", "Infinity").replace("nan", "NaN")}
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, Mapping):
        return {"mapValue": {"fields": firestore_fields(value)}}
    if isinstance(value, (list, tuple)):
        items = [firestore_value(v, in_array=True) for v in value]
        array = {"arrayValue": {"values": items}}
        return {"mapValue": {"fields": {NESTED_LIST: array}}} if in_array else array
    raise TypeError(f"cannot store a {type(value).__name__} in Firestore")


def firestore_fields(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): firestore_value(v) for k, v in mapping.items()}


def plain_value(value: Mapping[str, Any]) -> Any:
    """The inverse of :func:`firestore_value` (nested lists restored)."""
    ((kind, inner),) = value.items()
    if kind == "mapValue":
        fields = inner.get("fields") or {}
        if set(fields) == {NESTED_LIST}:
            return plain_value(fields[NESTED_LIST])
        return {k: plain_value(v) for k, v in fields.items()}
    if kind == "arrayValue":
        return [plain_value(v) for v in inner.get("values") or []]
    if kind == "integerValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    if kind == "nullValue":
        return None
    return inner
