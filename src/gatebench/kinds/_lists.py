"""The kinds of run, each a list of stages (docs/development.md, "A run as stages").

A new kind of run is a new list, or a list with a stage replaced or added — never a branch
inside an existing stage. ``--testers N`` replaces ``load`` with :class:`~.load.LoadSplit`;
``--cross-check ENGINE`` adds :class:`~.cross_check.CrossCheck` after ``load``. The route-scale
and change-under-load runs are lists of their own (:mod:`.scale`: ``scale_stages``,
``change_stages``; the cloud workflow runs them with the same steps, docs/cloud.md).

The lists name their stages as the cloud workflow (``workflows/benchmark.yaml``) names its
steps, in the same order (tests/unit/test_stages.py compares them); a stage on one path only
says why (``Stage.local_only``, :data:`CLOUD_ONLY`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gatebench.kinds.capacity._stages import CapacityLoad, CapacityParse, CapacityScore
from gatebench.kinds.fixed.cross_check import CrossCheck
from gatebench.kinds.fixed.load import Load, LoadSplit
from gatebench.kinds.fixed.score import Score
from gatebench.local.pinning import capacity_layout
from gatebench.run._base import Stage
from gatebench.run._context import RunOptions
from gatebench.run.stages.backend import StartBackend
from gatebench.run.stages.parse import Parse
from gatebench.run.stages.provision import Provision
from gatebench.run.stages.render import Render
from gatebench.run.stages.teardown import Teardown

FIXED_WORKLOAD: tuple[Stage, ...] = (
    Parse(),
    StartBackend(),
    Render(),
    Provision(),
    Load(),
    Teardown(),
    Score(),
)
"""The AGE paper's run: every workload with its own injection profile, repeated, scored."""

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
load generator), cores (the generator on a core of its own where the plan does not say),
load (the ceilings and the campaign) and score (the knees, stored)."""

CLOUD_ONLY = {
    "export": "the score's flat rows go to BigQuery for Looker Studio; locally the same rows "
    "come from `gatebench report RUN --format bigquery` when asked for",
}
"""Steps of the cloud workflow with no local stage, and why."""


def replaced(stages: Sequence[Stage], name: str, stage: Stage) -> tuple[Stage, ...]:
    """``stages`` with the stage called ``name`` replaced by ``stage``."""
    if name not in {s.name for s in stages}:
        raise ValueError(f"no stage {name!r} to replace")
    return tuple(stage if s.name == name else s for s in stages)


def inserted_after(stages: Sequence[Stage], name: str, stage: Stage) -> tuple[Stage, ...]:
    """``stages`` with ``stage`` added right after the stage called ``name``."""
    names = [s.name for s in stages]
    if name not in names:
        raise ValueError(f"no stage {name!r} to add {stage.name!r} after")
    at = names.index(name) + 1
    return (*stages[:at], stage, *stages[at:])


def fixed_workload(options: RunOptions) -> tuple[Stage, ...]:
    """The fixed-workload run as ``options`` ask for it."""
    stages = FIXED_WORKLOAD
    if options.testers != 1:
        stages = replaced(stages, "load", LoadSplit())
    if options.cross_check:
        stages = inserted_after(stages, "load", CrossCheck(options.cross_check))
    return stages


def capacity_search(options: RunOptions) -> tuple[Stage, ...]:
    """The capacity search as ``options`` ask for it (``--testers N`` is the load stage's own
    business: it splits every probe)."""
    return CAPACITY_SEARCH


__all__ = [
    "CAPACITY_SEARCH",
    "CLOUD_ONLY",
    "FIXED_WORKLOAD",
    "capacity_search",
    "fixed_workload",
    "inserted_after",
    "replaced",
]
