"""The capacity search as a kind of run (``gatebench capacity``, docs/capacity.md): the fixed
workload's shared stages with three of its own (``_stages``)::

    parse (CapacityParse) → backend → render → provision ┐ → load (CapacityLoad) → teardown
                                                          └ runs while load starts   → score (CapacityScore)

The search itself (``gatebench.kinds.capacity``) is pure; this module, which brings the run
machinery in, is loaded only where a capacity run executes.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.ir import Api
from gatebench.core.model import ResultStore, RunKind, RunRecord, RunStatus
from gatebench.core.pinning import capacity_layout
from gatebench.core.plan import Plan
from gatebench.core.score import Profile
from gatebench.kinds.capacity._document import CAPACITY_AS_RUN
from gatebench.kinds.capacity._result import CapacityResult, capacity_status
from gatebench.kinds.capacity._stages import CapacityLoad, CapacityParse, CapacityScore
from gatebench.run._base import Stage
from gatebench.run._context import RunContext, RunOptions
from gatebench.run._kind import Kind, KindReport, Prepared
from gatebench.run.stages.backend import StartBackend
from gatebench.run.stages.provision import Provision
from gatebench.run.stages.render import Render
from gatebench.run.stages.teardown import Teardown

CAPACITY_SEARCH: tuple[Stage, ...] = (
    CapacityParse(),
    StartBackend(capacity_layout),
    Render(),
    Provision(),
    CapacityLoad(),
    Teardown(),
    CapacityScore(),
)
"""The capacity search (docs/capacity.md): the same stages and names, with its own parse (the
load generator), cores (the generator on a core of its own where the plan does not say:
gatebench.core.pinning.capacity_layout), load (the ceilings and the campaign) and score (the
knees, stored). ``--testers N`` is the load stage's own business: it splits every probe."""


def capacity_search(options: RunOptions) -> tuple[Stage, ...]:
    """The capacity search as ``options`` ask for it: always its one list."""
    return CAPACITY_SEARCH


def prepare(api: Api, plan: Plan, options: RunOptions) -> Prepared:
    """The capacity settings as run (``--quick``, ``--repetitions``), and the record's summary
    of each workload: its search, not the injection a capacity run does not use."""
    plan, workloads = CAPACITY_AS_RUN.prepare(
        plan, api, quick=options.quick, repetitions=options.repetitions
    )
    return Prepared(plan, plan.gateways, plan.to_dict(), workloads)


def capacity_run_status(ctx: RunContext) -> RunStatus:
    """``partial`` when a target failed or has no knee on some endpoint, or the budget ran
    out; else ``done``."""
    return RunStatus(capacity_status(ctx.find(CapacityResult), bool(ctx.record.target_errors)))


def report(store: ResultStore, run: RunRecord, fmt: str, profile: Profile | None) -> KindReport:
    """The capacity report of a stored run, or its capacity thresholds as JUnit."""
    from gatebench.kinds.capacity._report import (
        load_capacity_report,
        render_capacity,
        render_capacity_junit,
    )

    built = load_capacity_report(store, run.run_id)
    text = render_capacity_junit(built) if fmt == "junit" else render_capacity(built, fmt)  # type: ignore[arg-type]
    return KindReport(text)


def view(store: ResultStore, run: RunRecord) -> dict[str, Any]:
    """The dashboard's page of a stored capacity run: its knees, curves and verdict as data."""
    from gatebench.kinds.capacity._report import capacity_view, load_capacity_report

    return capacity_view(load_capacity_report(store, run.run_id))


KIND: Kind[Plan] = Kind(
    name=RunKind.CAPACITY,
    title="capacity search",
    command="capacity",
    prepare=prepare,
    stages=lambda plan, options: capacity_search(options),
    report=report,
    view=view,
    status_rule=capacity_run_status,
)

__all__ = ["CAPACITY_SEARCH", "KIND", "capacity_run_status", "capacity_search", "prepare"]
