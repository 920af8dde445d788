"""The fixed workload: the AGE paper's run. Every workload with its own injection profile,
repeated in a shuffled target order, measured per endpoint and scored (docs/engine.md,
docs/scoring.md)::

    parse → backend → render → provision ┐ → load → [cross_check] → teardown → score
                                         └ runs while load's engine starts

``--testers N`` replaces ``load`` with :class:`~.load.LoadSplit`; ``--cross-check ENGINE`` adds
:class:`~.cross_check.CrossCheck` after ``load``. ``parse``, ``backend``, ``render``,
``provision`` and ``teardown`` are every kind's (``gatebench.run.stages``).
"""

from __future__ import annotations

from typing import Any

from gatebench.core.ir import Api
from gatebench.core.model import ResultStore, RunKind, RunRecord
from gatebench.core.plan import Plan
from gatebench.core.score import Profile
from gatebench.core.workload import FIXED_AS_RUN
from gatebench.kinds.fixed.cross_check import CrossCheck
from gatebench.kinds.fixed.load import Load, LoadSplit
from gatebench.kinds.fixed.score import Score
from gatebench.run._base import Stage, inserted_after, replaced
from gatebench.run._context import RunOptions
from gatebench.run._kind import Kind, KindReport, Prepared
from gatebench.run.stages.backend import StartBackend
from gatebench.run.stages.parse import Parse
from gatebench.run.stages.provision import Provision
from gatebench.run.stages.render import Render
from gatebench.run.stages.teardown import Teardown

FIXED_WORKLOAD: tuple[Stage, ...] = (
    Parse(),
    StartBackend(),
    Render(engine_warmup=True),
    Provision(),
    Load(),
    Teardown(),
    Score(),
)
"""The stage list, with one load generator and no cross-check."""


def fixed_workload(options: RunOptions) -> tuple[Stage, ...]:
    """The fixed-workload run as ``options`` ask for it."""
    stages = FIXED_WORKLOAD
    if options.testers != 1:
        stages = replaced(stages, "load", LoadSplit())
    if options.cross_check:
        stages = inserted_after(stages, "load", CrossCheck(options.cross_check))
    return stages


def prepare(api: Api, plan: Plan, options: RunOptions) -> Prepared:
    """The plan as run (``--quick``, ``--repetitions``) and the record's summary of it."""
    plan, workloads = FIXED_AS_RUN.prepare(
        plan, api, quick=options.quick, repetitions=options.repetitions
    )
    return Prepared(plan, plan.gateways, plan.to_dict(), workloads)


def report(store: ResultStore, run: RunRecord, fmt: str, profile: Profile | None) -> KindReport:
    """The AGE report of a stored run (``gatebench.core.report``), or its thresholds as JUnit."""
    from gatebench.core.report import load_report, render
    from gatebench.core.report._junit import render_junit

    built = load_report(store, run.run_id, profile=profile)
    return KindReport(render_junit(built) if fmt == "junit" else render(built, fmt))  # type: ignore[arg-type]


def view(store: ResultStore, run: RunRecord) -> dict[str, Any]:
    """The dashboard's page of a stored run: its AGE report as data."""
    from gatebench.core.report import load_report, run_view

    return run_view(load_report(store, run.run_id))


KIND: Kind[Plan] = Kind(
    name=RunKind.FIXED,
    title="fixed workload",
    command="run",
    prepare=prepare,
    stages=lambda plan, options: fixed_workload(options),
    report=report,
    view=view,
    compared=True,
)

__all__ = ["FIXED_WORKLOAD", "KIND", "fixed_workload", "prepare"]
