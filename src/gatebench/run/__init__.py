"""The run machinery: a run is a list of named stages over one run context
(docs/development.md, "A run as stages").

Each stage is one module with one job, named as the cloud workflow names its step::

    parse → backend (local only) → render → provision ┐ → load → teardown → score
                                                      └ runs while load's engine starts

The contract:

- A stage (:class:`Stage`) declares its name, the lifecycle step it belongs to and when the run
  moves to it, the outputs of earlier stages it reads (``needs``, read with ``ctx.get(T)``) and
  the type of what it returns (``gives``). It never reaches into another stage's locals; what
  it opens that teardown must close goes into ``ctx.resources``; it never starts a process
  itself: it asks the run's machine (``ctx.machine``, :mod:`.ports`).
- The run context (:class:`RunContext`) holds the input (API, plan as run, options), the
  journal (record, folder, store, display), the machine, the CPU accounting groups, and the
  outputs by type.
- The executor (:func:`execute`) owns the rest: checks first, the status, the failed step
  (the innermost stage that raised), teardown on every way out, the final status (by the
  kind's rule).

The stages every kind shares are in :mod:`.stages`; a kind of run (:class:`Kind`) is a list of
them and of its own, in ``gatebench.kinds``.
"""

from __future__ import annotations

from gatebench.run._base import Stage, check_order, inserted_after, replaced
from gatebench.run._context import RunContext, RunOptions, RunOutcome, measured_status
from gatebench.run._executor import execute
from gatebench.run._journal import Progress, RunJournal
from gatebench.run._kind import Kind, Prepared

__all__ = [
    "Kind",
    "Prepared",
    "Progress",
    "RunContext",
    "RunJournal",
    "RunOptions",
    "RunOutcome",
    "Stage",
    "check_order",
    "execute",
    "inserted_after",
    "measured_status",
    "replaced",
]
