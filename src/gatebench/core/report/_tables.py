"""The report's tables, defined once: what each table holds (columns, rows, printed cells,
sort keys, which value is best), for every view to lay out.

The HTML report, the Markdown report and the dashboard's run page all render these same
tables (``_html``, ``_markdown``, ``_view``), so a column added here appears in each and
they cannot drift apart again. A view decides only presentation: HTML and the dashboard show
every column; the Markdown report, plain text meant to be read in a terminal or a pull
request, leaves out the columns marked ``compact=False`` (details shown next to them in
another table, such as the mean rank, shown in its rank stability table).

Cells are plain text (each view escapes for its format); numbers are printed by
``_format`` so that no view shows more precision than the measurement supports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gatebench.core.aggregate import CellSummary, RunSummary
from gatebench.core.metrics import COST_UNITS, METRICS, UNITS
from gatebench.core.records import fields
from gatebench.core.report._build import Report, metric_label, overhead_resolution
from gatebench.core.report._format import (
    fmt_ci,
    fmt_number,
    fmt_pct,
    fmt_score,
    fmt_signed,
    fmt_value,
    resolution_of,
)
from gatebench.core.resources import MIN_CPU_S
from gatebench.core.stats import counted, workload_descriptions

OVERHEAD_METRICS = ("mean", "p50", "p99", "throughput", "error_pct")
"""The metrics of the overhead table (error rate only where there is room)."""


@dataclass(frozen=True)
class Column:
    label: str
    numeric: bool
    compact: bool = True
    """Shown in the compact (Markdown) report too; False: only in HTML and the dashboard."""


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str | None = None
    best: bool = False
    """The best value among the gateways (the baseline never competes)."""
    tags: Sequence[str] = ()
    """Short notes printed after the value (``not measured``, ``noise``), in every view."""
    hints: Sequence[str] = ()
    """Notes only where there is room (HTML, the dashboard): what another column or table
    already says (``errors``: the latency tables carry the error rate)."""
    strong: bool = False
    """A total (the global score of a row): emphasised where the format allows."""

    def to_dict(self) -> dict[str, Any]:
        sort = finite(self.sort) if isinstance(self.sort, float) else self.sort
        out: dict[str, Any] = {"text": self.text, "sort": sort}
        if self.best:
            out["best"] = True
        if self.tags or self.hints:
            out["tags"] = [*self.tags, *self.hints]
        return out


@dataclass
class Row:
    header: str
    cells: list[Cell]
    tags: list[str] = field(default_factory=list)
    sort: str | None = None
    """The row header's sort key (the target), where the rows are sortable."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "header": self.header,
            "tags": list(self.tags),
            "cells": [c.to_dict() for c in self.cells],
        }


@dataclass
class Table:
    id: str
    caption: str
    columns: list[Column]
    """The row header's column first."""
    rows: list[Row] = field(default_factory=list)
    legend: str = ""
    subject: str = ""
    """What the table is about, for a heading (a latency table: its workload and what it
    sends); not in :meth:`to_dict`, whose caption says it."""

    def add(
        self,
        header: str,
        cells: Sequence[Cell],
        *,
        tags: Sequence[str] = (),
        sort: str | None = None,
    ) -> None:
        self.rows.append(Row(header, list(cells), list(tags), sort))

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(self, "id caption legend"),
            "columns": [{"label": c.label, "numeric": c.numeric} for c in self.columns],
            "rows": [r.to_dict() for r in self.rows],
        }


@dataclass(frozen=True)
class TextTable:
    """A table already printed, with the paragraph that introduces it: the first cell of a row
    is its header (and its sort key), the columns from ``numeric_from`` on are numbers."""

    id: str
    title: str
    intro: str
    header: Sequence[str]
    rows: list[list[str]]
    numeric_from: int


def text_table(table: Table) -> list[str]:
    """A table's compact columns as aligned plain text (the terminal's view), tags in brackets
    as in Markdown."""
    shown = [i for i, c in enumerate(table.columns) if c.compact]
    rows = []
    for row in table.rows:
        texts = [row.header, *(c.text for c in row.cells)]
        tags = [row.tags, *(c.tags for c in row.cells)]
        rows.append([texts[i] + "".join(f" ({t})" for t in tags[i]) for i in shown])
    header = [table.columns[i].label for i in shown]
    return aligned(header, rows, [table.columns[i].numeric for i in shown])


def aligned(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] | None = None
) -> list[str]:
    """Rows under a header as plain text in columns: numbers to the right, words to the left
    (``numeric``: which columns hold numbers; none by default)."""
    numeric = numeric or [False] * len(header)
    every = [list(header), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in every) for i in range(len(header))]
    return [
        "  ".join(
            (cell.rjust(w) if num else cell.ljust(w))
            for cell, w, num in zip(r, widths, numeric, strict=True)
        ).rstrip()
        for r in every
    ]


def finite(value: float | None) -> float | None:
    """``value``, or None when it is not a finite number (JSON has no NaN or infinity)."""
    if value is None or not math.isfinite(value):
        return None
    return value


# -- the report's tables ------------------------------------------------------------------


def score_table(report: Report) -> Table:
    """Global scores: rank, score, how often first, mean rank, what was not measured."""
    s = report.summary
    result = s.scores
    stability = {r.target: r for r in s.rank_stability}
    n = len(s.complete_repetitions)
    table = Table(
        "scores",
        f"Global scores ({result.profile} profile; the paper's Table V)",
        [
            Column("Gateway", False),
            Column("Rank", True),
            Column("Score", True),
            Column("First in", True),
            Column("Mean rank", True, compact=False),
            Column("Not measured on", False),
        ],
    )
    for g in result.gateways:
        r = stability.get(g.target)
        mean_rank = r.mean_rank if r else None
        table.add(
            g.target,
            [
                Cell(str(g.rank), g.rank),
                Cell(fmt_score(g.score), g.score, best=g.rank == 1),
                Cell(f"{r.first} of {n}" if r and n else "–", r.first if r else None),
                Cell(fmt_number(mean_rank, 1) if mean_rank is not None else "–", mean_rank),
                Cell(", ".join(g.missing) or "–"),
            ],
        )
    for target, why in s.unranked.items():
        table.add(
            target,
            [Cell("–"), Cell("–"), Cell("–"), Cell("–"), Cell(f"not scored: {why}")],
        )
    return table


def workload_score_table(report: Report) -> Table:
    """The score of each gateway per workload, and its global score (the paper's Fig. 4)."""
    result = report.summary.scores
    columns = [Column("Gateway", False)]
    columns += [Column(w, True) for w in result.workloads] + [Column("Global", True)]
    table = Table("workload-scores", "Score per workload (the paper's Fig. 4)", columns)
    for g in result.gateways:
        cells = []
        for w in result.workloads:
            e = g.endpoint(w)
            tags, hints = [], []
            if e.missing:
                tags.append("not measured")
            elif e.capped_from is not None:
                tags.append(f"capped from {fmt_score(e.capped_from)}: errors")
            elif e.has_errors:
                hints.append("errors")
            cells.append(Cell(fmt_score(e.score), e.score, tags=tags, hints=hints))
        cells.append(Cell(fmt_score(g.score), g.score, strong=True))
        table.add(g.target, cells)
    return table


def _target_tags(s: RunSummary, target: str) -> list[str]:
    """The tags of a target's row: ``no gateway`` for the baseline, ``wrong answers`` for a
    target that gave any in the run (it is never marked best)."""
    tags = ["no gateway"] if target == s.baseline else []
    if target in s.wrong:
        tags.append("wrong answers")
    return tags


def wrong_answers_cell(cell: CellSummary) -> Cell:
    """A cell's wrong answers: their count and kinds, ``unchecked`` when no repetition's
    answers were checked (wrk, a user's own backend), ``–`` in records older than the check."""
    if cell.wrong_answers:
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in cell.wrong_kinds)
        return Cell(f"{cell.wrong_answers:,}", cell.wrong_answers, tags=[kinds] if kinds else [])
    if cell.unchecked == cell.n:
        return Cell("unchecked", None)
    return Cell("0", 0)


def _latency_label(metric: str) -> str:
    """A latency table's column: every figure is a mean over the repetitions; the error rate
    says so, beside the requests of all repetitions."""
    if metric == "error_pct":
        return f"{metric_label(metric)}, mean of reps ({UNITS[metric]})"
    return f"{metric_label(metric)} ({UNITS[metric]})"


def latency_tables(report: Report) -> list[Table]:
    """One table per workload: every metric's mean ± its 95 % interval, per target; its
    caption says what the workload sends (``stats.workload_descriptions``)."""
    s, tables = report.summary, []
    described = workload_descriptions(report.run.workloads)
    for w in s.workloads:
        targets = s.measured_targets(w)
        if not targets:
            continue
        best = s.best_among_gateways(w)
        limited = any(s.cells[(w, t)].rate_limited is not None for t in targets)
        columns = [Column("Target", False)]
        columns += [Column(_latency_label(m), True) for m in METRICS]
        columns += [Column("Requests, all reps", True), Column("Reps", True)]
        columns.append(Column("Wrong answers", True))
        if limited:
            columns.append(Column("Rate-limited", True))
        sends = described.get(w)
        table = Table(
            f"latency-{w}",
            f"Workload {w}{f' ({sends})' if sends else ''}: latency, errors and throughput",
            columns,
            legend="Mean over the repetitions ± the half-width of its 95 % confidence interval; "
            "marked best: the best value among the ranked gateways (the baseline does not "
            "compete, nor does a gateway that is not ranked: one that failed during the run, "
            "gave wrong answers or was left out; nor a throughput the score leaves out: "
            "not scored, tester-bound or too short). Errors: the mean of the repetitions' "
            "error rates (KO / requests of each), as the score takes them, not the KO of all "
            "repetitions over their requests. Wrong answers: answers that were not "
            "the backend's answer to their request, whole, summed over the repetitions "
            '(docs/trust.md, "Right answers under load").'
            + (
                " Rate-limited: answers that were the plan's rate limit refusing the request "
                "(429), summed over the repetitions; counted in the requests, not in the "
                "errors (– where the plan limits nothing)."
                if limited
                else ""
            ),
            subject=f"{w} — {sends}" if sends else w,
        )
        competing = [t for t in targets if t != s.baseline and t not in s.unranked]
        gateways_here = len(competing)
        for t in targets:
            cell = s.cells[(w, t)]
            resolution = resolution_of(cell.engines)  # each reading at its engine's resolution
            cells = []
            for m in METRICS:
                sample = cell.metrics[m]
                # throughput the score leaves out here (the tester or the plan's rate set it,
                # or too short a phase)
                unscored = m == "throughput" and not s.throughput_scored(w)
                is_best = (
                    t in competing
                    and gateways_here > 1
                    and not unscored
                    and m in best
                    and sample.mean == best[m]
                )
                text = fmt_ci(m, sample.mean, sample.ci_half_width, resolution)
                hints = ["not scored"] if unscored and t != s.baseline else []
                cells.append(Cell(text, sample.mean, best=is_best, hints=hints))
            cells.append(Cell(f"{cell.requests:,}", cell.requests))
            cells.append(Cell(str(cell.n), cell.n))
            cells.append(wrong_answers_cell(cell))
            if limited:
                n = cell.rate_limited
                cells.append(Cell("–") if n is None else Cell(f"{n:,}", n))
            table.add(t, cells, tags=_target_tags(s, t), sort=t)
        tables.append(table)
    return tables


def overhead_table(s: RunSummary) -> Table:
    """Gateway minus baseline per workload, with the interval of the difference."""
    columns = [Column("Gateway", False), Column("Workload", False)]
    columns += [
        Column(f"{metric_label(m)} ({UNITS[m]})", True, compact=m != "error_pct")
        for m in OVERHEAD_METRICS
    ]
    table = Table(
        "overhead",
        "Overhead against the baseline: gateway minus no gateway",
        columns,
        legend="Difference of the means ± the half-width of its 95 % confidence interval "
        "(Welch); in brackets, relative to the baseline. Positive latency: the gateway adds "
        "time; negative throughput: it serves fewer requests per second.",
    )
    for g in s.gateways:
        for w in s.workloads:
            if s.overhead_for(w, g, "mean") is None:
                continue
            cells = [Cell(w, w)]
            resolution = overhead_resolution(s, w, g)
            for m in OVERHEAD_METRICS:
                o = s.overhead_for(w, g, m)
                if o is None:
                    cells.append(Cell("–"))
                    continue
                d = o.difference
                text = fmt_signed(m, d.estimate, d.half_width, resolution)
                if d.half_width:  # no "± 0": identical repetitions are not infinite precision
                    text += f" ± {fmt_value(m, d.half_width, d.half_width, resolution)}"
                if m != "error_pct" and o.relative_pct is not None:
                    text += f" ({fmt_pct(o.relative_pct)})"
                cells.append(Cell(text, d.estimate))
            table.add(g, cells, tags=_target_tags(s, g), sort=g)
    return table


COST_COLUMNS = (
    ("gateway_cpu_s", "Gateway CPU", True),
    ("req_per_cpu_s", "Requests per gateway CPU-second", True),
    ("gateway_rss_mb", "Gateway peak memory", True),
    ("backend_cpu_s", "Backend CPU", False),
    ("backend_rss_mb", "Backend peak memory", False),
    ("engine_cpu_s", "Engine CPU", True),
    ("engine_rss_mb", "Engine peak memory", False),
)
"""The cost table's columns: (figure, label, shown in the compact report)."""
_COST_BEST = {"req_per_cpu_s": max, "gateway_rss_mb": min}


def _fmt_cost(name: str, value: float) -> str:
    if name == "req_per_cpu_s":
        return fmt_number(value, 0 if value >= 100 else 1)
    if name.endswith("_cpu_s"):
        return fmt_number(value, 2 if value < 10 else 1)
    if name.endswith("_rss_mb"):
        return fmt_number(value, 0 if value >= 100 else 1)
    return fmt_number(value, 2)


def cost_table(s: RunSummary) -> Table | None:
    """What each phase cost, per workload and target: CPU seconds (user + system) per
    phase and peak resident memory of the gateway, the backend and the load engine, and
    requests per gateway CPU-second (means over the repetitions that measured them). None
    when nothing was measured (older runs, a cloud run without its gateway's samples)."""
    if not any(c.resources for c in s.cells.values()):
        return None
    columns = [Column("Target", False), Column("Workload", False)]
    columns += [
        Column(f"{label} ({COST_UNITS[name]})", True, compact=compact)
        for name, label, compact in COST_COLUMNS
    ]
    table = Table(
        "costs",
        "What each target cost: CPU and memory per measured phase",
        columns,
        legend="Mean over the repetitions. CPU: user + system seconds of the process tree "
        "(its container's, on the cloud path) during the phase; peak memory: the highest "
        "resident set sampled during it (every 0.2 s, and around it). Requests per gateway "
        "CPU-second: the requests one fully busy core of the gateway would serve each second, "
        "all the repetitions' requests over all their gateway CPU (not computed under "
        f"{MIN_CPU_S:g} CPU-s in all). Marked best: among the ranked gateways.",
    )
    for w in s.workloads:
        targets = [t for t in s.measured_targets(w) if s.cells[(w, t)].resources]
        gateways = [t for t in targets if t != s.baseline and t not in s.unranked]
        best: dict[str, float] = {}
        for name, pick in _COST_BEST.items():
            values = [
                s.cells[(w, t)].resources[name].mean
                for t in gateways
                if name in s.cells[(w, t)].resources
            ]
            if len(values) > 1:
                best[name] = pick(values)
        for t in targets:
            res = s.cells[(w, t)].resources
            cells = [Cell(w, w)]
            for name, _label, _compact in COST_COLUMNS:
                sample = res.get(name)
                if sample is None:
                    cells.append(Cell("–"))
                    continue
                is_best = t in gateways and name in best and sample.mean == best[name]
                cells.append(Cell(_fmt_cost(name, sample.mean), sample.mean, best=is_best))
            table.add(t, cells, tags=_target_tags(s, t), sort=t)
    return table


def stability_table(report: Report) -> Table:
    """Each complete repetition scored on its own: how often first, mean rank, the spread."""
    s = report.summary
    n = len(s.complete_repetitions)
    table = Table(
        "stability",
        f"Each complete repetition scored on its own ({counted(n, 'repetition')}; the same "
        f"{report.profile} profile)",
        [
            Column("Gateway", False),
            Column("First in", True),
            Column("Mean rank", True),
            Column("Score range", True, compact=False),
            Column("Ranks by repetition", False, compact=False),
        ],
    )
    for r in s.rank_stability:
        span = f"{fmt_score(min(r.scores))}–{fmt_score(max(r.scores))}" if r.scores else "–"
        ranks = ", ".join(
            f"#{rep}: {rank}" for rep, rank in zip(s.complete_repetitions, r.ranks, strict=True)
        )
        table.add(
            r.target,
            [
                Cell(f"{r.first} of {n}", r.first),
                Cell(fmt_number(r.mean_rank, 1) if r.mean_rank is not None else "–", r.mean_rank),
                Cell(span, min(r.scores) if r.scores else None),
                Cell(ranks),
            ],
        )
    return table


__all__ = [
    "COST_COLUMNS",
    "OVERHEAD_METRICS",
    "Cell",
    "Column",
    "Row",
    "Table",
    "cost_table",
    "finite",
    "latency_tables",
    "overhead_table",
    "score_table",
    "stability_table",
    "workload_score_table",
]
