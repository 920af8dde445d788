"""The report of a capacity run (docs/capacity.md): HTML (self-contained, like the fixed run's),
Markdown, JSON and CSV rows for BigQuery.

:func:`build_capacity_report` decides the content (pure: a run record and its
:class:`~gatebench.kinds.capacity.CapacityResult` in); the renderers lay it out. Per endpoint: the
verdict, a table of what each target carries within the objective (95 % interval, requests per
gateway CPU-second, price per million requests where known), the knees as bars with their
intervals, every pair's comparison, and the latency-against-offered-rate curves (p50 and p99,
each target's knee marked, the objective drawn).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from gatebench.core._version import __version__
from gatebench.core.answers import WRONG_ANSWER
from gatebench.core.errors import StoreError
from gatebench.core.model import ResultStore, RunKind, RunRecord
from gatebench.core.report import VIEW_FORMAT, Format, find_run, renderer_for, run_summary
from gatebench.core.report._build import (
    BEYOND_BASELINE_PCT,
    baseline_handicaps,
    cpu_policy_sentence,
    json_safe,
    traffic_source,
)
from gatebench.core.report._charts import (
    Bar,
    Chart,
    CurveChart,
    CurveSeries,
    Group,
    RatePoint,
    colours_for,
)
from gatebench.core.report._flat import Row, _timestamp, column_names, rows_to_csv
from gatebench.core.report._html import _model_table, html_page
from gatebench.core.report._markdown import _model_table as _md_model_table
from gatebench.core.report._svg import curve_chart, hbar_chart
from gatebench.core.report._tables import Cell, Column, Table, text_table
from gatebench.core.thresholds import ThresholdResult, thresholds_from_plan
from gatebench.kinds.capacity import (
    BASELINE,
    CapacityResult,
    EndpointResult,
    KneeSummary,
    evaluate_capacity,
    price_text,
    rate_text,
    share_of_baseline,
    stored_capacity,
)

CAPACITY_NOTE = (
    "Latencies count from each request's intended start (the open model: a stalled target "
    "shows its queue), in milliseconds with microsecond resolution. Intervals are 95 % "
    "confidence intervals of the mean knee over the repetitions (Student's t); comparisons are "
    "ratios of geometric means with Welch's interval on the logarithms."
)


@dataclass(frozen=True)
class CapacityReport:
    run: RunRecord
    result: CapacityResult
    cautions: tuple[str, ...] = ()
    thresholds: tuple[ThresholdResult, ...] = ()
    generated_at: float = field(default_factory=time.time)

    @property
    def title(self) -> str:
        return self.run.title or self.run.spec_uri.rsplit("/", 1)[-1] or self.run.run_id

    @property
    def verdict(self) -> tuple[str, ...]:
        """A quick run's warning, each endpoint's, then the CPU policy the run ran under."""
        quick = quick_line(self.run.environment, self.result)
        return (
            *([quick] if quick else []),
            *(e.verdict for e in self.result.endpoints),
            *cpu_policy_sentence(self.run.environment),
        )

    @property
    def targets(self) -> list[str]:
        seen: dict[str, None] = {}
        for e in self.result.endpoints:
            for s in e.summaries:
                seen.setdefault(s.target, None)
        return sorted(seen, key=lambda t: (t == BASELINE, t))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = json_safe(
            {
                "gatebench": __version__,
                "kind": "capacity",
                "generated_at": self.generated_at,
                "run": self.run.to_dict(),
                "verdict": list(self.verdict),
                "cautions": list(self.cautions),
                "capacity": self.result.to_dict(),
                "thresholds": [
                    {
                        "threshold": r.threshold.to_dict(),
                        "target": r.target,
                        "workload": r.workload,
                        "value": r.value,
                        "bound": getattr(r, "bound", ""),
                        "passed": r.passed,
                    }
                    for r in self.thresholds
                ],
            }
        )
        return data


def precision_text(result: CapacityResult) -> str:
    """``search precision 5 %`` ("" when the result does not say)."""
    if result.precision is None:
        return ""
    return f"search precision {100 * result.precision:.0f} %"


def quick_line(environment: Mapping[str, Any], result: CapacityResult) -> str:
    """What a ``--quick`` run is, said first: a smoke run, not a capacity ("" otherwise)."""
    if not environment.get("quick"):
        return ""
    within = (
        f", each knee within {100 * result.precision:.0f} % at best"
        if result.precision is not None
        else ""
    )
    return (
        "A quick run (--quick): a smoke run that shows the search works here, not a capacity: "
        f"one repetition, short probes{within}; run without --quick for the figures."
    )


def capacity_cautions(
    result: CapacityResult, environment: Mapping[str, Any] | None = None
) -> list[str]:
    """What a reader must know before trusting the knees (``environment``: the run's record,
    which says what held the baseline back where a gateway carried more)."""
    out = []
    if "budget" in result.stop or "undecided" in result.stop:
        out.append(_stop_line(result))
    for e in result.endpoints:
        ahead = [
            c.better
            for c in e.comparisons
            if c.worse == BASELINE
            and (
                c.decided
                if c.low is not None or c.below is not None  # its interval, else 10 % more
                else (c.ratio or 0.0) > 1 + BEYOND_BASELINE_PCT / 100
            )
        ]
        if ahead:
            out.append(
                f"{', '.join(ahead)} carried more than the baseline (no gateway) on "
                f"{e.workload}: there the baseline is no floor"
                f"{baseline_handicaps(environment or {})}, so compare the gateways with one "
                "another."
            )
    for target, why in result.failed.items():
        out.append(
            f"{target} {why}: what it carried before is shown as such, not as a clean result; "
            "search it again."
        )
    for e in result.endpoints:
        for s in e.summaries:
            if s.upper_bounded:
                out.append(
                    f"{s.target} on {e.workload}: {s.label()}; the objective broke even at the "
                    "lowest rate the search offers (20 arrivals a probe window): it carries "
                    "less, how much less was not measured (a longer probe lowers that rate)."
                )
            if s.bounded:
                out.append(
                    f"{s.target} on {e.workload}: {s.label()}; the number is a lower bound, "
                    "not the target's knee."
                )
            if s.noisy:
                out.append(
                    f"{s.target} on {e.workload}: {s.label()}; neither figure is its knee: "
                    "search it again on a quieter machine."
                )
            if s.searches == 0 and not s.halted:
                out.append(f"{s.target} on {e.workload}: not searched (no search of it began).")
            elif not s.knees and not s.below and not s.halted:
                out.append(f"{s.target} on {e.workload}: no search finished (no knee).")
    noisy = sum(1 for c in result.curves if "noisy:" in c.reasons)
    if noisy:
        out.append(
            f"{noisy} of {len(result.curves)} probes ran while other processes used more than "
            "20 % of the machine (noisy): a breach there may be the neighbours'."
        )
    wrong = sorted({c.target for c in result.curves if WRONG_ANSWER in c.reasons})
    if wrong:
        probes = sum(1 for c in result.curves if WRONG_ANSWER in c.reasons)
        out.append(
            f"{probes} of {len(result.curves)} probes got wrong answers ({', '.join(wrong)}): "
            "answers that were not the backend's answer to their request, whole; a rate at "
            'which a target answers wrongly is not one it carries (docs/trust.md, "Right '
            'answers under load").'
        )
    shared = [c for c in result.curves if "shared core:" in c.reasons]
    if shared:
        why = shared[0].reasons.split("shared core: ", 1)[1].split(";")[0]
        out.append(
            f"{len(shared)} of {len(result.curves)} probes ran with the target on a core the "
            f"load generator could use too: {why}. Their knees are of the target beside its "
            "generator."
        )
    return out


def build_capacity_report(
    run: RunRecord,
    result: CapacityResult,
    *,
    thresholds: Sequence[ThresholdResult] = (),
    now: float | None = None,
) -> CapacityReport:
    return CapacityReport(
        run,
        result,
        tuple(capacity_cautions(result, run.environment)),
        tuple(thresholds),
        generated_at=time.time() if now is None else now,
    )


# -- tables (defined once: the HTML report, the Markdown report and the dashboard) ----------


def _plain(value: float | None, digits: int = 0) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:,.{digits}f}"


def best_gateway(endpoint: EndpointResult) -> str | None:
    """The gateway that carries the most, when that is decided: a positive knee (not a
    bound, not noisy, not of a gateway that stopped) whose comparison with every other gateway
    is decided in its favour, and there is at least one such comparison (one gateway alone is
    nobody's best)."""
    gateways = [s for s in endpoint.summaries if s.target != BASELINE]
    for s in gateways:
        if s.bounded or not s.clean or not s.estimate:
            continue
        against = [
            c
            for c in endpoint.comparisons
            if s.target in (c.better, c.worse) and BASELINE not in (c.better, c.worse)
        ]
        if (
            against
            and len(against) == len(gateways) - 1
            and all(c.better == s.target and c.decided for c in against)
        ):
            return s.target
    return None


def knee_notes(endpoint: EndpointResult) -> list[tuple[str, str]]:
    """(target, why) for every target whose searches stopped for a reason a reader needs
    (bounded, unconfirmed, failed): printed under the knee table, not in it, so the table keeps
    one line a row however long the reasons are."""
    out = []
    for s in endpoint.summaries:
        why = [s.disagreement_text()] if s.noisy else []
        why += list(s.notes)
        if why:
            out.append((s.target, "; ".join(why)))
    return out


def knee_table(endpoint: EndpointResult, index: int = 0) -> Table:
    """What each target carries on one endpoint: the knee with its interval, against the
    baseline, per gateway CPU-second, the price of a million requests (a column only where a
    price is known: the cloud path), the searches behind it. A share or price from a lower bound
    says so (``≤ 40 %``, ``≤ $0.0926``). Why searches stopped short goes under it
    (:func:`knee_notes`; the dashboard reads it in the legend)."""
    notes = "".join(f" {target}: {why}." for target, why in knee_notes(endpoint))
    priced = bool(endpoint.prices)
    table = Table(
        f"capacity-{index}",
        f"{endpoint.workload}: capacity per target",
        [
            Column("target", False),
            Column("carries", True),
            Column("of baseline", True),
            Column("req / gateway CPU-s", True),
            *([Column("$ / million req", True)] if priced else []),
            Column("repetitions", True, compact=False),
            Column("probes", True, compact=False),
        ],
        legend=(
            f"Carries: the rate held within the objective ({endpoint.objective}). "
            f"Stopped: {endpoint.stop}.{notes}"
        ),
    )
    base = endpoint.summary(BASELINE)
    best = best_gateway(endpoint)
    for s in sorted(endpoint.summaries, key=lambda s: (s.target == BASELINE, -(s.estimate or 0))):
        share, share_words = share_of_baseline(s, base)
        price = endpoint.prices.get(s.target)
        table.add(
            s.target,
            [
                Cell(s.label(), s.estimate, best=s.target == best),
                Cell(share_words, share),
                Cell(_plain(s.req_per_cpu_s), s.req_per_cpu_s),
                *([Cell(price_text(s, price), price)] if priced else []),
                Cell(str(len(s.knees)), float(len(s.knees))),
                Cell(str(s.probes), float(s.probes)),
            ],
            sort=s.target,
        )
    return table


def comparison_table(endpoint: EndpointResult, index: int = 0) -> Table:
    """Every pair of targets on one endpoint: which carries more, by how much, decided or not."""
    table = Table(
        f"capacity-pairs-{index}",
        f"{endpoint.workload}: every pair",
        [
            Column("carries more", False),
            Column("than", False),
            Column("by", True),
            Column("95 % CI", True),
            Column("order", False),
        ],
        legend="Ratio of geometric means with Welch's interval on the logarithms; decided when "
        "the interval excludes 0 %.",
    )
    for c in endpoint.comparisons:
        ci = c.interval() or "–"
        pct = None if c.ratio is None else 100.0 * (c.ratio - 1.0)
        table.add(
            c.better,
            [
                Cell(c.worse),
                Cell(c.by(), pct),
                Cell(ci),
                Cell("decided" if c.decided else "undecided"),
            ],
        )
    return table


# -- HTML -----------------------------------------------------------------------------------


def _e(value: object) -> str:
    return escape(str(value))


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], caption: str) -> str:
    table = Table("t", caption, [Column(h, False) for h in header])
    for row in rows:
        table.add(row[0], [Cell(c) for c in row[1:]])
    return _model_table(table)


def objective_line(objective: str) -> tuple[float | None, str]:
    """The p99 bound (else the first latency bound) of an objective's words, to draw."""
    bounds = [part.strip() for part in objective.split(",") if " ms" in part]
    chosen = next((b for b in bounds if b.startswith("p99")), bounds[0] if bounds else None)
    if chosen is None:
        return None, ""
    try:
        return float(chosen.split("≤")[1].replace("ms", "").strip()), chosen
    except (IndexError, ValueError):
        return None, ""


def knee_chart(e: EndpointResult, index: int = 0) -> Chart:
    """The rate each target carries on one endpoint, with its interval."""
    bars = []
    for s in sorted(e.summaries, key=lambda s: (s.target == BASELINE, s.target)):
        if s.estimate is not None:
            low, high = s.interval or (None, None)
            bars.append(Bar(s.target, s.estimate, s.label(), low, high, s.target == BASELINE))
    return Chart(
        f"knees-{index}",
        f"Rate each target carries on {e.workload} within {e.objective}",
        "Mean knee over the repetitions with its 95 % interval; ≥ marks a lower bound (the "
        "tester's limit or the plan's max_rate).",
        "req/s",
        [Group(e.workload, bars)],
    )


def curves_chart(result: CapacityResult, e: EndpointResult, index: int = 0) -> CurveChart:
    """Every probe of one endpoint: latency against the offered rate, each target's knee."""
    objective_ms, objective_text = objective_line(e.objective)
    series = []
    for s in sorted(e.summaries, key=lambda s: (s.target == BASELINE, s.target)):
        points = [
            RatePoint(
                c.rate,
                c.p50,
                c.p99,
                f"{rate_text(c.rate)} offered (repetition {c.repetition}, {c.kind}): "
                f"p50 {c.p50:.1f} ms, p99 {c.p99:.1f} ms, errors {c.error_pct:.2f} %, "
                f"{c.outcome}",
                c.outcome == "within",
            )
            for c in result.curves
            if c.target == s.target and c.workload == e.workload
        ]
        baseline = s.target == BASELINE
        series.append(CurveSeries(s.target, points, s.estimate, s.label(), baseline))
    return CurveChart(
        f"curves-{index}",
        f"{e.workload}: latency against offered rate",
        "Every probe of every repetition: p99 (dots, solid line) and p50 (squares, dashed "
        "line) against the rate offered, the latency axis logarithmic; the vertical lines are "
        "the knees, the red line the objective. Faded probes broke the objective.",
        series,
        objective_ms,
        objective_text,
        e.workload,
    )


def _endpoint_html(report: CapacityReport, e: EndpointResult, colour_of: Any, index: int) -> str:
    comparisons = _model_table(comparison_table(e, index)) if e.comparisons else ""
    notes = "".join(
        f"<li><strong>{_e(target)}</strong>: {_e(why)}</li>" for target, why in knee_notes(e)
    )
    precision = precision_text(report.result)
    return (
        f'<h3>{_e(e.workload)}</h3><p class="verdict">{_e(e.verdict)}</p>'
        f'<p class="legend">Objective: {_e(e.objective)}'
        + (f"; {_e(precision)}" if precision else "")
        + f". Stopped: {_e(e.stop)}.</p>"
        + _model_table(knee_table(e, index))
        + (f'<ul class="notes" aria-label="Why searches stopped">{notes}</ul>' if notes else "")
        + hbar_chart(knee_chart(e, index), colour_of)
        + curve_chart(curves_chart(report.result, e, index), colour_of)
        + comparisons
    )


def render_capacity_html(report: CapacityReport) -> str:
    colours = colours_for(report.targets, BASELINE)

    def colour_of(target: str) -> str:
        return colours.get(target, "#444444")

    endpoints = "".join(
        _endpoint_html(report, e, colour_of, i) for i, e in enumerate(report.result.endpoints)
    )
    thresholds = ""
    if report.thresholds:
        rows = [[r.subject, "pass" if r.passed else "FAIL", r.line()] for r in report.thresholds]
        thresholds = (
            '<section id="thresholds"><h2>Thresholds</h2>'
            + _table(["subject", "result", "detail"], rows, "Capacity thresholds")
            + "</section>"
        )
    result = report.result
    orders = "; ".join(f"{rep}: {', '.join(o)}" for rep, o in result.orders)
    price = (
        f"<dt>prices</dt><dd>{_e(result.machine)} at ${result.hourly_usd:.4f} an hour</dd>"
        if result.machine and result.hourly_usd
        else ""
    )
    run = report.run
    traffic = traffic_source(run)
    workloads = f"<dt>workloads</dt><dd>{_e(traffic)}</dd>" if traffic else ""
    cores = run.environment.get("cpus")
    method = (
        "<p>Each probe offers one constant arrival rate (an open model) for a warm-up and a "
        "measured window; the search grows the rate until the objective breaks, bisects to the "
        "plan's precision and confirms the rate found. A probe in which the load generator could "
        "not keep its schedule is tester-bound: the knee is then reported as at least the last "
        "rate that held. docs/capacity.md explains the method and its limits.</p>"
    )
    return html_page(
        title=f"gatebench capacity: {report.title} ({run.run_id})",
        subtitle=(
            f"gatebench capacity report · run {run.run_id} · {run.status.value} · "
            f"{_when(run.created_at)}"
        ),
        heading=report.title,
        verdict=report.verdict,
        cautions=report.cautions,
        body=f'<main><section id="capacity"><h2>Capacity per endpoint</h2>{endpoints}</section>'
        f"{thresholds}"
        f'<section id="run"><h2>Run</h2><dl class="meta"><dt>repetitions</dt>'
        f"<dd>{result.repetitions}</dd><dt>stopped</dt><dd>{_e(result.stop)}</dd>"
        f"<dt>target order</dt><dd>{_e(orders)}</dd>"
        + (f"<dt>cores</dt><dd>{_e(cores)}</dd>" if cores else "")
        + f"{price}{workloads}</dl></section>"
        f'<section id="method"><h2>How to read this report</h2>{method}</section></main>',
        footer=(
            f"Generated by gatebench {__version__} on {_when(report.generated_at)}. {CAPACITY_NOTE}"
        ),
    )


def capacity_view(report: CapacityReport) -> dict[str, Any]:
    """The dashboard's page of a capacity run (``gatebench-view/1``, as ``core.report``'s
    run view): the verdict per endpoint, cautions, and each endpoint's knees, curves and
    tables, the same as the HTML report's."""
    result, colours = report.result, colours_for(report.targets, BASELINE)
    charts: list[dict[str, Any]] = []
    tables: list[dict[str, Any]] = []
    for i, e in enumerate(result.endpoints):
        charts += [knee_chart(e, i).to_dict(colours), curves_chart(result, e, i).to_dict(colours)]
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
        "targets": report.targets,
        "baseline": BASELINE if BASELINE in report.targets else None,
        "colours": colours,
        "stop": result.stop,
        "charts": charts,
        "tables": tables,
        "thresholds": [
            {"subject": r.subject, "passed": r.passed, "line": r.line()} for r in report.thresholds
        ],
    }


# -- Markdown -------------------------------------------------------------------------------


def render_capacity_markdown(report: CapacityReport) -> str:
    lines = [f"# Capacity: {report.title}", "", f"Run `{report.run.run_id}`.", ""]
    quick = quick_line(report.run.environment, report.result)
    if quick:
        lines += [quick, ""]
    for i, e in enumerate(report.result.endpoints):
        lines += [
            f"## {e.workload}",
            "",
            e.verdict,
            "",
            f"Objective: {e.objective}"
            + (f"; {precision_text(report.result)}" if report.result.precision is not None else "")
            + f". Stopped: {e.stop}.",
            "",
        ]
        lines += _md_model_table(knee_table(e, i))
        notes = knee_notes(e)
        if notes:
            lines += [*(f"- {target}: {why}" for target, why in notes), ""]
        if e.comparisons:
            lines += _md_model_table(comparison_table(e, i))
    if report.cautions:
        lines += ["## Cautions", "", *(f"- {c}" for c in report.cautions), ""]
    if report.thresholds:
        lines += ["## Thresholds", "", *(f"- {r.line()}" for r in report.thresholds), ""]
    traffic = traffic_source(report.run)
    if traffic is not None:
        lines += [f"Workloads {traffic}.", ""]
    stopped = _stopped(report)
    lines += [*([stopped, ""] if stopped else []), CAPACITY_NOTE, ""]
    return "\n".join(lines)


def _stop_line(result: CapacityResult) -> str:
    return f"The searches stopped: {result.stop}."


def _stopped(report: CapacityReport) -> str | None:
    """Why the searches stopped, unless a caution already says it (a budget spent, an order
    left undecided)."""
    stopped = _stop_line(report.result)
    return None if stopped in report.cautions else stopped


def capacity_text(report: CapacityReport) -> list[str]:
    """What ``gatebench capacity`` prints at the end: per endpoint the objective, what each
    target carries and the verdict; then the cautions and why the searches stopped."""
    lines: list[str] = []
    quick = quick_line(report.run.environment, report.result)
    if quick:
        lines += ["", quick]
    for i, e in enumerate(report.result.endpoints):
        precision = precision_text(report.result)
        lines += [
            "",
            f"{e.workload} — objective {e.objective}" + (f"; {precision}" if precision else ""),
        ]
        lines += ["  " + line for line in text_table(knee_table(e, i))]
        lines += [f"  {target}: {why}" for target, why in knee_notes(e)]
        lines.append(e.verdict)
    if report.cautions:
        lines.append("")
        lines += [f"Caution: {c}" for c in report.cautions]
    stopped = _stopped(report)
    return [*lines, "", stopped] if stopped else lines


def render_capacity_json(report: CapacityReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# -- flat rows (BigQuery, CSV) --------------------------------------------------------------


def capacity_rows(report: CapacityReport) -> list[Row]:
    """Every number of a capacity run as rows of the BigQuery table: per endpoint and target the
    knee (``capacity``: mean and interval, or ``lower_bound``), each repetition's knee, requests
    per gateway CPU-second and the price at the knee; per probe its p50, p99, error rate and
    achieved rate at the offered rate (``statistic`` ``probe``, ``offered_rate`` set)."""
    run = report.run
    base: Row = {
        "run_id": run.run_id,
        "run_created_at": _timestamp(run.created_at),
        "run_title": run.title or None,
    }
    rows: list[Row] = []

    def add(
        target: str,
        workload: str,
        metric: str,
        statistic: str,
        value: float | None,
        unit: str,
        **extra: Any,
    ) -> None:
        if value is None or not math.isfinite(value):
            return
        row = dict.fromkeys(column_names())
        row.update(base)
        row.update(
            target=target,
            is_baseline=target == BASELINE,
            workload=workload,
            metric=metric,
            statistic=statistic,
            value=float(value),
            unit=unit,
        )
        row.update(extra)
        rows.append(row)

    for e in report.result.endpoints:
        for s in e.summaries:
            _summary_rows(add, e, s)
            price = e.prices.get(s.target)
            statistic = "upper_bound" if s.bounded else "value"  # at least R carried: at most
            add(s.target, e.workload, "capacity_price_per_million", statistic, price, "USD")
    for c in report.result.curves:
        for metric, value, unit in (
            ("p50", c.p50, "ms"),
            ("p99", c.p99, "ms"),
            ("error_pct", c.error_pct, "%"),
            ("throughput", c.achieved_rate, "req/s"),
        ):
            add(
                c.target,
                c.workload,
                metric,
                "probe",
                value,
                unit,
                repetition=c.repetition,
                offered_rate=c.rate,
                flags=f"{c.kind};{c.outcome}",
            )
    return rows


def _summary_rows(add: Any, e: EndpointResult, s: KneeSummary) -> None:
    n = len(s.knees)
    if s.bounded:
        add(s.target, e.workload, "capacity", "lower_bound", s.bound, "req/s", n=n)
    elif s.upper_bounded:
        add(s.target, e.workload, "capacity", "upper_bound", s.less_than or None, "req/s")
    else:
        add(s.target, e.workload, "capacity", "mean", s.mean, "req/s", n=n)
        ci = s.interval
        if ci is not None:
            add(s.target, e.workload, "capacity", "ci95_low", ci[0], "req/s", n=n)
            add(s.target, e.workload, "capacity", "ci95_high", ci[1], "req/s", n=n)
    for rep, knee in zip(s.repetitions, s.knees, strict=False):
        add(s.target, e.workload, "capacity", "value", knee, "req/s", repetition=rep)
    add(s.target, e.workload, "req_per_cpu_s", "mean", s.req_per_cpu_s, "req/CPU-s", n=n)


def render_capacity_csv(report: CapacityReport) -> str:
    return rows_to_csv(capacity_rows(report))


def render_capacity_junit(report: CapacityReport) -> str:
    """The capacity thresholds as JUnit XML (one case per threshold × target)."""
    from gatebench.core.report._junit import cases_of, junit_xml

    return junit_xml(report.run, cases_of(list(report.thresholds)))


def render_capacity(report: CapacityReport, fmt: Format) -> str:
    """A capacity run's report in one of :data:`FORMATS`."""
    renderers = {
        "html": render_capacity_html,
        "json": render_capacity_json,
        "csv": render_capacity_csv,
        "md": render_capacity_markdown,
    }
    return renderer_for(renderers, fmt)(report)


def load_capacity_report(store: ResultStore, run_id: str) -> CapacityReport:
    """The report of a stored capacity run, its capacity thresholds evaluated."""
    run = find_run(store, run_id)
    if run.kind != RunKind.CAPACITY:
        raise StoreError(
            f"run {run.run_id!r} is not a capacity run; `gatebench report {run.run_id}` "
            "writes its report"
        )
    stored = stored_capacity(store, run.run_id)
    if stored is None:  # still searching, or stopped before its result
        status = "still searching" if not run.status.finished else f"{run.status}"
        result = CapacityResult((), (), f"no result: the run is {status}", 0)
    else:
        result = CapacityResult.from_dict(stored)
    checks = evaluate_capacity(thresholds_from_plan(run.plan), result)
    return build_capacity_report(run, result, thresholds=checks)


__all__ = [
    "CAPACITY_NOTE",
    "CapacityReport",
    "best_gateway",
    "build_capacity_report",
    "capacity_cautions",
    "capacity_rows",
    "capacity_text",
    "capacity_view",
    "comparison_table",
    "curves_chart",
    "knee_chart",
    "knee_notes",
    "knee_table",
    "load_capacity_report",
    "render_capacity",
    "render_capacity_csv",
    "render_capacity_html",
    "render_capacity_json",
    "render_capacity_junit",
    "render_capacity_markdown",
]
