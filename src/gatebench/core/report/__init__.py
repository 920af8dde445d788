"""Reports of a run: HTML (one self-contained file), Markdown, JSON and CSV (BigQuery rows).

:func:`build_report` decides the content (pure); ``render_*`` lay it out;
:func:`load_report` and :func:`score_run` are the edges that read (and write) the store.
docs/results.md describes every format and the BigQuery schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from gatebench.core.errors import StoreError
from gatebench.core.model import RunRecord
from gatebench.core.score import Profile
from gatebench.store import ResultStore
from gatebench.core.report._build import RESOLUTION_NOTE, Report, Trust, build_report, plan_scoring, resolve_scoring
from gatebench.kinds.capacity._report import (
    CapacityReport,
    build_capacity_report,
    capacity_rows,
    capacity_text,
    render_capacity_csv,
    render_capacity_html,
    render_capacity_json,
    render_capacity_markdown,
)
from gatebench.core.report._flat import bigquery_schema, column_names, flat_rows, measurement_rows, render_csv
from gatebench.core.report._html import render_html
from gatebench.core.report._markdown import render_markdown
from gatebench.kinds.scale._report import (
    CHANGE_KIND,
    SCALE_KIND,
    is_scale_run,
    point_key,
    render_scale_csv,
    render_scale_html,
    scale_bigquery_rows,
    scale_document,
    stored_scale_document,
)

Format = Literal["html", "json", "csv", "md"]
FORMATS: tuple[Format, ...] = ("html", "json", "csv", "md")


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render(report: Report, fmt: Format) -> str:
    if fmt == "html":
        return render_html(report)
    if fmt == "json":
        return render_json(report)
    if fmt == "csv":
        return render_csv(report)
    if fmt == "md":
        return render_markdown(report)
    raise ValueError(f"unknown report format {fmt!r}; available: {', '.join(FORMATS)}")


def render_capacity(report: CapacityReport, fmt: Format) -> str:
    """A capacity run's report in one of :data:`FORMATS`."""
    if fmt == "html":
        return render_capacity_html(report)
    if fmt == "json":
        return render_capacity_json(report)
    if fmt == "csv":
        return render_capacity_csv(report)
    if fmt == "md":
        return render_capacity_markdown(report)
    raise ValueError(f"unknown report format {fmt!r}; available: {', '.join(FORMATS)}")


def find_run(store: ResultStore, run_id: str) -> RunRecord:
    """The run named ``run_id`` (``latest``: the newest run), or StoreError saying what exists."""
    if run_id == "latest":
        runs = store.list_runs(limit=1)
        if not runs:
            raise StoreError("no run is stored yet; `gatebench run SPEC` makes one")
        return runs[0]
    run = store.get_run(run_id)
    if run is None:
        raise StoreError(f"run {run_id!r} does not exist; `gatebench runs` lists the stored runs")
    return run


def load_report(
    store: ResultStore,
    run_id: str,
    *,
    profile: Profile | None = None,
    weights: Sequence[tuple[str, float]] | None = None,
) -> Report:
    """Build the report of a stored run. Without ``profile``: the profile the run was last
    scored with, else its plan's."""
    run = find_run(store, run_id)
    if profile is None and weights is None:
        stored = store.scores(run.run_id)
        if stored:
            first = next(iter(stored.values()))
            if first.get("profile") in ("paper", "robust"):
                profile = first["profile"]
                weights = tuple((str(m), float(w)) for m, w in (first.get("weights") or {}).items())
                if profile == "paper":
                    weights = ()
    return build_report(run, store.measurements(run.run_id), profile=profile, weights=weights)


def is_capacity_run(run: RunRecord) -> bool:
    """A capacity run's record holds its result, and says what it is from its first write
    (``environment.run_kind``, gatebench.local.capacity_runner); a fixed-workload run's does neither."""
    return run.capacity is not None or run.environment.get("run_kind") == "capacity"


def load_capacity_report(store: ResultStore, run_id: str) -> CapacityReport:
    """The report of a stored capacity run, its capacity thresholds evaluated."""
    from gatebench.kinds.capacity import CapacityResult, evaluate_capacity
    from gatebench.core.thresholds import thresholds_from_plan

    run = find_run(store, run_id)
    if not is_capacity_run(run):
        raise StoreError(
            f"run {run.run_id!r} is not a capacity run; `gatebench report {run.run_id}` "
            "writes its report"
        )
    if run.capacity is None:  # still searching, or stopped before its result
        status = "still searching" if not run.status.finished else f"{run.status}"
        result = CapacityResult((), (), f"no result: the run is {status}", 0)
    else:
        result = CapacityResult.from_dict(run.capacity)
    checks = evaluate_capacity(thresholds_from_plan(run.plan), result)
    return build_capacity_report(run, result, thresholds=checks)


def score_run(
    store: ResultStore,
    run_id: str,
    *,
    profile: Profile | None = None,
    weights: Sequence[tuple[str, float]] | None = None,
) -> Report:
    """Score a stored run (the plan's profile unless told) and store the scores: the
    runner's scoring step, and ``gatebench score`` to rescore with another profile."""
    run = find_run(store, run_id)
    report = build_report(run, store.measurements(run.run_id), profile=profile, weights=weights)
    store.put_scores(run.run_id, report.summary.scores.to_documents())
    return report


__all__ = [
    "CHANGE_KIND",
    "FORMATS",
    "RESOLUTION_NOTE",
    "SCALE_KIND",
    "CapacityReport",
    "Format",
    "Report",
    "Trust",
    "bigquery_schema",
    "build_capacity_report",
    "build_report",
    "capacity_rows",
    "capacity_text",
    "column_names",
    "find_run",
    "flat_rows",
    "is_capacity_run",
    "is_scale_run",
    "load_capacity_report",
    "load_report",
    "measurement_rows",
    "plan_scoring",
    "point_key",
    "render",
    "render_capacity",
    "render_capacity_csv",
    "render_capacity_html",
    "render_capacity_json",
    "render_capacity_markdown",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "render_scale_csv",
    "render_scale_html",
    "resolve_scoring",
    "scale_bigquery_rows",
    "scale_document",
    "score_run",
    "stored_scale_document",
]
