"""Reports of a run: HTML (one self-contained file), Markdown, JSON and CSV (BigQuery rows),
and the dashboard's view of it (JSON its pages lay out).

:func:`build_report` decides the content (pure), with its charts and tables defined once
(``_charts``, ``_tables``); ``render_*`` and :func:`run_view` lay it out; :func:`load_report`
and :func:`score_run` read (and write) a stored run through the store's port
(``gatebench.core.model.ResultStore``). The capacity search's and the live runs' reports are
their kinds' (``gatebench.kinds.capacity``, ``gatebench.kinds._live``).
docs/results.md describes every format and the BigQuery schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeVar

from gatebench.core.errors import StoreError
from gatebench.core.model import ResultStore, RunKind, RunRecord
from gatebench.core.report._build import (
    RESOLUTION_NOTE,
    Report,
    Trust,
    baseline_handicaps,
    baseline_not_a_floor,
    build_report,
    json_safe,
    plan_scoring,
    resolution_note,
    resolve_scoring,
    traffic_source,
)
from gatebench.core.report._flat import (
    bigquery_schema,
    column_names,
    csv_cell,
    flat_rows,
    measurement_rows,
    render_csv,
)
from gatebench.core.report._html import render_html
from gatebench.core.report._markdown import render_markdown
from gatebench.core.report._view import VIEW_FORMAT, compare_view, run_summary, run_view, spec_name
from gatebench.core.score import PROFILES, Profile, ScoreError

Format = Literal["html", "json", "csv", "md"]
FORMATS: tuple[Format, ...] = ("html", "json", "csv", "md")


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


R = TypeVar("R")


def renderer_for(renderers: Mapping[str, Callable[[R], str]], fmt: str) -> Callable[[R], str]:
    """The renderer of ``fmt`` among ``renderers`` (a report's, one per format of
    :data:`FORMATS`); for any other format, a ValueError that names them."""
    found = renderers.get(fmt)
    if found is None:
        raise ValueError(f"unknown report format {fmt!r}; available: {', '.join(FORMATS)}")
    return found


def render(report: Report, fmt: Format) -> str:
    renderers = {"html": render_html, "json": render_json, "csv": render_csv, "md": render_markdown}
    return renderer_for(renderers, fmt)(report)


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
    scored with, else its plan's. Without ``weights``, the profile it was last scored with
    (named or not) keeps the weights it was scored with."""
    run = find_run(store, run_id)
    if weights is None:
        stored = _stored_scoring(store, run.run_id)
        if stored is not None and profile in (None, stored[0]):
            profile, weights = stored
    return build_report(run, store.measurements(run.run_id), profile=profile, weights=weights)


def _stored_scoring(
    store: ResultStore, run_id: str
) -> tuple[Profile, tuple[tuple[str, float], ...]] | None:
    """The profile and weights the run was last scored with (None before its first scoring)."""
    stored = store.scores(run_id)
    if not stored:
        return None
    first = next(iter(stored.values()))
    profile = first.get("profile")
    if profile not in PROFILES:
        return None
    if profile == "paper":
        return "paper", ()
    return "robust", tuple((str(m), float(w)) for m, w in (first.get("weights") or {}).items())


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
    if run.kind != RunKind.FIXED:  # its scores would say nothing was measured, and be stored
        raise ScoreError(
            f"run {run.run_id} is a {run.kind} run: only a fixed-workload run has the AGE "
            f"score; `gatebench report {run.run_id}` shows what it measured"
        )
    report = build_report(run, store.measurements(run.run_id), profile=profile, weights=weights)
    store.put_scores(run.run_id, report.summary.scores.to_documents())
    return report


__all__ = [
    "FORMATS",
    "RESOLUTION_NOTE",
    "VIEW_FORMAT",
    "Format",
    "Report",
    "Trust",
    "baseline_handicaps",
    "baseline_not_a_floor",
    "bigquery_schema",
    "build_report",
    "column_names",
    "compare_view",
    "csv_cell",
    "find_run",
    "flat_rows",
    "json_safe",
    "load_report",
    "measurement_rows",
    "plan_scoring",
    "render",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "renderer_for",
    "resolution_note",
    "resolve_scoring",
    "run_summary",
    "run_view",
    "score_run",
    "spec_name",
    "traffic_source",
]
