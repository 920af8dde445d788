"""What the dashboard shows, decided here and sent as JSON: the page only lays it out.

The run page and the comparison page get *views*: charts as bars with their printed text,
interval ends and colour; tables as rows of printed cells with a sort key. Numbers are
printed by the report's own formatting (``report._format``), so the dashboard never shows
more precision than the measurement supports and says the same as the HTML report; the
run page's tables are the report's own (``report._tables``). The
local server and the cloud read function send the same views (docs/frontend.md).
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gatebench.core.aggregate import CellSummary, RunSummary
from gatebench.core.confidence import welch_difference
from gatebench.core.metrics import METRICS, UNITS
from gatebench.core.model import RunKind, RunRecord
from gatebench.core.report import RESOLUTION_NOTE, Report
from gatebench.core.report._build import metric_label
from gatebench.core.report._format import fmt_ci, fmt_pct, fmt_score, fmt_signed, fmt_value
from gatebench.core.report._svg import colours_for
from gatebench.core.report._tables import (
    Cell,
    Column,
    Table,
    cost_table,
    finite,
    latency_tables,
    overhead_table,
    score_table,
    workload_score_table,
)
from gatebench.kinds.capacity import BASELINE
from gatebench.kinds.capacity._report import (
    CAPACITY_NOTE,
    CapacityReport,
    comparison_table,
    knee_table,
    objective_line,
)

VIEW_FORMAT = "gatebench-view/1"
PERCENTILES = ("p50", "p90", "p99")
"""The percentiles the latency chart draws (the tables carry every metric)."""
COMPARED_METRICS = ("throughput", "mean", "p99", "error_pct")


# -- building blocks ----------------------------------------------------------------------


@dataclass
class Bar:
    label: str
    value: float
    text: str
    colour: str
    low: float | None = None
    high: float | None = None
    baseline: bool = False
    marks: list[dict[str, Any]] = field(default_factory=list)
    """Percentile charts: ``{"name": "p90", "value": 3.0, "text": "3"}`` along the bar."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "value": finite(self.value),
            "text": self.text,
            "colour": self.colour,
            "baseline": self.baseline,
        }
        if self.low is not None and self.high is not None:
            out["low"], out["high"] = finite(self.low), finite(self.high)
        if self.marks:
            out["marks"] = self.marks
        return out


@dataclass
class Chart:
    id: str
    title: str
    description: str
    axis: str
    groups: list[tuple[str, list[Bar]]]
    kind: str = "bars"
    """``bars`` (a bar per target, optional whisker) or ``percentiles`` (p50 → p90 → p99)."""
    max: float | None = None
    legend: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "axis": self.axis,
            "max": self.max,
            "legend": self.legend,
            "groups": [
                {"title": title, "bars": [b.to_dict() for b in bars]} for title, bars in self.groups
            ],
        }

    @property
    def top(self) -> float:
        values = [b.value for _, bars in self.groups for b in bars]
        values += [b.high for _, bars in self.groups for b in bars if b.high is not None]
        return max([v for v in values if math.isfinite(v)] + [0.0])


# -- runs ---------------------------------------------------------------------------------


def spec_name(spec_uri: str) -> str:
    """The file name of a run's spec, from a path, ``file://`` or ``gs://`` URI."""
    return posixpath.basename(spec_uri.split("#", 1)[0].rstrip("/")) or spec_uri


def run_summary(run: RunRecord) -> dict[str, Any]:
    """What the runs list and the run page header show about a run."""
    plan = run.plan if isinstance(run.plan, Mapping) else {}
    environment = run.environment if isinstance(run.environment, Mapping) else {}
    return {
        "run_id": run.run_id,
        "title": run.title,
        "status": str(run.status),
        "finished": run.status.finished,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "spec_name": spec_name(run.spec_uri),
        "spec_uri": run.spec_uri,
        "spec_sha256": run.spec_sha256,
        "gateways": list(run.gateways),
        # capacity (gatebench capacity), scale, change-under-load, or workload (a fixed run)
        "kind": "capacity" if run.kind == RunKind.CAPACITY else str(plan.get("kind", "workload")),
        "baseline": bool(plan.get("baseline", False)),
        "repetitions": plan.get("repetitions"),
        "quick": bool(environment.get("quick", False)),
        "workloads": [
            {k: w.get(k) for k in ("name", "method", "path", "injection")}
            for w in run.workloads
            if isinstance(w, Mapping)
        ],
        "failed_step": run.failed_step,
        "error": run.error,
        "teardown": run.teardown,
        "target_errors": {
            t: (reason.strip().splitlines() or ["no reason given"])[0]
            for t, reason in sorted(run.target_errors.items())
        },
    }


def run_view(report: Report) -> dict[str, Any]:
    """The run page: verdict, cautions, charts and tables of one run."""
    s = report.summary
    colours = colours_for(s.targets, s.baseline)
    charts = [
        _score_chart(report, colours),
        _throughput_chart(s, colours, "throughput"),
        _percentile_chart(s, colours),
        _workload_score_chart(report, colours),
    ]
    tables = [
        _score_table(report),
        _workload_score_table(report),
        *latency_tables(s),
        _overhead_table(s),
        cost_table(s),
    ]
    return {
        "format": VIEW_FORMAT,
        "run": run_summary(report.run),
        "title": report.title,
        "verdict": list(report.verdict),
        "cautions": list(report.cautions),
        "resolution": RESOLUTION_NOTE,
        "profile": report.profile,
        "measurements": len(report.measurements),
        "targets": list(s.targets),
        "baseline": s.baseline,
        "colours": colours,
        "charts": [c.to_dict() for c in charts if c is not None and c.groups],
        "tables": [t.to_dict() for t in tables if t is not None and t.rows],
    }


def capacity_view(report: CapacityReport) -> dict[str, Any]:
    """The run page of a capacity run: the verdict per endpoint, cautions, the knees as bars
    with their intervals, the latency-against-offered-rate curves (``kind: curves``), and the
    capacity and comparison tables of the HTML report (``report._capacity``)."""
    targets = report.targets
    colours = colours_for(targets, BASELINE)
    result = report.result
    charts: list[dict[str, Any]] = []
    groups = []
    for e in result.endpoints:
        bars = []
        for s in sorted(e.summaries, key=lambda s: (s.target == BASELINE, s.target)):
            if s.estimate is None:
                continue
            ci = s.interval
            bars.append(
                Bar(
                    s.target,
                    s.estimate,
                    s.label(),
                    colours[s.target],
                    None if ci is None else ci[0],
                    None if ci is None else ci[1],
                    baseline=s.target == BASELINE,
                )
            )
        groups.append((e.workload, bars))
    knees = Chart(
        "capacity",
        "Rate each target carries within the objective",
        "Mean knee over the repetitions with its 95 % interval, per endpoint; ≥ marks a lower "
        "bound (the tester's limit or the plan's max_rate).",
        "req/s",
        groups,
        legend="; ".join(f"{e.workload}: {e.objective}" for e in result.endpoints),
    )
    charts.append(knees.to_dict())
    for i, e in enumerate(result.endpoints):
        objective_ms, objective_text = objective_line(e.objective)
        series = []
        for s in sorted(e.summaries, key=lambda s: (s.target == BASELINE, s.target)):
            points = [
                {
                    "rate": c.rate,
                    "p50": c.p50,
                    "p99": c.p99,
                    "held": c.outcome == "within",
                    "text": f"{c.rate:,.0f}/s offered (repetition {c.repetition}, {c.kind}): "
                    f"p50 {c.p50:.1f} ms, p99 {c.p99:.1f} ms, errors {c.error_pct:.2f} %, "
                    f"{c.outcome}",
                }
                for c in result.curves
                if c.target == s.target and c.workload == e.workload
            ]
            series.append(
                {
                    "label": s.target,
                    "colour": colours[s.target],
                    "baseline": s.target == BASELINE,
                    "knee": s.estimate,
                    "knee_text": s.label(),
                    "points": points,
                }
            )
        charts.append(
            {
                "id": f"curves-{i}",
                "kind": "curves",
                "workload": e.workload,
                "title": f"{e.workload}: latency against offered rate",
                "description": "Every probe of every repetition: p99 (dots, solid line) and "
                "p50 (squares, dashed line) against the rate offered, the latency axis "
                "logarithmic; the vertical lines are the knees, the red line the objective. "
                "Faded probes broke the objective.",
                "objective_ms": objective_ms,
                "objective_text": objective_text,
                "series": series,
            }
        )
    tables = []
    for i, e in enumerate(result.endpoints):
        tables.append(knee_table(e, i).to_dict())
        if e.comparisons:
            tables.append(comparison_table(e, i).to_dict())
    return {
        "format": VIEW_FORMAT,
        "kind": "capacity",
        "run": run_summary(report.run),
        "title": report.title,
        "verdict": list(report.verdict),
        "cautions": list(report.cautions),
        "resolution": CAPACITY_NOTE,
        "measurements": len(result.curves),
        "targets": targets,
        "baseline": BASELINE if BASELINE in targets else None,
        "colours": colours,
        "stop": result.stop,
        "charts": charts,
        "tables": tables,
        "thresholds": [
            {"subject": r.subject, "passed": r.passed, "line": r.line()} for r in report.thresholds
        ],
    }


def _score_chart(report: Report, colours: Mapping[str, str]) -> Chart | None:
    result = report.summary.scores
    if not result.gateways or not result.workloads:
        return None
    bars = [Bar(g.target, g.score, fmt_score(g.score), colours[g.target]) for g in result.gateways]
    return Chart(
        "scores",
        "Global score per gateway (0–100)",
        "Mean of the workload scores of each gateway, "
        + ", ".join(f"{b.label} {b.text}" for b in bars),
        "score",
        [("All workloads", bars)],
        max=100.0,
        legend=f"{result.profile} profile: 100 is the best value on every metric of every workload.",
    )


def _workload_score_chart(report: Report, colours: Mapping[str, str]) -> Chart | None:
    result = report.summary.scores
    groups = []
    for w in result.workloads:
        bars = []
        for g in result.gateways:
            e = g.endpoint(w)
            text = "not measured" if e.missing else fmt_score(e.score)
            if e.capped_from is not None:
                text += f" (capped from {fmt_score(e.capped_from)}: errors)"
            elif e.has_errors and not e.missing:
                text += " (errors)"
            bars.append(Bar(g.target, e.score, text, colours[g.target]))
        groups.append((w, bars))
    if not groups:
        return None
    return Chart(
        "workload-scores",
        "Score per workload and gateway (0–100)",
        "For each workload, 100 × the mean of the metric scores of each gateway.",
        "score",
        groups,
        max=100.0,
    )


def _throughput_chart(
    s: RunSummary, colours: Mapping[str, str], chart_id: str, *, scale_max: float | None = None
) -> Chart:
    groups = [
        (
            w,
            [
                Bar(
                    t,
                    x.mean,
                    fmt_ci("throughput", x.mean, x.ci_half_width) + " req/s",
                    colours.get(t, "#444444"),
                    *x.ci_whiskers(),
                    baseline=t == s.baseline,
                )
                for t, x in samples
            ],
        )
        for w, samples in s.by_workload("throughput")
    ]
    return Chart(
        chart_id,
        "Mean throughput per endpoint (requests per second)",
        "Mean over the repetitions; whiskers show the 95 % confidence interval. "
        "The striped bar is the baseline (no gateway).",
        "req/s",
        groups,
        max=scale_max,
        legend="Bars: mean over the repetitions; whiskers: 95 % confidence interval (none "
        "with a single repetition). Striped: the baseline, no gateway.",
    )


def _percentile_chart(s: RunSummary, colours: Mapping[str, str]) -> Chart:
    groups = []
    for w in s.workloads:
        bars = []
        for t in s.targets:
            cell = s.cell(w, t)
            if cell is None:
                continue
            marks = []
            for p in PERCENTILES:
                value = cell.metrics[p].mean
                marks.append({"name": p, "value": finite(value), "text": fmt_value(p, value)})
            text = " · ".join(f"{m['name']} {m['text']}" for m in marks) + " ms"
            top = cell.metrics[PERCENTILES[-1]].mean
            bars.append(
                Bar(t, top, text, colours.get(t, "#444444"), baseline=t == s.baseline, marks=marks)
            )
        if bars:
            groups.append((w, bars))
    return Chart(
        "latency",
        "Latency percentiles per endpoint (ms)",
        "For each target, the bar runs to p99; its thick part ends at p50 and its middle "
        "part at p90. Means over the repetitions, whole-millisecond readings.",
        "ms",
        groups,
        kind="percentiles",
        legend="Thick: up to p50 · middle: p50 to p90 · thin: p90 to p99. Gatling records "
        "whole milliseconds; <1 means under 1 ms.",
    )


def _score_table(report: Report) -> Table | None:
    result = report.summary.scores
    if not result.gateways or not result.workloads:
        return None
    return score_table(report)


def _workload_score_table(report: Report) -> Table | None:
    result = report.summary.scores
    if not result.workloads or not result.gateways:
        return None
    return workload_score_table(report)


def _overhead_table(s: RunSummary) -> Table | None:
    if s.baseline is None or not s.overhead:
        return None
    return overhead_table(s)


# -- comparison of two runs ---------------------------------------------------------------


def compare_view(a: Report, b: Report) -> dict[str, Any]:
    """Two runs side by side: their throughput charts on one scale, their scores, and the
    change of each metric from A to B per workload and target (B − A, Welch interval)."""
    sa, sb = a.summary, b.summary
    targets = list(dict.fromkeys([*sa.targets, *sb.targets]))
    baseline = sa.baseline or sb.baseline
    colours = colours_for(targets, baseline)
    charts_a = _throughput_chart(sa, colours, "throughput-a")
    charts_b = _throughput_chart(sb, colours, "throughput-b")
    top = max(charts_a.top, charts_b.top)
    if top > 0:
        from gatebench.core.report._svg import nice_step

        step = nice_step(top)
        charts_a.max = charts_b.max = step * math.ceil(top / step)
    notes = []
    if a.run.spec_sha256 != b.run.spec_sha256:
        notes.append(
            "The two runs come from different specs: rows are matched by workload and target name."
        )
    shared = [w for w in sa.workloads if w in sb.workloads]
    only = sorted(set(sa.workloads) ^ set(sb.workloads))
    if only:
        notes.append(f"Workloads in only one run (left out of the changes): {', '.join(only)}.")
    if len(sa.complete_repetitions) < 2 or len(sb.complete_repetitions) < 2:
        notes.append(
            "A run with a single repetition gives no interval: a change cannot be told apart "
            "from run-to-run noise."
        )
    notes.append(
        "Scores are relative to the best gateway within each run, so compare ranks and raw "
        "metrics across runs rather than score points."
    )
    return {
        "format": VIEW_FORMAT,
        "a": run_summary(a.run) | {"verdict": list(a.verdict)},
        "b": run_summary(b.run) | {"verdict": list(b.verdict)},
        "same_spec": a.run.spec_sha256 == b.run.spec_sha256,
        "notes": notes,
        "colours": colours,
        "resolution": RESOLUTION_NOTE,
        "charts": [c.to_dict() for c in (charts_a, charts_b)],
        "tables": [
            t.to_dict()
            for t in (_score_comparison(a, b), *_metric_comparison(sa, sb, shared))
            if t.rows
        ],
    }


def _score_comparison(a: Report, b: Report) -> Table:
    table = Table(
        "scores-compared",
        "Global scores and ranks in each run",
        [
            Column("Gateway", False),
            Column("Score A", True),
            Column("Rank A", True),
            Column("Score B", True),
            Column("Rank B", True),
            Column("Rank change", True),
        ],
    )
    scores_a = {g.target: g for g in a.summary.scores.gateways}
    scores_b = {g.target: g for g in b.summary.scores.gateways}
    for target in dict.fromkeys([*scores_a, *scores_b]):
        ga, gb = scores_a.get(target), scores_b.get(target)
        change = "–"
        change_sort: float | None = None
        if ga is not None and gb is not None:
            moved = ga.rank - gb.rank
            change_sort = float(moved)
            change = "same" if moved == 0 else f"{'up' if moved > 0 else 'down'} {abs(moved)}"
        table.add(
            target,
            [
                Cell(fmt_score(ga.score) if ga else "not in A", ga.score if ga else None),
                Cell(str(ga.rank) if ga else "–", ga.rank if ga else None),
                Cell(fmt_score(gb.score) if gb else "not in B", gb.score if gb else None),
                Cell(str(gb.rank) if gb else "–", gb.rank if gb else None),
                Cell(change, change_sort),
            ],
        )
    return table


def _metric_comparison(sa: RunSummary, sb: RunSummary, workloads: Sequence[str]) -> list[Table]:
    tables = []
    for w in workloads:
        targets = list(dict.fromkeys([*sa.targets, *sb.targets]))
        columns = [Column("Target", False)]
        for m in COMPARED_METRICS:
            unit = UNITS[m]
            columns += [
                Column(f"{metric_label(m)} A ({unit})", True),
                Column(f"{metric_label(m)} B ({unit})", True),
                Column(f"{metric_label(m)} change", True),
            ]
        table = Table(
            f"compare-{w}",
            f"Workload {w}: run A, run B and the change B − A",
            columns,
            legend="Means over the repetitions ± the half-width of their 95 % confidence "
            "interval; the change is B − A with its Welch interval, marked 'noise' when the "
            "interval includes zero.",
        )
        for t in targets:
            ca, cb = sa.cell(w, t), sb.cell(w, t)
            if ca is None and cb is None:
                continue
            cells: list[Cell] = []
            for m in COMPARED_METRICS:
                cells.extend(_compared_cells(m, ca, cb))
            table.add(t, cells, tags=["no gateway"] if t in (sa.baseline, sb.baseline) else [])
        tables.append(table)
    return tables


def _compared_cells(metric: str, a: CellSummary | None, b: CellSummary | None) -> list[Cell]:
    def side(cell: CellSummary | None) -> Cell:
        if cell is None:
            return Cell("not measured")
        sample = cell.metrics[metric]
        return Cell(fmt_ci(metric, sample.mean, sample.ci_half_width), sample.mean)

    if a is None or b is None:
        return [side(a), side(b), Cell("–")]
    sa, sb = a.metrics[metric], b.metrics[metric]
    d = welch_difference(sb, sa)
    text = fmt_signed(metric, d.estimate, d.half_width)
    if d.half_width:
        text += f" ± {fmt_value(metric, d.half_width, d.half_width)}"
    if metric != "error_pct" and sa.mean:
        text += f" ({fmt_pct(100.0 * d.estimate / sa.mean)})"
    tags = []
    if d.significant is False:
        tags.append("noise")
    elif d.significant and d.estimate != 0:
        better = (d.estimate > 0) == (METRICS[metric] == "higher")
        tags.append("better" if better else "worse")
    return [side(a), side(b), Cell(text, d.estimate, tags=tags)]


__all__ = [
    "VIEW_FORMAT",
    "compare_view",
    "run_summary",
    "run_view",
    "spec_name",
]
