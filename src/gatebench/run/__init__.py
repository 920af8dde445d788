"""A run as a list of named stages over one run context (docs/development.md).

Each stage is one module with one job, named as the cloud workflow names its step::

    parse → backend (local only) → render → provision ┐ → load → [cross_check] → teardown → score
                                                      └ runs while load's engine starts

The contract:

- A stage (:class:`Stage`) declares its name, the lifecycle step it belongs to and when the run
  moves to it, the outputs of earlier stages it reads (``needs``, read with ``ctx.get(T)``) and
  the type of what it returns (``gives``). It never reaches into another stage's locals; what
  it opens that teardown must close goes into ``ctx.resources``.
- The run context (:class:`RunContext`) holds the input (API, plan as run, options), the
  journal (record, folder, store, display), the supervisor of every process the run starts,
  the CPU accounting groups, and the outputs by type.
- The executor (:func:`execute`) owns the rest: checks first, the status, the failed step
  (the innermost stage that raised), teardown on every way out, the final status.

A kind of run is a list (:mod:`.kinds`): the fixed workload of the AGE paper today; a
capacity search, route scale or change under load are new lists of new and existing stages.
"""

from __future__ import annotations

from gatebench.run._base import Stage, check_order
from gatebench.run._context import RunContext, RunOptions, RunOutcome
from gatebench.run._executor import execute
from gatebench.run._journal import Progress, RunJournal
from gatebench.kinds._lists import (
    CAPACITY_SEARCH,
    CLOUD_ONLY,
    FIXED_WORKLOAD,
    capacity_search,
    fixed_workload,
    inserted_after,
    replaced,
)

__all__ = [
    "CAPACITY_SEARCH",
    "CLOUD_ONLY",
    "FIXED_WORKLOAD",
    "Progress",
    "RunContext",
    "RunJournal",
    "RunOptions",
    "RunOutcome",
    "Stage",
    "capacity_search",
    "check_order",
    "execute",
    "fixed_workload",
    "inserted_after",
    "replaced",
]
