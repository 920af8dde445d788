"""Operation ids: the one rule every format's reader follows to make one up where a description
gives none, and to keep them unique."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from gatebench.core.ir import Operation


def generated_id(method: str, path: str) -> str:
    """``GET /pets/{petId}/photos`` → ``get_pets_petId_photos``."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", path) if w]
    return "_".join([method.lower(), *words]) if words else method.lower() + "_root"


def unique_ids(operations: Iterable[Operation]) -> list[Operation]:
    """Each operation (in the same order) with an id no other one has.

    An id written in the description is kept; an operation without one gets the id made from
    its method and path. Written ids come first: where two operations want the same id, the
    first written one (in document order), else the first made one, keeps it, and the next gets
    ``id_N`` for the first N from 2 that no operation wants. So a renamed operation never takes
    an id another one was given or would be given (``dup``, ``dup`` and ``dup_2`` are ``dup``,
    ``dup_3`` and ``dup_2``), and a workload naming an id benchmarks that operation.
    """
    ops = list(operations)
    wanted = [
        generated_id(op.method, op.path_template) if op.operation_id_generated else op.operation_id
        for op in ops
    ]
    taken = set(wanted)
    given: set[str] = set()
    ids = [""] * len(ops)
    for i in sorted(range(len(ops)), key=lambda i: ops[i].operation_id_generated):
        op_id = wanted[i]
        if op_id in given:
            n = 2
            while f"{op_id}_{n}" in taken:
                n += 1
            op_id = f"{op_id}_{n}"
            taken.add(op_id)
        given.add(op_id)
        ids[i] = op_id
    return [
        op if op.operation_id == op_id else replace(op, operation_id=op_id)
        for op, op_id in zip(ops, ids, strict=True)
    ]


__all__ = ["generated_id", "unique_ids"]
