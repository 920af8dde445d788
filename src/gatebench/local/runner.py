"""Runs of every kind on this machine: ``run_local`` records the run (``received``), builds its
context on a :class:`~gatebench.local.machine.LocalMachine` and executes its kind's stage list
(``gatebench.kinds.registry``; docs/development.md follows the fixed workload's stages).

The run moves through ``received → parsed → rendered → provisioning → loading → scoring →
done | failed | partial``; each transition is written to ``run.json`` in the run folder and,
when a :class:`~gatebench.store.ResultStore` is given, to the store. Every measured phase or
result is written as soon as it is known, so a crash or Ctrl-C keeps what finished.

Faults: a gateway whose config is rejected or that will not start is marked failed with the
reason and the others go on; one that dies mid-run is marked failed with its log tail, its
remaining phases are skipped and the phases that overlap its failure are left out of the
score; an unreachable backend fails the run before any load; a load-engine crash is retried
once for the phases not yet complete, then marked failed; Ctrl-C (or SIGTERM) tears
everything down and the run ends ``partial`` with what finished. ``kill -9`` of gatebench
runs no teardown: the run's guardian process ends what it started (gatebench.local._guardian),
and the next run in the same store records the run as abandoned (gatebench.local._abandoned).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.model import RunKind, RunRecord, local_run_id
from gatebench.core.plan import Plan
from gatebench.kinds.registry import get_kind
from gatebench.local._abandoned import settle_abandoned
from gatebench.local.machine import LocalMachine
from gatebench.local.procs import Supervisor, this_process
from gatebench.run import Progress, RunContext, RunJournal, RunOptions, RunOutcome, execute
from gatebench.run._kind import Prepared
from gatebench.store import ResultStore

DEFAULT_OPTIONS = RunOptions()


def local_journal(
    api: Api,
    kind: RunKind,
    prepared: Prepared,
    *,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions,
    store: ResultStore | None,
    display: Callable[[Progress], None],
) -> RunJournal:
    """A local run's journal, every kind's: its record (the run id from ``options`` or the
    spec's digest; this process as its owner, with the run folder), after the store's
    abandoned runs are settled (gatebench.local._abandoned)."""
    run_id = options.run_id or local_run_id(spec_sha256)
    run_dir = (Path(options.results_dir) / run_id).resolve()
    if store is not None:
        settle_abandoned(store)
    record = RunRecord(
        run_id=run_id,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        title=api.title,
        gateways=list(prepared.gateways),
        plan=prepared.record_plan,
        owner={**this_process(), "run_dir": str(run_dir)},
        workloads=prepared.workloads,
        environment=dict(prepared.environment),
        kind=kind,
    )
    return RunJournal(record, run_dir, store, display)


MAX_SAME_SECOND = 100
"""Runs of one spec started in the same second into one results folder."""


def claim_run_id(results_dir: Path, spec_sha256: str, now: float | None = None) -> str:
    """A new run's id (``core.model.local_run_id``), its folder made in the same step: a
    second run of the same spec started in the same second into the same results folder
    takes ``-2`` (then ``-3``...) instead of sharing the first's folder and record."""
    base = local_run_id(spec_sha256, now)
    results_dir.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_SAME_SECOND + 1):
        run_id = base if n == 1 else f"{base}-{n}"
        try:
            (results_dir / run_id).mkdir()
        except FileExistsError:
            continue
        return run_id
    raise RunError(
        f"{MAX_SAME_SECOND} runs of this spec started within one second in {results_dir}: "
        "wait a second, or give each its own --results folder"
    )


def run_local(
    kind: RunKind | str,
    api: Api,
    ask: Any,
    *,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions = DEFAULT_OPTIONS,
    store: ResultStore | None = None,
    display: Callable[[Progress], None] = lambda p: None,
    supervisor_factory: Callable[[], Supervisor] = Supervisor,
) -> RunOutcome:
    """Run ``ask`` (a plan; for route scale and change under load, a ``ScaleRequest``) as a
    run of ``kind`` here. Raises nothing for target faults (they are recorded); RunError for a
    run-level failure (after recording it); KeyboardInterrupt passes through after teardown,
    with the run marked partial."""
    the_kind = get_kind(kind)
    prepared = the_kind.prepare(api, ask, options)
    journal = local_journal(
        api,
        the_kind.name,
        prepared,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        options=options,
        store=store,
        display=display,
    )
    machine = LocalMachine(supervisor_factory())
    context = RunContext(api, prepared.plan, options, journal, machine, the_kind.status_rule)
    return execute(the_kind.stages(ask, options), context)


def run_benchmark(api: Api, plan: Plan, **kwargs: Any) -> RunOutcome:
    """``run_local`` of the fixed workload (``gatebench run``)."""
    return run_local(RunKind.FIXED, api, plan, **kwargs)


__all__ = [
    "Progress",
    "RunOptions",
    "RunOutcome",
    "claim_run_id",
    "local_journal",
    "run_benchmark",
    "run_local",
]
