"""The local benchmark run: ``run_benchmark`` builds the run's context and executes the
fixed-workload stages (gatebench.run: parse, backend, render, provision, load, teardown,
score; docs/development.md follows them).

The run moves through ``received → parsed → rendered → provisioning → loading → scoring →
done | failed | partial``; each transition is written to ``run.json`` in the run folder and,
when a :class:`~gatebench.store.ResultStore` is given, to the store. Every measured phase is
written as soon as the engine proves it complete (``measurements.jsonl`` and
``store.put_measurement``), so a crash or Ctrl-C keeps what finished.

Protocol (docs/engine.md): the backend and every gateway start once; the schedule lists,
for each repetition, the targets in a shuffled order, each with its warm-up (excluded) and
one measured phase per workload, the backend reset before each measured phase. One load
engine process runs the whole schedule (docs/benchmarks.md has the measurement behind that
choice); before the first repetition it drives the ceiling target (docs/trust.md).

Faults: a gateway whose config is rejected or that will not start is marked failed with the
reason and the others go on; one that dies mid-run is marked failed with its log tail, its
remaining phases are skipped and the phases that overlap its failure are left out of the
score; an unreachable backend fails the run before any load; a load-engine crash is retried
once for the phases not yet complete, then marked failed; Ctrl-C (or SIGTERM) tears
everything down and the run ends ``partial`` with what finished. ``kill -9`` of gatebench
runs no teardown: the run's guardian process ends what it started (gatebench.local._guardian), and
the next run in the same store records the run as abandoned (gatebench.run._abandoned).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gatebench.core.ir import Api
from gatebench.core.model import RunRecord, local_run_id
from gatebench.core.plan import Plan, workload_summary
from gatebench.local.procs import Supervisor, this_process
from gatebench.run import Progress, RunContext, RunJournal, RunOptions, RunOutcome, execute
from gatebench.run._abandoned import settle_abandoned
from gatebench.kinds._lists import fixed_workload
from gatebench.store import ResultStore
from gatebench.core.workload import plan_as_run

DEFAULT_OPTIONS = RunOptions()


def local_journal(
    api: Api,
    *,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions,
    store: ResultStore | None,
    display: Callable[[Progress], None],
    gateways: Sequence[str],
    plan: dict[str, Any],
    workloads: list[dict[str, Any]] | None = None,
    environment: dict[str, Any] | None = None,
) -> RunJournal:
    """A local run's journal, every kind's: its record (the run id from ``options`` or the
    spec's digest; this process as its owner, with the run folder), after the store's
    abandoned runs are settled (gatebench.run._abandoned)."""
    run_id = options.run_id or local_run_id(spec_sha256)
    run_dir = (Path(options.results_dir) / run_id).resolve()
    if store is not None:
        settle_abandoned(store)
    record = RunRecord(
        run_id=run_id,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        title=api.title,
        gateways=list(gateways),
        plan=plan,
        owner={**this_process(), "run_dir": str(run_dir)},
        workloads=workloads or [],
        environment=environment or {},
    )
    return RunJournal(record, run_dir, store, display)


def run_benchmark(
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
    """Run the whole benchmark locally. Raises nothing for target faults (they are recorded);
    RunError for a run-level failure (after recording it); KeyboardInterrupt passes through
    after teardown, with the run marked partial."""
    plan = plan_as_run(plan, quick=options.quick, repetitions=options.repetitions)
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
    )
    context = RunContext(api, plan, options, journal, supervisor_factory())
    return execute(fixed_workload(options), context)


__all__ = [
    "Progress",
    "RunOptions",
    "RunOutcome",
    "local_journal",
    "run_benchmark",
]
