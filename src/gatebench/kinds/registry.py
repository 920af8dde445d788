"""The one registry of run kinds, as k6 registers its executors: the command line, the upload
form, the run request, the store, the report, the dashboard and the workflow look a kind up
here by name (``RunKind``), never by ``if kind == ...`` spread over the code.

Each kind is a package of its own (``gatebench.kinds.fixed``, ``.capacity``, ``.scale``,
``.change``) whose ``KIND`` says how a request becomes the plan as run, its stage list and how
its final status is decided. Importing this module loads every kind's stages: the pure parts of
a kind (a capacity search, the live runs' metrics) are imported from their packages directly.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.model import RunKind, RunRecord
from gatebench.kinds.capacity.kind import KIND as CAPACITY
from gatebench.kinds.change import KIND as CHANGE
from gatebench.kinds.fixed import KIND as FIXED
from gatebench.kinds.scale import KIND as SCALE
from gatebench.run._kind import Kind

KINDS: dict[RunKind, Kind[Any]] = {k.name: k for k in (FIXED, CAPACITY, SCALE, CHANGE)}
"""Every kind, in the order ``gatebench --help`` and the upload form list them."""

CLOUD_ONLY = {
    "export": "the score's flat rows go to BigQuery for Looker Studio; locally the same rows "
    "come from `gatebench report RUN --format bigquery` when asked for",
}
"""Steps of the cloud workflow with no local stage, and why."""


def get_kind(name: str) -> Kind[Any]:
    """The kind called ``name``; an unknown name says what exists."""
    try:
        return KINDS[RunKind(name)]
    except ValueError:
        raise RunError(
            f"no kind of run {name!r}; available: {', '.join(str(k) for k in KINDS)}"
        ) from None


def kind_of(record: RunRecord) -> Kind[Any]:
    return KINDS[record.kind]


__all__ = ["CLOUD_ONLY", "KINDS", "get_kind", "kind_of"]
