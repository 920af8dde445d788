"""What a kind of run is to the run machinery: a name, how a request becomes the plan as run
and the record's first lines, its stage list, and how its final status is decided. The kinds
themselves (fixed, capacity, scale, change under load) live in ``gatebench.kinds``, one package
each, in one registry (``gatebench.kinds.registry``), as k6 registers its executors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gatebench.core.ir import Api
from gatebench.core.model import ResultStore, RunKind, RunRecord, RunStatus
from gatebench.core.plan import Plan
from gatebench.core.score import Profile
from gatebench.run._base import Stage
from gatebench.run._context import RunContext, RunOptions, measured_status

Ask = TypeVar("Ask")


@dataclass(frozen=True)
class Prepared:
    """A request made ready to run: the plan as run, and what the run's record starts with."""

    plan: Plan
    gateways: Sequence[str]
    record_plan: dict[str, Any]
    """The record's ``plan``: what the run measures, JSON-shaped."""
    workloads: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KindReport:
    """A stored run's report in one format, and the file name an HTML one takes in the run's
    folder."""

    text: str
    html_name: str = "report.html"


@dataclass(frozen=True)
class Kind(Generic[Ask]):
    """One kind of run. ``Ask`` is what a person asks it for: a plan (fixed, capacity), or the
    sizes or change and the load's settings (scale, change under load)."""

    name: RunKind
    title: str
    """In words, for reports and progress: ``fixed workload``, ``capacity search``, ..."""
    command: str
    """The ``gatebench`` command that runs it here."""
    prepare: Callable[[Api, Ask, RunOptions], Prepared]
    stages: Callable[[Ask, RunOptions], tuple[Stage, ...]]
    report: Callable[[ResultStore, RunRecord, str, Profile | None], KindReport]
    """A stored run of this kind as ``format`` (``html``, ``json``, ``csv``, ``md``, ``junit``):
    its own report section; a format it has no report in is a RunError that says which it
    has."""
    view: Callable[[ResultStore, RunRecord], dict[str, Any]]
    """A stored run of this kind as the dashboard's run page reads it (``/api/runs/ID/view``)."""
    status_rule: Callable[[RunContext], RunStatus] = measured_status
    compared: bool = False
    """Two runs of this kind can stand side by side on the dashboard (``/api/compare``)."""
    live: bool = False
    """A live run (route scale, change under load): ``/api/runs/ID/scale`` serves its points
    and changes."""


__all__ = ["Kind", "KindReport", "Prepared"]
