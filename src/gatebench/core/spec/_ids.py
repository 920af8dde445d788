"""Operation ids a reader makes up where a description gives none (every format's one rule)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from gatebench.core.ir import Operation


def generated_id(method: str, path: str) -> str:
    """``GET /pets/{petId}/photos`` → ``get_pets_petId_photos``."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", path) if w]
    return "_".join([method.lower(), *words]) if words else method.lower() + "_root"


def unused(op_id: str, taken: Iterable[str]) -> str:
    """``op_id_N`` for the first N from 2 that is not ``taken``."""
    taken_set = set(taken)
    n = 2
    while f"{op_id}_{n}" in taken_set:
        n += 1
    return f"{op_id}_{n}"


def with_generated_ids(operations: Iterable[Operation], taken: set[str]) -> list[Operation]:
    """Each operation with the id made from its method and path, suffixed where ``taken``
    (which it extends) already holds it."""
    out = []
    for op in operations:
        op_id = generated_id(op.method, op.path_template)
        if op_id in taken:
            op_id = unused(op_id, taken)
        taken.add(op_id)
        out.append(replace(op, operation_id=op_id))
    return out


__all__ = ["generated_id", "unused", "with_generated_ids"]
