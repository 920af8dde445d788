"""The report as the dashboard shows it, sent as JSON (``gatebench-view/1``): the page only
lays it out (docs/frontend.md).

The run page gets the report's own charts (``_charts``) and tables (``_tables``), with the
colours of its targets; the comparison page puts two runs' throughput on one scale and the
change of each metric from A to B beside them; the runs list gets :func:`run_summary`.
Numbers are printed by the report's formatting (``_format``), so the dashboard never shows
more precision than the measurement supports and says the same as the HTML report. The local
server and the cloud read function send the same views.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gatebench.core.aggregate import CellSummary, RunSummary
from gatebench.core.confidence import welch_difference
from gatebench.core.metrics import METRICS, UNITS
from gatebench.core.model import RunRecord
from gatebench.core.report._build import Report, metric_label
from gatebench.core.report._charts import (
    colours_for,
    percentile_chart,
    scale_end,
    score_chart,
    throughput_chart,
    workload_score_chart,
)
from gatebench.core.report._format import (
    fmt_ci,
    fmt_pct,
    fmt_score,
    fmt_signed,
    fmt_value,
    resolution_of,
)
from gatebench.core.report._tables import (
    Cell,
    Column,
    Table,
    cost_table,
    latency_tables,
    overhead_table,
    score_table,
    workload_score_table,
)
from gatebench.core.trust import left_out_of

VIEW_FORMAT = "gatebench-view/1"
COMPARED_METRICS = ("throughput", "mean", "p99", "error_pct")


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
        # the kind of run, as gatebench.kinds.registry names it: fixed, capacity, scale or
        # change-under-load
        "kind": str(run.kind),
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
        # of those, the gateways left out before the run: their reason says so, not 'failed'
        "left_out": sorted(left_out_of(run.environment)),
    }


def run_view(report: Report) -> dict[str, Any]:
    """The run page: verdict, cautions, charts and tables of one run, and the targets that
    gave wrong answers (target → count; docs/trust.md, "Right answers under load")."""
    s = report.summary
    colours = colours_for(s.targets, s.baseline)
    scores = score_chart(report)
    charts = [scores, throughput_chart(s), percentile_chart(s), workload_score_chart(report)]
    tables = [
        score_table(report) if scores else None,
        workload_score_table(report) if scores else None,
        *latency_tables(report),
        overhead_table(s) if s.baseline is not None and s.overhead else None,
        cost_table(s),
    ]
    return {
        "format": VIEW_FORMAT,
        "run": run_summary(report.run),
        "title": report.title,
        "verdict": list(report.verdict),
        "cautions": list(report.cautions),
        "resolution": report.resolution_note,
        "profile": report.profile,
        "measurements": len(report.measurements),
        "targets": list(s.targets),
        "baseline": s.baseline,
        "wrong_answers": dict(s.wrong),
        "colours": colours,
        "charts": [c.to_dict(colours) for c in charts if c is not None and c.groups],
        "tables": [t.to_dict() for t in tables if t is not None and t.rows],
    }


def compare_view(a: Report, b: Report) -> dict[str, Any]:
    """Two runs side by side: their throughput charts on one scale, their scores, and the
    change of each metric from A to B per workload and target (B − A, Welch interval)."""
    sa, sb = a.summary, b.summary
    targets = list(dict.fromkeys([*sa.targets, *sb.targets]))
    baseline = sa.baseline or sb.baseline
    colours = colours_for(targets, baseline)
    charts_a = throughput_chart(sa, "throughput-a")
    charts_b = throughput_chart(sb, "throughput-b")
    # One scale per workload for both runs: the longer of the two bars sets it.
    tops: dict[str, float] = {}
    for group in (*charts_a.groups, *charts_b.groups):
        tops[group.title] = max(tops.get(group.title, 0.0), group.top)
    for chart in (charts_a, charts_b):
        chart.groups = [
            replace(g, max=scale_end(tops[g.title], None)[0]) if tops[g.title] > 0 else g
            for g in chart.groups
        ]
    notes = []
    same_scoring = a.scoring == b.scoring
    if not same_scoring:
        notes.append(
            f"The scores are not comparable: run A is scored with {_profile_words(a)}, run B "
            f"with {_profile_words(b)}, so their scores and ranks measure different things. "
            "Compare the metrics, or rescore one run with the other's profile (`gatebench "
            "score RUN --profile ...`)."
        )
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
    ranked_a = {g.target for g in sa.scores.gateways}
    ranked_b = {g.target for g in sb.scores.gateways}
    if same_scoring and ranked_a != ranked_b:
        # the paper's normalisation by each metric's best: a gateway added or removed moves
        # the best values it beats, which can reverse the order of two others (docs/scoring.md)
        notes.append(
            "Scores are relative to the best gateway within each run, and the runs ranked "
            "different gateways: adding or removing a gateway can reverse the order of two "
            "others, not only change their scores, so compare raw metrics across runs rather "
            "than score points or ranks."
        )
    elif same_scoring:
        notes.append(
            "Scores are relative to the best gateway within each run, so compare ranks and raw "
            "metrics across runs rather than score points."
        )
    return {
        "format": VIEW_FORMAT,
        "a": run_summary(a.run) | _scored(a),
        "b": run_summary(b.run) | _scored(b),
        "same_spec": a.run.spec_sha256 == b.run.spec_sha256,
        "same_scoring": same_scoring,
        "notes": notes,
        "colours": colours,
        "resolution": _compared_resolution(a, b),
        "charts": [c.to_dict(colours) for c in (charts_a, charts_b)],
        "tables": [
            t.to_dict()
            for t in (_score_comparison(a, b), *_metric_comparison(sa, sb, shared))
            if t.rows
        ],
    }


def _compared_resolution(a: Report, b: Report) -> str:
    """The resolution note of two runs: one note when they say the same, else each run's."""
    na, nb = a.resolution_note, b.resolution_note
    return na if na == nb else f"Run A: {na} Run B: {nb}"


def _scored(report: Report) -> dict[str, Any]:
    """What the comparison says of each run beside its summary: its verdict and the scoring
    its scores come from."""
    return {
        "verdict": list(report.verdict),
        "profile": report.profile,
        "weights": dict(report.weights),
        "scoring": report.scoring,
    }


def _profile_words(report: Report) -> str:
    """``the paper profile``, ``the robust profile (weights throughput×1, ...)``."""
    weights = ", ".join(f"{m}×{w:g}" for m, w in report.weights)
    return f"the {report.profile} profile" + (f" (weights {weights})" if weights else "")


def _score_comparison(a: Report, b: Report) -> Table:
    comparable = a.scoring == b.scoring
    table = Table(
        "scores-compared",
        "Global scores and ranks in each run"
        + ("" if comparable else " (not comparable: the runs are scored with different profiles)"),
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
        if ga is not None and gb is not None and not comparable:
            change = "not comparable"
        elif ga is not None and gb is not None:
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
        ms = resolution_of(cell.engines)
        return Cell(fmt_ci(metric, sample.mean, sample.ci_half_width, ms), sample.mean)

    if a is None or b is None:
        return [side(a), side(b), Cell("–")]
    sa, sb = a.metrics[metric], b.metrics[metric]
    d = welch_difference(sb, sa)
    ms = resolution_of([*a.engines, *b.engines])  # the coarser of the two sides'
    text = fmt_signed(metric, d.estimate, d.half_width, ms)
    if d.half_width:
        text += f" ± {fmt_value(metric, d.half_width, d.half_width, ms)}"
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
