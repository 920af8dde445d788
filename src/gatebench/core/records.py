"""How a record's plain fields become its JSON: one definition for every ``to_dict``."""

from __future__ import annotations

from typing import Any


def fields(record: object, names: str) -> dict[str, Any]:
    """``{name: record.name}`` for each of the space-separated ``names``, in their order (the
    fields a ``to_dict`` writes under their own names; the others it writes itself)."""
    return {name: getattr(record, name) for name in names.split()}


__all__ = ["fields"]
