"""The score: one 0–100 number per gateway, from the AGE paper (§IV-C), and a stricter option.

Profile ``paper`` (the default) applies the paper's equations (1)–(6), with two differences
from the paper: it scores the error % beside the paper's nine metrics (throughput and eight
response times), and it raises a latency under the load engine's resolution to that
resolution (below). For each endpoint (workload) ``e`` and metric ``m``, the best value over
the gateways is the minimum (latency, error %) or the maximum (throughput), and gateway ``g``
scores::

    score_meg = 1                                  if v == best
              = 1 - |best - v| / v                 lower is better   (eq. 3)
              = 1 - |best - v| / best              higher is better  (eq. 4)
    score_eg  = 100 * mean over metrics of score_meg                 (eq. 5)
    score_g   = mean over endpoints of score_eg                      (eq. 6)

The baseline (no gateway) never competes: its numbers are reported beside the gateways'.

What the paper leaves open, and what gatebench does (docs/scoring.md has worked examples):

- A latency under the resolution of the load engine that measured it (Gatling records whole
  milliseconds, and a 0 ms minimum is common on loopback; wrk and gatebench-loadgen record
  microseconds): it is raised to that resolution before scoring (``resolution_ms``, per
  workload; the run's aggregation passes the coarsest among the engines of the compared
  gateways), so with Gatling 0 ms and 1 ms tie instead of the 1 ms gateway scoring 0 for a
  difference the clock cannot see, and a 0 reading never divides by zero. Values at or above
  it (all of the paper's) are untouched; a note counts the values raised and names the
  engine.
- Zero errors everywhere, or zero throughput everywhere: every gateway equals the best and
  scores 1 on that metric (eq. 3/4, first case); nothing is divided by zero.
- Errors where the best is 0 %: ``1 - |0 - v| / v = 0`` — any error rate scores 0 on the
  error metric, as the equation says.
- A gateway without a measurement for an endpoint (it failed there): its endpoint score is
  0 and still counts in its mean; the best of that endpoint is taken over the others. An
  endpoint no gateway measured is left out of every mean.
- A single gateway: it is the best everywhere and scores 100; the score then compares
  nothing, and a note says so (the overhead against the baseline is what to read).
- No workload measured for any gateway (a run stopped before its first gateway's phase): no
  gateway is scored, so none has a score or a rank (``ScoreResult.gateways`` is empty), not 0
  and a shared first place. What "scored" means is decided here, once: a gateway is scored when
  at least one workload was measured for some gateway.
- A metric that cannot rank the gateways on one endpoint (``left_out``; the aggregation
  passes throughput there when a gateway was tester-bound, docs/trust.md) is left out of that
  endpoint's mean for every gateway; eq. 5 averages the other metrics.

Profile ``robust`` (opt-in) goes beyond the paper: a difference from the best that lies
inside the 95 % confidence interval of the difference (Welch) is a tie and scores 1; a
gateway with errors on an endpoint scores at most the lowest endpoint score of the gateways
without errors there, times its share of successful requests (so it ranks below them, and
scores 0 when every request failed); metrics carry weights (default 1 each). Opt-in, it also
scores what a gateway costs (``gatebench.core.metrics.COST_METRICS``: requests per gateway
CPU-second, higher is better; peak resident MB, lower is better) when the weights name them,
with the same equations; an endpoint where a gateway has no such figure (not measured, or
too little CPU to divide by) leaves that metric out for every gateway, with a note.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from gatebench.core.confidence import Sample, welch_difference
from gatebench.core.errors import GatebenchError
from gatebench.core.metrics import COST_METRICS, METRICS, UNITS
from gatebench.core.model import BASELINE
from gatebench.core.records import find
from gatebench.core.stats import counted

_T = TypeVar("_T")
Profile = Literal["paper", "robust"]
PROFILES: tuple[Profile, ...] = ("paper", "robust")
RESOLUTION_MS = 1.0
"""The floor when the caller names no load engine: Gatling's whole millisecond. A run's
score uses the resolution of the engine that measured each workload
(:func:`gatebench.core.aggregate.summarize`, ``gatebench.core.trust.ENGINE_RESOLUTION_MS``)."""

Values = Mapping[str, Mapping[str, Mapping[str, Sample]]]
"""workload → target → metric → the metric over the repetitions (mean, std dev, n)."""


class ScoreError(GatebenchError):
    """The values handed to the score cannot be scored (a missing metric, a bad weight...)."""


@dataclass(frozen=True)
class MetricScore:
    metric: str
    value: float
    """The value scored: the mean, raised to the resolution for latencies."""
    best: float
    score: float
    """0..1."""
    tied: bool = False
    """Robust profile: not the best, but inside the confidence interval of the best."""


@dataclass(frozen=True)
class EndpointScore:
    workload: str
    target: str
    score: float
    """0..100 (0 when missing)."""
    metrics: tuple[MetricScore, ...] = ()
    missing: bool = False
    """The target has no measurement for this workload (it failed there)."""
    has_errors: bool = False
    capped_from: float | None = None
    """Robust profile: the score before the errors rule lowered it."""

    def metric(self, name: str) -> MetricScore:
        return find(self.metrics, "metric", name)


@dataclass(frozen=True)
class GatewayScore:
    target: str
    score: float
    """0..100: the mean of the endpoint scores."""
    rank: int
    """1 is best; equal scores share a rank (1, 2, 2, 4)."""
    endpoints: tuple[EndpointScore, ...]
    missing: tuple[str, ...] = ()

    def endpoint(self, workload: str) -> EndpointScore:
        return find(self.endpoints, "workload", workload)


@dataclass(frozen=True)
class ScoreResult:
    profile: Profile
    metrics: tuple[str, ...]
    """The metrics in the scores (those with a weight above 0)."""
    weights: tuple[tuple[str, float], ...]
    """The weight of every metric asked for, 0 included (all 1 in the paper profile)."""
    workloads: tuple[str, ...]
    """The workloads in the means (at least one gateway measured them)."""
    gateways: tuple[GatewayScore, ...]
    """The gateways scored, best first (then by name); empty when no workload was measured
    for any gateway (:func:`score`)."""
    unscored: tuple[str, ...] = ()
    """Workloads no gateway measured: left out of every mean."""
    notes: tuple[str, ...] = field(default=())
    left_out: tuple[tuple[str, str], ...] = ()
    """(workload, metric) pairs left out of the score for every gateway (tester-bound
    throughput: docs/trust.md)."""

    def gateway(self, target: str) -> GatewayScore:
        return find(self.gateways, "target", target)

    @property
    def leaders(self) -> tuple[str, ...]:
        """The gateways ranked first (more than one when they tie)."""
        return tuple(g.target for g in self.gateways if g.rank == 1)

    def to_documents(self) -> dict[str, dict[str, Any]]:
        """One document per gateway: ``runs/{run}/scores/{target}`` in the result store."""
        docs: dict[str, dict[str, Any]] = {}
        for g in self.gateways:
            docs[g.target] = {
                "target": g.target,
                "profile": self.profile,
                "score": g.score,
                "rank": g.rank,
                "missing": list(g.missing),
                "weights": dict(self.weights),
                "notes": list(self.notes),
                "endpoints": {
                    e.workload: {
                        "score": e.score,
                        "missing": e.missing,
                        "has_errors": e.has_errors,
                        "capped_from": e.capped_from,
                        "metrics": {
                            ms.metric: {
                                "value": ms.value,
                                "best": ms.best,
                                "score": ms.score,
                                "tied": ms.tied,
                            }
                            for ms in e.metrics
                        },
                    }
                    for e in g.endpoints
                },
            }
        return docs

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "metrics": list(self.metrics),
            "weights": dict(self.weights),
            "workloads": list(self.workloads),
            "unscored": list(self.unscored),
            "left_out": [list(pair) for pair in self.left_out],
            "notes": list(self.notes),
            "gateways": self.to_documents(),
            "order": [g.target for g in self.gateways],
        }


def metric_score(value: float, best: float, direction: str) -> float:
    """Equations (3) and (4) for one value: 1 for the best, else the relative distance."""
    if value == best:
        return 1.0
    if direction == "lower":
        return 1.0 - abs(best - value) / value  # value > best >= 0 here: never 0
    return 1.0 - abs(best - value) / best  # best > value >= 0 here: never 0


def effective_weights(
    profile: Profile,
    weights: Mapping[str, float] | Sequence[tuple[str, float]] | None,
    metrics: Sequence[str],
) -> dict[str, float]:
    """Every scored metric's weight: 1 unless the robust profile's weights say otherwise."""
    given = dict(weights or {})
    if profile == "paper":
        if given:
            raise ScoreError(
                "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally"
            )
        return dict.fromkeys(metrics, 1.0)
    out = dict.fromkeys(metrics, 1.0)
    for name, weight in given.items():
        if name not in METRICS and name not in COST_METRICS:
            raise ScoreError(
                f"no metric {name!r} to weigh; metrics: {', '.join([*METRICS, *COST_METRICS])}"
            )
        if name not in out and name in COST_METRICS and weight == 0:
            continue  # a cost metric weighed 0 is simply not scored
        if name not in out:
            raise ScoreError(f"metric {name!r} has a weight but is not scored")
        if not math.isfinite(weight) or weight < 0:
            raise ScoreError(f"weight of {name!r}: expected a number >= 0, got {weight!r}")
        out[name] = float(weight)
    if not any(out.values()):
        raise ScoreError("at least one weight must be above 0")
    return out


def _scored_value(metric: str, value: float, resolution_ms: float) -> float:
    if UNITS.get(metric) == "ms":
        return max(value, resolution_ms)
    return value


def score(
    values: Values,
    *,
    gateways: Sequence[str] | None = None,
    workloads: Sequence[str] | None = None,
    profile: Profile = "paper",
    weights: Mapping[str, float] | Sequence[tuple[str, float]] | None = None,
    metrics: Sequence[str] | None = None,
    resolution_ms: float | Mapping[str, float] = RESOLUTION_MS,
    engines: str | Mapping[str, str] | None = None,
    baseline: str = BASELINE,
    left_out: Mapping[str, Collection[str]] | None = None,
) -> ScoreResult:
    """Score every gateway over every workload. Pure: the same values give the same result.

    ``gateways`` and ``workloads`` fix the order and say who was expected (a gateway listed
    without values for a workload failed there); by default they are read from ``values``.
    ``metrics`` defaults to all of :data:`gatebench.core.metrics.METRICS`. ``left_out``: workload →
    metrics left out of that workload's score (for every gateway).

    ``resolution_ms``: the latency resolution of the load engine that measured the values, one
    for every workload or workload → resolution (a workload not in the map: :data:`RESOLUTION_MS`);
    latencies under it are scored as it. ``engines``: that engine's name (or workload → name),
    for the note that counts the values raised; None: "the load engine".
    """
    if profile not in PROFILES:
        raise ScoreError(f"unknown scoring profile {profile!r}; available: {', '.join(PROFILES)}")
    scored_metrics = tuple(metrics) if metrics is not None else tuple(METRICS)
    for name in scored_metrics:
        if name not in METRICS:
            raise ScoreError(f"no metric {name!r}; metrics: {', '.join(METRICS)}")
    if profile == "robust":
        # opt-in: a cost metric is scored only when the weights give it one
        scored_metrics += tuple(
            name for name, w in dict(weights or {}).items() if name in COST_METRICS and w > 0
        )
    weight_of = effective_weights(profile, weights, scored_metrics)
    active = tuple(m for m in scored_metrics if weight_of[m] > 0)
    if workloads is None:
        workloads = list(values)
    if gateways is None:
        seen: dict[str, None] = {}
        for w in workloads:
            for t in values.get(w, {}):
                seen.setdefault(t)
        gateways = sorted(seen)
    gateways = [g for g in gateways if g != baseline]
    if len(set(gateways)) != len(gateways):
        raise ScoreError(f"a gateway is listed twice: {', '.join(gateways)}")

    notes: list[str] = []
    floored: dict[tuple[float, str | None], int] = {}  # (resolution, engine) → values raised
    scored_workloads: list[str] = []
    unscored_workloads: list[str] = []
    dropped_pairs: list[tuple[str, str]] = []
    per_gateway: dict[str, list[EndpointScore]] = {g: [] for g in gateways}
    single_rep = False

    for workload in workloads:
        row = values.get(workload, {})
        present = [g for g in gateways if g in row]
        if not present:
            unscored_workloads.append(workload)
            continue
        scored_workloads.append(workload)
        dropped = set((left_out or {}).get(workload, ())) & set(active)
        unmeasured = [
            m for m in active if m in COST_METRICS and any(m not in row[g] for g in present)
        ]
        if unmeasured:
            dropped |= set(unmeasured)
            notes.append(
                f"{', '.join(unmeasured)} on {workload}: not measured for every gateway "
                "there; left out of that endpoint's score"
            )
        if dropped == set(active):
            raise ScoreError(f"workload {workload!r}: every scored metric is left out")
        here = tuple(m for m in active if m not in dropped)
        resolution = _for_workload(resolution_ms, workload, RESOLUTION_MS)
        engine = _for_workload(engines, workload, None)
        dropped_pairs.extend((workload, m) for m in active if m in dropped)
        for g in present:
            for m in here:
                if m not in row[g]:
                    raise ScoreError(f"workload {workload!r}, target {g!r}: no value for {m!r}")
                v = row[g][m].mean
                if not math.isfinite(v) or v < 0:
                    raise ScoreError(
                        f"workload {workload!r}, target {g!r}, {m}: expected a finite value "
                        f">= 0, got {v!r}"
                    )
                if row[g][m].n < 2:
                    single_rep = True
        metric_scores: dict[str, list[MetricScore]] = {g: [] for g in present}
        for m in here:
            direction = METRICS.get(m) or COST_METRICS[m]
            scored = {g: _scored_value(m, row[g][m].mean, resolution) for g in present}
            raised = sum(1 for g in present if scored[g] != row[g][m].mean)
            if raised:
                key = (resolution, engine)
                floored[key] = floored.get(key, 0) + raised
            pick = min if direction == "lower" else max
            best = pick(scored.values())
            leaders = [g for g in present if scored[g] == best]
            for g in present:
                s = metric_score(scored[g], best, direction)
                tied = False
                if profile == "robust" and s < 1.0:
                    mine = _floored_sample(m, row[g][m], resolution)
                    for leader in leaders:
                        theirs = _floored_sample(m, row[leader][m], resolution)
                        if welch_difference(mine, theirs).significant is False:
                            tied = True
                    if tied:
                        s = 1.0
                metric_scores[g].append(MetricScore(m, scored[g], best, s, tied))
        total_weight = math.fsum(weight_of[m] for m in here)
        endpoint: dict[str, float] = {}
        for g in present:
            weighted = math.fsum(weight_of[ms.metric] * ms.score for ms in metric_scores[g])
            endpoint[g] = 100.0 * weighted / total_weight
        # Errors count even when error % carries no weight: the cap is about correctness.
        with_errors = {g for g in present if "error_pct" in row[g] and row[g]["error_pct"].mean > 0}
        caps: dict[str, float] = {}
        clean = [g for g in present if g not in with_errors]
        if profile == "robust" and clean and with_errors:
            # Below the lowest error-free gateway, by the share of requests that failed:
            # strictly below it (unless it scored 0), and 0 when every request failed.
            lowest_clean = min(endpoint[g] for g in clean)
            for g in with_errors:
                ok_share = 1.0 - min(row[g]["error_pct"].mean, 100.0) / 100.0
                capped = min(endpoint[g], lowest_clean) * ok_share
                if capped < endpoint[g]:
                    caps[g] = endpoint[g]
                    endpoint[g] = capped
        for g in gateways:
            if g in row:
                per_gateway[g].append(
                    EndpointScore(
                        workload,
                        g,
                        endpoint[g],
                        tuple(metric_scores[g]),
                        has_errors=g in with_errors,
                        capped_from=caps.get(g),
                    )
                )
            else:
                per_gateway[g].append(EndpointScore(workload, g, 0.0, missing=True))

    # A gateway is scored against the others on the workloads some gateway was measured on;
    # with none, there is nothing to score it on (a 0 would read as measured and lost).
    scored_gateways = gateways if scored_workloads else []
    totals: dict[str, float] = {}
    for g in scored_gateways:
        eps = per_gateway[g]  # one per scored workload
        totals[g] = math.fsum(e.score for e in eps) / len(eps)
    order = sorted(scored_gateways, key=lambda g: (-round(totals[g], 9), g))
    results: list[GatewayScore] = []
    for g in order:
        rank = 1 + sum(
            1 for other in scored_gateways if round(totals[other], 9) > round(totals[g], 9)
        )
        missing = tuple(e.workload for e in per_gateway[g] if e.missing)
        results.append(GatewayScore(g, totals[g], rank, tuple(per_gateway[g]), missing))

    if not gateways:
        notes.append("no gateway to score")
    elif not workloads:
        notes.append("no workload to score: no gateway is scored or ranked")
    elif len(scored_gateways) == 1:
        notes.append(
            f"only one gateway ({gateways[0]}): it is the best on every metric and scores 100 "
            "by definition; compare it with the baseline (overhead) instead"
        )
    if unscored_workloads:
        consequence = (
            "left out of the scores" if scored_gateways else "no gateway is scored or ranked"
        )
        notes.append(f"no gateway was measured on {', '.join(unscored_workloads)}: {consequence}")
    for result in results:
        if result.missing and len(result.missing) < len(scored_workloads):
            notes.append(
                f"{result.target} has no measurement for {', '.join(result.missing)}: "
                "scored 0 there"
            )
        elif result.missing:
            notes.append(f"{result.target} was not measured at all: scored 0")
    for (resolution, engine), n in floored.items():
        whose = f"{_engine_label(engine)}'s" if engine else "the load engine's"
        notes.append(
            f"{counted(n, 'latency value')} under {resolution:g} ms ({whose} resolution) "
            f"{'was' if n == 1 else 'were'} scored as {resolution:g} ms"
        )
    if profile == "robust" and single_rep:
        notes.append(
            "some values come from a single repetition: without a confidence interval only "
            "identical values tie"
        )
    return ScoreResult(
        profile=profile,
        metrics=active,
        weights=tuple((m, weight_of[m]) for m in scored_metrics),
        workloads=tuple(scored_workloads),
        gateways=tuple(results),
        unscored=tuple(unscored_workloads),
        notes=tuple(notes),
        left_out=tuple(dropped_pairs),
    )


ENGINE_LABELS = {"gatling": "Gatling", "wrk": "wrk", "loadgen": "gatebench-loadgen"}
"""How the score's notes name a load engine."""


def _engine_label(engine: str) -> str:
    return ENGINE_LABELS.get(engine, engine)


def _for_workload(given: _T | Mapping[str, _T], workload: str, default: _T) -> _T:
    """``given`` when it is one value for every workload, else its value for ``workload``."""
    if isinstance(given, Mapping):
        return given.get(workload, default)
    return given


def _floored_sample(metric: str, sample: Sample, resolution_ms: float) -> Sample:
    mean = _scored_value(metric, sample.mean, resolution_ms)
    return sample if mean == sample.mean else Sample(mean, sample.stddev, sample.n)


def values_from_table(
    table: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> dict[str, dict[str, dict[str, Sample]]]:
    """Plain numbers (one value per metric, e.g. a paper's table) as single-value samples."""
    return {
        w: {t: {m: Sample(float(v)) for m, v in metrics.items()} for t, metrics in row.items()}
        for w, row in table.items()
    }


__all__ = [
    "BASELINE",
    "PROFILES",
    "RESOLUTION_MS",
    "EndpointScore",
    "GatewayScore",
    "MetricScore",
    "Profile",
    "ScoreError",
    "ScoreResult",
    "Values",
    "effective_weights",
    "metric_score",
    "score",
    "values_from_table",
]
