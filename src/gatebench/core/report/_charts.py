"""The report's charts, defined once: what each chart draws (bars in groups with their printed
text and interval, or latency against offered rate), for every view to lay out.

The HTML report draws them as inline SVG (``_svg``); the dashboard is sent them as JSON
(:meth:`Chart.to_dict`, drawn by ``frontend/js/charts.js``), so the two say the same. Colours
are the view's (:func:`colours_for`: a stable colour per target, the baseline grey and
striped); numbers are printed by ``_format``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gatebench.core.aggregate import RunSummary
from gatebench.core.records import fields
from gatebench.core.report._build import Report, engine_name
from gatebench.core.report._format import GATLING_MS, fmt_ci, fmt_score, fmt_value, resolution_of
from gatebench.core.report._tables import finite

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#D55E00",
    "#56B4E9",
    "#7F6A00",
    "#000000",
    "#8C564B",
    "#17BECF",
)
BASELINE_COLOUR = "#8a8a8a"
OTHER_COLOUR = "#444444"
PERCENTILES = ("p50", "p90", "p99")
"""The percentiles the latency chart draws (the tables carry every metric)."""


def colours_for(targets: Sequence[str], baseline: str | None) -> dict[str, str]:
    """A stable colour per target: the report's target order picks from the palette."""
    out: dict[str, str] = {}
    for index, target in enumerate(t for t in targets if t != baseline):
        out[target] = PALETTE[index % len(PALETTE)]
    if baseline:
        out[baseline] = BASELINE_COLOUR
    return out


def nice_step(span: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 2.5 or 5 × 10^k) giving about ``ticks`` intervals."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power: float = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * power:
            return m * power
    return 10 * power


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str
    """The number as printed beside the bar."""
    low: float | None = None
    high: float | None = None
    baseline: bool = False
    """The baseline: drawn striped, so it differs by more than colour."""
    marks: Sequence[tuple[str, float]] = ()
    """Percentile charts: ``("p90", 3.0)`` along the bar."""
    resolution_ms: float = GATLING_MS
    """The resolution of the engine that measured the marks (``_format.fmt_value``)."""

    def to_dict(self, colours: Mapping[str, str]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "value": finite(self.value),
            "text": self.text,
            "colour": colours.get(self.label, OTHER_COLOUR),
            "baseline": self.baseline,
        }
        if self.low is not None and self.high is not None:
            out["low"], out["high"] = finite(self.low), finite(self.high)
        if self.marks:
            out["marks"] = [
                {
                    "name": name,
                    "value": finite(value),
                    "text": fmt_value(name, value, resolution_ms=self.resolution_ms),
                }
                for name, value in self.marks
            ]
        return out


@dataclass(frozen=True)
class Group:
    title: str
    bars: Sequence[Bar]
    max: float | None = None
    """Its own scale's end, in a chart whose groups each have their own scale
    (``Chart.per_group``); None: the next round number above its longest bar or whisker."""

    @property
    def top(self) -> float:
        values = [b.value for b in self.bars] + [b.high for b in self.bars if b.high is not None]
        return max([v for v in values if math.isfinite(v)] + [0.0])


def scale_end(top: float, given: float | None) -> tuple[float, float]:
    """(end, tick step) of a bar scale: ``given``, else the next round number above ``top``
    (the longest bar or whisker). The dashboard's charts.js computes the same."""
    step = nice_step(given if given is not None else top or 1.0)
    return (given if given is not None else step * math.ceil((top or 1.0) / step)), step


@dataclass
class Chart:
    """Horizontal bars in groups (a group per workload, a bar per target)."""

    id: str
    title: str
    description: str
    axis: str
    groups: list[Group]
    kind: str = "bars"
    """``bars`` (a bar per target, optional whisker) or ``percentiles`` (p50 → p90 → p99)."""
    max: float | None = None
    """The scale's end; None: the next round number above the longest bar or whisker."""
    legend: str = ""
    per_group: bool = False
    """Each group on its own scale (``Group.max``), drawn above its bars: workloads whose
    numbers differ by orders of magnitude (the auction's 60 and 12,000 req/s) each fill
    the width, instead of the small ones drawn as slivers beside the large."""

    @property
    def top(self) -> float:
        return max([g.top for g in self.groups] + [0.0])

    def to_dict(self, colours: Mapping[str, str]) -> dict[str, Any]:
        return {
            **fields(self, "id kind title description axis max legend per_group"),
            "groups": [
                {"title": g.title, "max": g.max, "bars": [b.to_dict(colours) for b in g.bars]}
                for g in self.groups
            ],
        }


@dataclass(frozen=True)
class RatePoint:
    rate: float
    p50: float
    p99: float
    text: str
    """The tooltip: rate, latencies, outcome."""
    held: bool


@dataclass(frozen=True)
class CurveSeries:
    """One target's probes, and its knee (a vertical line at the rate it carries)."""

    label: str
    points: Sequence[RatePoint]
    knee: float | None = None
    knee_text: str = ""
    baseline: bool = False


@dataclass(frozen=True)
class CurveChart:
    """p50 and p99 latency against the offered rate, one series per target (a capacity run)."""

    id: str
    title: str
    description: str
    series: Sequence[CurveSeries]
    objective_ms: float | None = None
    objective_text: str = ""
    workload: str = ""

    def to_dict(self, colours: Mapping[str, str]) -> dict[str, Any]:
        series = [
            {
                "label": s.label,
                "colour": colours.get(s.label, OTHER_COLOUR),
                "baseline": s.baseline,
                "knee": s.knee,
                "knee_text": s.knee_text,
                "points": [
                    {"rate": p.rate, "p50": p.p50, "p99": p.p99, "held": p.held, "text": p.text}
                    for p in s.points
                ],
            }
            for s in self.series
        ]
        return {
            "id": self.id,
            "kind": "curves",
            **fields(self, "workload title description objective_ms objective_text"),
            "series": series,
        }


# -- the run's charts -----------------------------------------------------------------------


def score_chart(report: Report) -> Chart | None:
    """The global score of each gateway (None before any gateway is scored)."""
    result = report.summary.scores
    if not result.gateways or not result.workloads:
        return None
    bars = [Bar(g.target, g.score, fmt_score(g.score)) for g in result.gateways]
    return Chart(
        "scores",
        "Global score per gateway (0–100)",
        "Mean of the workload scores of each gateway, "
        + ", ".join(f"{b.label} {b.text}" for b in bars),
        "score",
        [Group("All workloads", bars)],
        max=100.0,
        legend=f"{result.profile} profile: 100 is the best value on every metric of every workload.",
    )


def workload_score_chart(report: Report) -> Chart | None:
    """The score of each gateway per workload (the paper's Fig. 4; None before any)."""
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
            bars.append(Bar(g.target, e.score, text))
        groups.append(Group(w, bars))
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


def throughput_chart(s: RunSummary, chart_id: str = "throughput") -> Chart:
    """Mean throughput per endpoint with its interval (the paper's Fig. 3)."""
    groups = [
        Group(
            w,
            [
                Bar(
                    t,
                    x.mean,
                    fmt_ci("throughput", x.mean, x.ci_half_width) + " req/s",
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
        legend="Bars: mean over the repetitions; whiskers: 95 % confidence interval (none "
        "with a single repetition). Striped: the baseline, no gateway. Each endpoint on its "
        "own scale. (The paper's Fig. 3.)",
        per_group=True,
    )


def percentile_chart(s: RunSummary) -> Chart:
    """p50, p90 and p99 of each target per endpoint, along one bar."""
    groups = []
    engines: set[str] = set()
    for w in s.workloads:
        bars = []
        for t in s.measured_targets(w):
            cell = s.cells[(w, t)]
            engines.update(cell.engines)
            ms = resolution_of(cell.engines)
            marks = [(p, cell.metrics[p].mean) for p in PERCENTILES]
            text = " · ".join(f"{p} {fmt_value(p, v, resolution_ms=ms)}" for p, v in marks) + " ms"
            bars.append(
                Bar(t, marks[-1][1], text, baseline=t == s.baseline, marks=marks, resolution_ms=ms)
            )
        if bars:
            groups.append(Group(w, bars))
    readings, said = _readings(engines)
    return Chart(
        "latency",
        "Latency percentiles per endpoint (ms)",
        "For each target, the bar runs to p99; its thick part ends at p50 and its middle "
        f"part at p90. Means over the repetitions, {readings}.",
        "ms",
        groups,
        kind="percentiles",
        legend="Thick: up to p50 · middle: p50 to p90 · thin: p90 to p99. Each endpoint on its "
        f"own scale. {said}",
        per_group=True,
    )


def _readings(engines: set[str]) -> tuple[str, str]:
    """What the percentile chart says of its readings: (how they are read, each engine's
    resolution); a run measured by Gatling alone: its whole milliseconds, as ever."""
    if engines <= {"gatling"}:
        return (
            "whole-millisecond readings",
            "Gatling records whole milliseconds; <1 means under 1 ms.",
        )
    parts = []
    for e in sorted(engines):
        ms = resolution_of([e])
        under = f"<{ms:g}: under {ms:g} ms"
        parts.append(
            f"{engine_name(e)}: whole milliseconds ({under})"
            if ms >= GATLING_MS
            else f"{engine_name(e)}: {ms:g} ms ({under})"
        )
    how = "whole-millisecond readings"
    if any(resolution_of([e]) < GATLING_MS for e in engines):
        how = "readings at the resolution of the engine that measured them"
    return how, f"Readings at their engine's resolution: {'; '.join(parts)}."


__all__ = [
    "BASELINE_COLOUR",
    "PALETTE",
    "Bar",
    "Chart",
    "CurveChart",
    "CurveSeries",
    "Group",
    "RatePoint",
    "colours_for",
    "nice_step",
    "percentile_chart",
    "scale_end",
    "score_chart",
    "throughput_chart",
    "workload_score_chart",
]
