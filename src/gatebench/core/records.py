"""How a record's plain fields become its JSON: one definition for every ``to_dict``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields as _dataclass_fields
from typing import Any, TypeVar

T = TypeVar("T")


def fields(record: object, names: str) -> dict[str, Any]:
    """``{name: record.name}`` for each of the space-separated ``names``, in their order (the
    fields a ``to_dict`` writes under their own names; the others it writes itself)."""
    return {name: getattr(record, name) for name in names.split()}


def known_fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that are fields of the dataclass ``cls``: what a ``from_dict``
    reads (a record written by a newer version may hold more)."""
    known = {f.name for f in _dataclass_fields(cls)}
    return {k: v for k, v in data.items() if k in known}


def find(items: Iterable[T], field: str, value: object) -> T:
    """The first of ``items`` whose ``field`` is ``value``; KeyError(value) when none is."""
    for item in items:
        if getattr(item, field) == value:
            return item
    raise KeyError(value)


__all__ = ["fields", "find", "known_fields"]
