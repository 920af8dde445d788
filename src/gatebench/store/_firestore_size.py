"""A Firestore document's size and field count, by Firestore's documented rules, so that a
document too large is refused here, naming itself, instead of by Firestore after a whole load.

Firestore's "Storage size calculations" page: a string takes its UTF-8 bytes + 1 (collection
and document ids, field names, string values); a document's name takes the size of every
collection and document id on its path + 16; a field takes its name's size + its value's;
values: boolean and null 1, integer, floating-point and timestamp 8, bytes their length, an
array the sum of its values, a map the size of its fields "calculated the same way as a
document"; a document is its name + its fields + 32. Firestore's "Quotas and limits": at most
1 MiB (1,048,576 bytes) and 20,000 fields a document, each field of a map counting as one.

Two choices on the side of caution, where the pages leave room: a map's size includes the 32
bytes a document adds, and every array element counts as a field (Firestore indexes each one
as it indexes a field, within its 40,000 index entries a document).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

MAX_DOCUMENT_BYTES = 1_048_576
MAX_DOCUMENT_FIELDS = 20_000
_OVERHEAD = 32


def string_size(text: str) -> int:
    return len(text.encode("utf-8")) + 1


def name_size(path: Sequence[str]) -> int:
    """A document name's size: ``path`` is its collection and document ids in turn
    (``["runs", "r-1", "scores", "nginx"]``)."""
    return sum(string_size(part) for part in path) + 16


def value_size(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, int | float | datetime.datetime):
        return 8
    if isinstance(value, str):
        return string_size(value)
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, Mapping):
        return fields_size(value) + _OVERHEAD
    if isinstance(value, list | tuple):
        return sum(value_size(v) for v in value)
    raise TypeError(f"Firestore stores no {type(value).__name__}")


def fields_size(fields: Mapping[str, Any]) -> int:
    return sum(string_size(str(k)) + value_size(v) for k, v in fields.items())


def document_size(path: Sequence[str], fields: Mapping[str, Any]) -> int:
    """The size of the document at ``path`` holding ``fields``."""
    return name_size(path) + fields_size(fields) + _OVERHEAD


def field_count(value: Any) -> int:
    """The fields a value holds: each key of a map, at any depth, and each array element."""
    if isinstance(value, Mapping):
        return sum(1 + field_count(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(1 + field_count(v) for v in value)
    return 0


def limit_problem(path: Sequence[str], fields: Mapping[str, Any]) -> str | None:
    """Why Firestore would refuse this document (its size or its fields, against the limits);
    None when it fits."""
    size, count = document_size(path, fields), field_count(fields)
    if size <= MAX_DOCUMENT_BYTES and count <= MAX_DOCUMENT_FIELDS:
        return None
    return (
        f"{'/'.join(path)}: {size:,} bytes and {count:,} fields, above Firestore's limits of "
        f"{MAX_DOCUMENT_BYTES:,} bytes (1 MiB) and {MAX_DOCUMENT_FIELDS:,} fields a document"
    )


__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_FIELDS",
    "document_size",
    "field_count",
    "fields_size",
    "limit_problem",
    "name_size",
    "string_size",
    "value_size",
]
