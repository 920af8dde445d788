"""The local capacity search (``gatebench capacity SPEC``, docs/capacity.md): ``run_capacity``
builds the run's context as ``gatebench.local.runner.run_benchmark`` does and executes the capacity
stage list (gatebench.kinds.capacity._stages: parse, backend, render, provision, load, teardown,
score, the same names as the fixed workload's).

The run moves through the same statuses as any run and is written to ``run.json`` and the store
as it goes; its result (knees, intervals, comparisons, verdicts) is stored with the run
(``RunRecord.capacity``) and in ``capacity.json``. Faults are handled by the same stages as a
fixed-workload run's: a gateway that will not start is recorded as failed and the others are
searched; one that dies mid-search ends its search as ``failed`` and is searched no more;
Ctrl-C tears everything down and the run ends ``partial`` with the searches that finished
(``capacity-searches.jsonl``).
"""

from __future__ import annotations

from collections.abc import Callable

from gatebench.kinds.capacity import capacity_as_run
from gatebench.core.ir import Api
from gatebench.core.plan import Plan, workload_summary
from gatebench.local.procs import Supervisor
from gatebench.local.runner import local_journal
from gatebench.run import Progress, RunContext, RunOptions, RunOutcome, execute
from gatebench.kinds._lists import capacity_search
from gatebench.store import ResultStore

DEFAULT_OPTIONS = RunOptions()

RUN_KIND = "capacity"
"""``environment.run_kind`` of a capacity run's record, from its first write (the result comes
at the end: ``RunRecord.capacity``)."""


def run_capacity(
    api: Api,
    plan: Plan,
    *,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions = DEFAULT_OPTIONS,
    store: ResultStore | None = None,
    display: Callable[[Progress], None] = lambda p: None,
    supervisor_factory: Callable[[], Supervisor] = Supervisor,
) -> RunOutcome:
    """Search every target's capacity locally. Raises nothing for target faults (they are
    recorded); RunError for a run-level failure (after recording it); KeyboardInterrupt passes
    through after teardown, with the run marked partial. ``options.quick`` and
    ``options.repetitions`` apply to the capacity settings (:func:`capacity_as_run`)."""
    plan = capacity_as_run(plan, quick=options.quick, repetitions=options.repetitions)
    journal = local_journal(
        api,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        options=options,
        store=store,
        display=display,
        gateways=plan.gateways,
        plan=plan.to_dict(),
        workloads=workload_summary(plan, api),
        environment={"run_kind": RUN_KIND},
    )
    context = RunContext(api, plan, options, journal, supervisor_factory())
    return execute(capacity_search(options), context)


__all__ = ["RUN_KIND", "run_capacity"]
