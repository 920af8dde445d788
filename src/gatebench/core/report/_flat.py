"""Flat rows for BigQuery (and Looker Studio) and the CSV export: one schema, defined once.

``bigquery_schema.json`` beside this module is the table's schema in BigQuery's own JSON
format (``bq load --source_format=CSV --skip_leading_rows=1 TABLE report.csv
bigquery_schema.json``). The CSV has exactly its columns, in its order, with values
BigQuery parses unchanged: ``true``/``false``, ``YYYY-MM-DD HH:MM:SS.ffffff+00:00``
timestamps, plain decimal or exponent floats, and an empty field for NULL.

Rows are long (one number per row) so a dashboard filters by ``metric`` and
``statistic`` instead of knowing the columns in advance.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
from functools import cache
from importlib import resources
from typing import Any

from gatebench.core.metrics import COST_METRICS, COST_UNITS, METRICS, UNITS
from gatebench.core.report._build import Report

Row = dict[str, Any]


@cache
def bigquery_schema() -> tuple[dict[str, str], ...]:
    text = (
        resources.files("gatebench.core.report").joinpath("bigquery_schema.json").read_text("utf-8")
    )
    fields: list[dict[str, str]] = json.loads(text)
    return tuple(fields)


def column_names() -> tuple[str, ...]:
    return tuple(f["name"] for f in bigquery_schema())


def _timestamp(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).isoformat(sep=" ", timespec="microseconds")


def _row(
    report: Report,
    target: str,
    metric: str,
    statistic: str,
    value: float,
    unit: str,
    **columns: Any,
) -> Row:
    """One row of the table: every column, in its order, None where nothing gives a value."""
    run = report.run
    return {
        **dict.fromkeys(column_names()),
        "run_id": run.run_id,
        "run_created_at": _timestamp(run.created_at),
        "run_title": run.title or None,
        "target": target,
        "is_baseline": target == report.summary.baseline,
        "metric": metric,
        "statistic": statistic,
        "value": float(value),
        "unit": unit,
        **columns,
    }


def flat_rows(report: Report) -> list[Row]:
    """Every number of the report as a row of the BigQuery table."""
    s = report.summary
    rows: list[Row] = []

    def add(target: str, metric: str, statistic: str, value: float | None, **extra: Any) -> None:
        if value is None or not math.isfinite(value):
            return
        unit = extra.pop("unit", None) or UNITS.get(metric) or COST_UNITS.get(metric, "points")
        rows.append(_row(report, target, metric, statistic, value, unit, **extra))

    for (workload, target), cell in sorted(s.cells.items()):
        for name in METRICS:
            sample = cell.metrics[name]
            n = sample.n
            add(target, name, "mean", sample.mean, workload=workload, n=n)
            add(target, name, "stddev", sample.stddev, workload=workload, n=n)
            half = sample.ci_half_width
            if half is not None:
                add(target, name, "ci95_low", sample.mean - half, workload=workload, n=n)
                add(target, name, "ci95_high", sample.mean + half, workload=workload, n=n)
        for name in COST_METRICS:
            cost = cell.metrics.get(name)
            if cost is not None:
                add(target, name, "mean", cost.mean, workload=workload, n=cost.n)
                add(target, name, "stddev", cost.stddev, workload=workload, n=cost.n)
    for o in s.overhead:
        d = o.difference
        add(o.target, o.metric, "overhead", d.estimate, workload=o.workload)
        add(o.target, o.metric, "overhead_ci95_low", d.low, workload=o.workload)
        add(o.target, o.metric, "overhead_ci95_high", d.high, workload=o.workload)
    profile = report.profile
    for g in s.scores.gateways:
        add(g.target, "score", "global", g.score, profile=profile)
        add(g.target, "rank", "global", float(g.rank), profile=profile, unit="rank")
        for metric, weight in report.weights:
            add(g.target, metric, "weight", weight, profile=profile, unit="weight")
        for e in g.endpoints:
            add(g.target, "score", "endpoint", e.score, workload=e.workload, profile=profile)
            for ms in e.metrics:
                add(
                    g.target,
                    ms.metric,
                    "metric_score",
                    ms.score,
                    workload=e.workload,
                    profile=profile,
                    unit="points",
                )
    for r in s.rank_stability:
        for rep, (rank, sc) in zip(
            s.complete_repetitions, zip(r.ranks, r.scores, strict=True), strict=True
        ):
            add(r.target, "score", "global", sc, repetition=rep, profile=profile)
            add(
                r.target,
                "rank",
                "global",
                float(rank),
                repetition=rep,
                profile=profile,
                unit="rank",
            )
    return rows


def measurement_rows(report: Report) -> list[Row]:
    """One row per measured number (statistic ``value``), for every repetition."""
    return [
        _row(
            report,
            m.target,
            name,
            "value",
            value,
            UNITS.get(name) or COST_UNITS[name],
            workload=m.workload,
            repetition=m.repetition,
            flags=";".join(m.flags) or None,
        )
        for m in report.measurements
        for name, value in m.figures()
        if value is not None and math.isfinite(value)
    ]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet reads a cell that starts with one of these as a formula (OWASP, "CSV
Injection"): a text cell that does is written after a single quote, which makes it text."""


def csv_cell(value: Any) -> str:
    """One CSV cell: nothing for None, JSON's booleans, a float as Python reads it back,
    text a spreadsheet would run as a formula after a quote (:data:`FORMULA_STARTS`)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return str(value)


def rows_to_csv(rows: list[Row]) -> str:
    """Rows as CSV with a header: the BigQuery table's columns, in its order, ready to load.
    Text that a spreadsheet would run as a formula is neutralised here, not in the rows,
    which BigQuery also receives as JSON (:func:`csv_cell`)."""
    columns = column_names()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(row.get(c)) for c in columns])
    return out.getvalue()


def render_csv(report: Report) -> str:
    """The flat rows as CSV with a header: the BigQuery table, ready to load."""
    return rows_to_csv(measurement_rows(report) + flat_rows(report))
