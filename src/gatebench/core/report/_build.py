"""A report's content, decided once, rendered as HTML, Markdown, JSON or CSV.

:func:`build_report` is pure: a run record and its measurements in, a :class:`Report` out
(summary, scores, verdict and the cautions a reader must see). The renderers only lay it out.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gatebench.core._version import __version__
from gatebench.core.aggregate import (
    UNMEASURED,
    UNSCORED_REASONS,
    CellSummary,
    Comparison,
    RankStability,
    RunSummary,
    summarize,
)
from gatebench.core.cost import CostError, CostEstimate, estimate_cost
from gatebench.core.measure import FLAGS
from gatebench.core.model import BASELINE, Measurement, RunRecord
from gatebench.core.pinning import recorded_cores
from gatebench.core.report._format import (
    SCORE_DECIMALS,
    fmt_number,
    fmt_points,
    fmt_score,
    fmt_signed,
    fmt_value,
    resolution_of,
    score_decimals,
)
from gatebench.core.score import PROFILES, RESOLUTION_MS, Profile, ScoreError
from gatebench.core.stats import joined_names
from gatebench.core.trust import (
    AGREEMENT_PCT,
    ENGINE_COLD_FLAG,
    ENGINE_RESOLUTION_MS,
    Agreement,
    Ceiling,
    agreement_summary,
    ceiling_of,
    compare_engines,
    cross_check_of,
    demonstrated_ceiling,
    failures_of,
    left_out_of,
    near_ceiling,
)

INTERVALS_NOTE = (
    "Intervals are 95 % confidence intervals of the mean over the repetitions (Student's t)."
)
RESOLUTION_NOTE = (
    "Latencies are whole milliseconds: Gatling records each request's time at 1 ms "
    "resolution, so a 0 ms reading means under 1 ms and no latency here is more precise "
    f"than 1 ms. {INTERVALS_NOTE}"
)
"""The note of a run measured by Gatling alone (:func:`resolution_note`)."""

ENGINE_NAMES = {"gatling": "Gatling", "wrk": "wrk", "loadgen": "gatebench-loadgen"}
"""How the notes name a load engine (``Measurement.engine``)."""


def engine_name(engine: str) -> str:
    return ENGINE_NAMES.get(engine, engine)


def engine_resolution_words(engine: str) -> str:
    """How ``engine`` records a request's time, after its name: ``records each request's time
    at 1 ms resolution (a 0 ms reading means under 1 ms, shown as <1)``."""
    ms = ENGINE_RESOLUTION_MS.get(engine)
    if ms is None:
        return (
            "has a resolution gatebench does not know: its latencies are taken as whole "
            "milliseconds (a reading under 1 ms is shown as <1)"
        )
    if ms >= 1:
        return (
            f"records each request's time at {ms:g} ms resolution (a 0 ms reading means "
            f"under {ms:g} ms, shown as <{ms:g})"
        )
    return (
        f"records latencies {_to(ms)} (a reading is shown with the decimals it needs: two "
        f"significant digits, never finer than {ms:g} ms)"
    )


def _to(ms: float) -> str:
    return "to the microsecond" if ms == 0.001 else f"at {ms:g} ms resolution"


def resolution_note(measurements: Iterable[Measurement]) -> str:
    """What the run's latencies are precise to, from the engines that measured them: every
    format prints this note (HTML, Markdown, the dashboard's view), and ``_format`` prints
    each reading at its engine's resolution (``fmt_value``'s ``resolution_ms``). A run measured
    by Gatling alone (or by nothing) gets :data:`RESOLUTION_NOTE`; a run of several engines
    says which measured which workloads (and on which targets, where a workload's targets
    were measured by different engines)."""
    scope: dict[str, dict[str, set[str]]] = {}  # engine → workload → targets
    targets: dict[str, set[str]] = {}  # workload → every target measured there
    for m in measurements:
        scope.setdefault(m.engine, {}).setdefault(m.workload, set()).add(m.target)
        targets.setdefault(m.workload, set()).add(m.target)
    if set(scope) <= {"gatling"}:
        return RESOLUTION_NOTE
    if len(scope) == 1:
        engine = next(iter(scope))
        ms = ENGINE_RESOLUTION_MS.get(engine, 1.0)
        if ms < 1:
            return (
                f"Latencies are recorded {_to(ms)} by {engine_name(engine)}, so a reading "
                f"(min, max, a percentile) is shown with the decimals it needs (two significant "
                f"digits, never finer than {ms:g} ms; under {ms:g} ms as <{ms:g}). "
                f"{INTERVALS_NOTE}"
            )
        return (
            f"Latencies: {engine_name(engine)} {engine_resolution_words(engine)}. {INTERVALS_NOTE}"
        )
    parts = []
    for engine in sorted(scope, key=lambda e: (-ENGINE_RESOLUTION_MS.get(e, 1.0), e)):
        measured = [
            w if ts == targets[w] else f"{w} (for {', '.join(sorted(ts))})"
            for w, ts in sorted(scope[engine].items())
        ]
        what = "workload" if len(measured) == 1 else "workloads"
        parts.append(
            f"{engine_name(engine)} measured {what} {joined_names(measured)} and "
            f"{engine_resolution_words(engine)}"
        )
    return (
        "Latencies come from more than one load engine, each printed at its own resolution: "
        + "; ".join(parts)
        + f". {INTERVALS_NOTE}"
    )


@dataclass(frozen=True)
class Headroom:
    """A target's mean throughput on a workload against the engine's ceiling there."""

    workload: str
    target: str
    throughput: float
    ceiling: float
    near_ceiling: int
    """Repetitions whose throughput reached the tester-bound share of the ceiling."""
    repetitions: int

    @property
    def share_pct(self) -> float:
        return 100.0 * self.throughput / self.ceiling if self.ceiling > 0 else 0.0


@dataclass(frozen=True)
class Trust:
    """What the run says about its own measurements (docs/trust.md): the load engine's
    ceiling and each target's distance to it, and a second engine's agreement."""

    ceiling: Ceiling | None = None
    headroom: tuple[Headroom, ...] = ()
    tester_bound: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """workload → gateways whose throughput there is not scored (tester-bound)."""
    second_engine: str | None = None
    agreements: tuple[Agreement, ...] = ()
    second_engine_note: str = ""

    @property
    def summary(self) -> str:
        return agreement_summary(self.agreements) if self.second_engine else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ceiling": self.ceiling.to_dict() if self.ceiling else None,
            "headroom": [
                {
                    "workload": h.workload,
                    "target": h.target,
                    "throughput": h.throughput,
                    "ceiling": h.ceiling,
                    "share_pct": h.share_pct,
                    "near_ceiling": h.near_ceiling,
                    "repetitions": h.repetitions,
                }
                for h in self.headroom
            ],
            "tester_bound": {w: list(ts) for w, ts in self.tester_bound.items()},
            "second_engine": self.second_engine,
            "second_engine_note": self.second_engine_note,
            "agreement_pct": AGREEMENT_PCT,
            "agreements": [a.to_dict() for a in self.agreements],
            "summary": self.summary,
        }


def build_trust(run: RunRecord, summary: RunSummary, measurements: Sequence[Measurement]) -> Trust:
    ceiling = ceiling_of(run.environment)
    headroom = []
    if ceiling is not None:
        tops = demonstrated_ceiling(measurements, ceiling.limits())
        for (w, t), cell in sorted(summary.cells.items()):
            top = tops.get(w)
            if top is None:
                continue
            near = sum(
                1
                for m in measurements
                if (m.workload, m.target) == (w, t)
                and m.requests > 0
                and near_ceiling(m.throughput, top, ceiling.share)
            )
            headroom.append(Headroom(w, t, cell.metrics["throughput"].mean, top, near, cell.n))
    check = cross_check_of(run.environment)
    second: str | None = None
    agreements: tuple[Agreement, ...] = ()
    note = ""
    if check is not None:
        second = check[0]
        agreements = tuple(compare_engines(measurements, check[1]))
        data = run.environment.get("cross_check")
        note = str(data.get("note", "")) if isinstance(data, Mapping) else ""
    return Trust(
        ceiling=ceiling,
        headroom=tuple(headroom),
        tester_bound=dict(summary.tester_bound),
        second_engine=second,
        agreements=agreements,
        second_engine_note=note,
    )


@dataclass(frozen=True)
class Report:
    run: RunRecord
    summary: RunSummary
    profile: Profile
    weights: tuple[tuple[str, float], ...]
    verdict: tuple[str, ...]
    """Sentences: the headline first, then what limits it."""
    cautions: tuple[str, ...]
    """What a reader must know before trusting the numbers (flags, failures, notes)."""
    measurements: tuple[Measurement, ...] = ()
    """Every measurement of the run, sorted by target, workload, repetition."""
    generated_at: float = field(default_factory=time.time)
    trust: Trust = field(default_factory=Trust)
    """The engine's ceiling, tester-bound throughput, a second engine's agreement."""
    cost: CostEstimate | None = None
    """A cloud run (one a Workflows execution owns): what its plan costs at list prices."""

    @property
    def title(self) -> str:
        return self.run.title or self.run.spec_uri.rsplit("/", 1)[-1] or self.run.run_id

    @property
    def resolution_note(self) -> str:
        """What its latencies are precise to (:func:`resolution_note`), in every format."""
        return resolution_note(self.measurements)

    @property
    def scoring(self) -> str:
        """The profile and, when it weighs the metrics, every metric's weight:
        ``robust (weights throughput×1, min×0, ..., p99×5)``; every format says it."""
        if not self.weights:
            return self.profile
        return f"{self.profile} (weights {', '.join(f'{m}×{w:g}' for m, w in self.weights)})"

    def to_dict(self) -> dict[str, Any]:
        s = self.summary

        def compared(c: Comparison) -> dict[str, Any]:
            return {
                "leader": c.leader,
                "runner_up": c.runner_up,
                "repetitions": c.repetitions,
                "difference": c.difference.estimate,
                "ci95_low": c.difference.low,
                "ci95_high": c.difference.high,
                # against every other gateway at once: Holm-corrected (None: no interval)
                "significant": c.significant,
                "p_holm": c.adjusted_p,
                "comparisons": c.family,
            }

        comparison = None if s.comparison is None else compared(s.comparison)
        data: dict[str, Any] = json_safe(
            {
                "gatebench": __version__,
                "generated_at": self.generated_at,
                "run": self.run.to_dict(),
                "profile": self.profile,
                "weights": dict(self.weights),
                "verdict": " ".join(self.verdict),
                "cautions": list(self.cautions),
                # the coarsest latency resolution the score used (the engine's: wrk and
                # gatebench-loadgen record microseconds, Gatling whole milliseconds)
                "resolution_ms": max(
                    (ms for ms, _ in s.resolutions.values()), default=RESOLUTION_MS
                ),
                "resolutions": {
                    w: {"ms": ms, "engine": engine} for w, (ms, engine) in s.resolutions.items()
                },
                "gateways": list(s.gateways),
                "baseline": s.baseline,
                "workloads": list(s.workloads),
                "repetitions": list(s.repetitions),
                "complete_repetitions": list(s.complete_repetitions),
                "cells": [s.cells[k].to_dict() for k in sorted(s.cells)],
                "scores": s.scores.to_dict(),
                "rank_stability": [
                    {
                        "target": r.target,
                        "first": r.first,
                        "repetitions": len(r.ranks),
                        "mean_rank": r.mean_rank,
                        "ranks": list(r.ranks),
                        "scores": list(r.scores),
                    }
                    for r in s.rank_stability
                ],
                "comparison": comparison,
                "comparisons": [compared(c) for c in s.comparisons],
                "overhead": [
                    {
                        "workload": o.workload,
                        "target": o.target,
                        "metric": o.metric,
                        "difference": o.difference.estimate,
                        "ci95_low": o.difference.low,
                        "ci95_high": o.difference.high,
                        "baseline_mean": o.baseline_mean,
                        "relative_pct": o.relative_pct,
                    }
                    for o in s.overhead
                ],
                "empty_measurements": list(s.empty_measurements),
                "unranked": dict(s.unranked),
                "wrong_answers": dict(s.wrong),
                "too_short": {w: list(ts) for w, ts in s.too_short.items()},
                "rates_set": dict(s.rates_set),
                "failed_measurements": list(s.failed_measurements),
                "notes": list(s.notes),
                "trust": self.trust.to_dict(),
            }
        )
        if self.cost is not None:
            data["cost"] = json_safe(self.cost.to_dict())
        return data


def json_safe(value: Any) -> Any:
    """NaN and infinities become None: JSON has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def plan_scoring(run: RunRecord) -> tuple[Profile, tuple[tuple[str, float], ...]]:
    """The scoring the run's plan asked for (``paper`` when it says nothing)."""
    scoring = run.plan.get("scoring") if isinstance(run.plan, Mapping) else None
    scoring = scoring if isinstance(scoring, Mapping) else {}
    profile = scoring.get("profile", "paper")
    if profile not in PROFILES:
        raise ScoreError(f"run {run.run_id!r}: unknown scoring profile {profile!r} in its plan")
    weights = tuple((str(m), float(w)) for m, w in scoring.get("weights") or ())
    return profile, weights


def resolve_scoring(
    run: RunRecord,
    profile: Profile | None = None,
    weights: Sequence[tuple[str, float]] | None = None,
) -> tuple[Profile, tuple[tuple[str, float], ...]]:
    """Explicit choices first, then the plan's. The plan's weights follow only its own
    profile (asking for ``paper`` drops them: the paper weighs every metric equally)."""
    plan_profile, plan_weights = plan_scoring(run)
    chosen = profile or plan_profile
    if weights is not None:
        return chosen, tuple(weights)
    return chosen, plan_weights if chosen == plan_profile == "robust" else ()


NOT_MEASURED = "before it was measured"
"""When a gateway with an error on record and no measurement failed (``_failed``)."""


def _failed(run: RunRecord, measurements: Sequence[Measurement]) -> dict[str, str]:
    """The gateways that failed during the run (``failures_of``), and those with an error on
    record and no measurement (``target_errors``: a configuration it could not render, a
    gateway that did not start): such a gateway is named with its failure, never ranked with a
    score of 0 as if it had been measured and lost."""
    failed = failures_of(run.environment)
    measured = {m.target for m in measurements}
    for target in run.target_errors:
        if target not in measured:
            failed.setdefault(target, NOT_MEASURED)
    return failed


def build_report(
    run: RunRecord,
    measurements: Iterable[Measurement],
    *,
    profile: Profile | None = None,
    weights: Sequence[tuple[str, float]] | None = None,
    now: float | None = None,
) -> Report:
    chosen, chosen_weights = resolve_scoring(run, profile, weights)
    measurements = sorted(measurements, key=lambda m: (m.target, m.workload, m.repetition))
    gateways = [g for g in run.gateways if g != BASELINE] or None
    workloads = [str(w["name"]) for w in run.workloads if isinstance(w, Mapping) and "name" in w]
    ceiling = ceiling_of(run.environment)
    summary = summarize(
        measurements,
        run_id=run.run_id,
        gateways=gateways,
        workloads=workloads or None,
        profile=chosen,
        weights=chosen_weights or None,
        ceiling=ceiling.limits() if ceiling else None,
        rates_set=ceiling.rates_set() if ceiling else None,
        failed=_failed(run, measurements),
        left_out=left_out_of(run.environment),
    )
    trust = build_trust(run, summary, measurements)
    return Report(
        cost=cloud_cost(run),
        run=run,
        summary=summary,
        profile=chosen,
        weights=tuple((m, w) for m, w in summary.scores.weights if chosen == "robust"),
        verdict=(*verdict(summary), *cpu_policy_sentence(run.environment)),
        cautions=tuple(cautions(run, summary, trust)),
        measurements=tuple(measurements),
        generated_at=now if now is not None else time.time(),
        trust=trust,
    )


def cloud_cost(run: RunRecord) -> CostEstimate | None:
    """The estimate of a cloud run's plan (None for a local run, or a machine type the price
    table does not know)."""
    if run.execution_id is None or not isinstance(run.plan, Mapping):
        return None
    try:
        return estimate_cost(run.plan, quick=bool(run.environment.get("quick")))
    except (CostError, KeyError, TypeError, ValueError):
        return None


def traffic_source(run: RunRecord) -> str | None:
    """Which recorded traffic the workloads replay, when ``gatebench import`` wrote the plan
    (its ``traffic:``): files, format, time span, requests, the share matched to the
    description's operations."""
    found = run.plan.get("traffic") if isinstance(run.plan, dict) else None
    if not isinstance(found, dict) or not found.get("files"):
        return None
    files = ", ".join(str(f) for f in found["files"])
    requests = int(found.get("requests") or 0)
    matched = int(found.get("matched") or 0)
    share = f" ({100.0 * matched / requests:.1f} %)" if requests else ""
    what = "HTTP samplers" if found.get("format") == "jmx" else "requests"
    span = ""
    if found.get("start") and found.get("end"):
        span = f", {found['start']} to {found['end']}"
    return (
        f"replayed from {files} ({found.get('format', '?')}{span}): {requests:,} {what}, "
        f"{matched:,}{share} matched to the description's operations"
    )


def cpu_policy_sentence(environment: Mapping[str, Any]) -> list[str]:
    """The CPU policy the run ran under (``gatebench.core.fairness``), for the verdict: a result
    is a gateway's only on a share stated and equal for every gateway."""
    policy = environment.get("cpu_policy")
    if not isinstance(policy, Mapping) or not policy.get("describe"):
        return []
    return [f'CPU policy: {policy["describe"]} (docs/gateways.md, "A fair fight").']


def environment_value(key: str, value: Any) -> str:
    """One environment entry as the report shows it: the CPU policy by its sentence, each
    gateway's own setting for its cores on one line, anything else as recorded."""
    if key == "cpu_policy" and isinstance(value, Mapping) and value.get("describe"):
        return str(value["describe"])
    if key == "gateway_cpu" and isinstance(value, Mapping):
        return "; ".join(f"{g}: {v}" for g, v in sorted(value.items()))
    return in_words(value)


def in_words(value: Any, *, within: str = "") -> str:
    """A recorded value as words (never Python's repr): a mapping as ``key: value`` pairs
    split by semicolons, a list by commas, a mapping within another value or a list within a
    list in brackets, nothing as ``–``."""
    if isinstance(value, Mapping):
        text = "; ".join(f"{k}: {in_words(v, within='mapping')}" for k, v in value.items())
        bracket = bool(within)
    elif isinstance(value, list | tuple):
        text = ", ".join(in_words(v, within="list") for v in value)
        bracket = within == "list"
    else:
        return "–" if value is None or value == "" else " ".join(str(value).split())
    if not text:
        return "–"
    return f"({text})" if bracket else text


def verdict(summary: RunSummary) -> list[str]:
    """Who wins, by how much, and whether the repetitions can tell the difference; the
    gateways that failed during the run are named last."""
    lines = _ranking_verdict(summary)
    failed = [
        f"{g} {why}"
        for g, why in summary.unranked.items()
        if g not in summary.wrong and g not in summary.left_out and why != UNMEASURED
    ]
    unmeasured = [g for g, why in summary.unranked.items() if why == UNMEASURED]
    if unmeasured and summary.cells:
        one = len(unmeasured) == 1
        lines.append(
            f"{joined_names(unmeasured)} {'was' if one else 'were'} not measured: not ranked."
        )
    for why in dict.fromkeys(summary.left_out.values()):
        left = [g for g, said in summary.left_out.items() if said == why]
        one = len(left) == 1
        lines.append(
            f"{joined_names(left)} {'was' if one else 'were'} left out before the run, as "
            f"{'it' if one else 'they'} {why}: not ranked."
        )
    if failed:
        during = any(NOT_MEASURED not in why for why in failed)
        overlap = " (the phases that overlap a failure are left out of every figure)"
        lines.append(f"{joined_names(failed)}: not ranked{overlap if during else ''}.")
    lines.extend(wrong_answer_verdict(summary))
    lines.extend(refusal_verdict(summary))
    lines.extend(engine_cold_verdict(summary))
    return lines


def targets_on(by_workload: Mapping[str, Sequence[str]]) -> str:
    """Workload → targets, said once per set of targets: ``envoy and nginx on get and order;
    haproxy on list``."""
    grouped: dict[tuple[str, ...], list[str]] = {}
    for w, ts in by_workload.items():
        grouped.setdefault(tuple(ts), []).append(w)
    return "; ".join(f"{joined_names(ts)} on {joined_names(ws)}" for ts, ws in grouped.items())


UNEQUAL_REFUSALS_PCT = 5.0
"""Rate-limit refusal shares of one workload further apart than this (percentage points) are
said in the verdict."""


def refusal_verdict(summary: RunSummary) -> list[str]:
    """Where most answers of a gateway were the plan's rate limit refusing the request: its
    latency and throughput there measure how fast it refuses, which the ranking counts."""
    by_workload: dict[str, list[str]] = {}
    for (workload, target), cell in sorted(summary.cells.items()):
        if target == summary.baseline or not cell.rate_limited or not cell.requests:
            continue
        if 2 * cell.rate_limited > cell.requests:
            by_workload.setdefault(workload, []).append(target)
    lines = []
    if by_workload:
        lines.append(
            f"Most answers of {targets_on(by_workload)} were the plan's rate limit refusing the "
            "request (429): their latency and throughput there measure how fast a gateway "
            "refuses, not how it serves the API; send less than the limit to compare serving "
            "(the cautions give each share)."
        )
    shares: dict[str, dict[str, float]] = {}
    for (workload, target), cell in sorted(summary.cells.items()):
        if target != summary.baseline and cell.requests and cell.rate_limited is not None:
            shares.setdefault(workload, {})[target] = 100.0 * cell.rate_limited / cell.requests
    for workload, by_target in shares.items():
        if (
            len(by_target) > 1
            and max(by_target.values()) - min(by_target.values()) > UNEQUAL_REFUSALS_PCT
        ):
            said = ", ".join(
                f"{t} {v:.0f} %" for t, v in sorted(by_target.items(), key=lambda kv: -kv[1])
            )
            lines.append(
                f"The rate limit refused unequal shares on {workload} ({said}): each gateway's "
                "limit let a different number of requests through (docs/gateways.md says how "
                "each counts), so the ranking there compares different work, and a refusal is "
                "faster than an answer."
            )
    return lines


def engine_cold_verdict(summary: RunSummary) -> list[str]:
    """The targets measured on a load engine still warming (``engine-cold``,
    gatebench.core.trust.flag_engine_cold): the order the targets ran in, not the gateways,
    lowered those figures."""
    cold = sorted(
        (c.target, c.workload) for c in summary.cells.values() if c.flags.get(ENGINE_COLD_FLAG)
    )
    if not cold:
        return []
    where = joined_names([f"{target} on {workload}" for target, workload in cold])
    lines = [
        f"The load engine was still warming when it measured {where} (engine-cold): those "
        "figures read worse than the targets are, because of the order the targets ran in, "
        "not of the gateways. More repetitions spread that cost over the targets, longer "
        "phases shrink it (docs/trust.md)."
    ]
    base = [w for t, w in cold if t == summary.baseline]
    if base and summary.overhead:
        lines.append(
            f"The overhead against the baseline on {joined_names(base)} is understated for the "
            "same reason: the baseline read slower than the backend is, so a gateway can seem "
            "to add less than it does, or to be faster than no gateway."
        )
    return lines


def wrong_answer_verdict(summary: RunSummary) -> list[str]:
    """What the verdict says of the targets that gave wrong answers (gatebench.core.answers):
    each is named with its count and kinds, and is not ranked whatever its speed."""
    lines = []
    wrong = [g for g in summary.wrong if g != summary.baseline]
    if wrong:
        named = [f"{g} ({_wrong_words(summary, g)})" for g in wrong]
        lines.append(
            f"{joined_names(named)} gave wrong answers under load: not ranked, however fast "
            f"{'it was' if len(wrong) == 1 else 'they were'} (a fast wrong answer is not a "
            'result; docs/trust.md, "Right answers under load").'
        )
    if summary.baseline is not None and summary.baseline in summary.wrong:
        lines.append(
            f"The baseline gave {_wrong_words(summary, summary.baseline)} with no gateway in "
            "the way: the backend or the load engine is at fault, so no figure of this run "
            "can be trusted."
        )
    return lines


def _wrong_words(summary: RunSummary, target: str) -> str:
    """``3 wrong answers: crossed 2, truncated 1`` over every workload of ``target``."""
    kinds: dict[str, int] = {}
    for cell in summary.cells.values():
        if cell.target == target:
            for kind, n in cell.wrong_kinds:
                kinds[kind] = kinds.get(kind, 0) + n
    n = summary.wrong[target]
    detail = ", ".join(f"{kind} {count:,}" for kind, count in sorted(kinds.items()))
    return f"{n:,} wrong answer{'s' if n != 1 else ''}" + (f": {detail}" if detail else "")


def _ranking_verdict(summary: RunSummary) -> list[str]:
    result = summary.scores
    ranked = [g for g in result.gateways if len(g.missing) < max(1, len(result.workloads))]
    if not result.workloads or not ranked:
        measured = {t for (_, t), cell in summary.cells.items() if t != summary.baseline}
        if summary.unranked and measured:  # measured, then not ranked: the reasons follow
            return ["No gateway was ranked: there is nothing to compare."]
        return ["No gateway was measured: there is nothing to compare yet."]
    if len(result.gateways) == 1:
        only = result.gateways[0].target
        done = "ranked" if summary.unranked else "measured"
        lines = [f"Only {only} was {done}, so its score (100) compares it with nothing."]
        lines.append(_single_gateway_overhead(summary, only))
        return lines
    leaders = result.leaders
    top = result.gateways[0]
    # as many decimals as it takes to show different scores differently (95.4 and 94.6, not
    # 95 and 95), and never 100 for a score below it
    decimals = score_decimals(g.score for g in result.gateways)

    def shown(value: float) -> str:
        return "100" if value == 100 else fmt_score(value, decimals=decimals)

    if len(leaders) > 1:
        lines = [
            f"{joined_names(leaders)} tie for first place with {shown(top.score)} of 100 "
            f"({result.profile} profile)."
        ]
    else:
        others = [f"{g.target} ({shown(g.score)})" for g in result.gateways[1:]]
        headline = (
            f"{top.target} scores highest ({shown(top.score)} of 100, {result.profile} "
            f"profile), ahead of {joined_names(others)}."
        )
        tied = tied_on_the_repetitions(summary)
        lines = _disagreement(summary, tied, headline) if tied else [headline, _lead(summary)]
    # each workload once, with the first reason its throughput does not count
    why = summary.unscored_throughput()
    bound, rates_set, too_short = ([w for w, r in why.items() if r == k] for k in UNSCORED_REASONS)
    busy = [w for w in bound if w in summary.engine_busy]
    near = [w for w in bound if w not in summary.engine_busy]
    if near:
        lines.append(
            f"Throughput does not count on {joined_names(near)}: the load generator, not the "
            "gateways, set it there (tester-bound)."
        )
    if busy:
        lines.append(
            f"Throughput does not count on {joined_names(busy)}: the load engine's cores were out of "
            "time there while the gateways' were not, so the engine, not the gateways, set it "
            "(engine-busy)."
        )
    if rates_set:
        lines.append(
            f"Throughput does not count on {joined_names(rates_set)}: the plan sets the rate there "
            "(an open model), and every target that keeps up carries it."
        )
    if too_short:
        whose = "its" if len(too_short) == 1 else "their"
        lines.append(
            f"Throughput does not count on {joined_names(too_short)}: {whose} phases were too short "
            "to measure a rate (too short: docs/trust.md)."
        )
    everyone = [
        e.workload
        for e in top.endpoints
        if e.has_errors
        and all(any(x.workload == e.workload and x.has_errors for x in g.endpoints) for g in ranked)
    ]
    base = summary.baseline
    if everyone:
        cells = [summary.cell(w, base) for w in everyone] if base else []
        if base and cells and all(c is not None and c.ko for c in cells):
            targets = [*(g.target for g in ranked), base]
            lines.extend(_errors_everyone_had(summary, everyone, targets))
        else:
            lines.append(
                f"Every gateway returned errors on {joined_names(everyone)}: the workload or the "
                "backend refuses those requests, so compare the error column rather than the "
                "latencies."
            )
    refused = {  # workloads where the backend, reached directly, refused requests too
        w
        for w in summary.workloads
        if base and (c := summary.cell(w, base)) is not None and c.ko > timed_out_count(c)
    }
    said: set[str] = set()
    for first in (result.gateway(g) for g in leaders or (top.target,)):  # each one ranked first
        alone = [e.workload for e in first.endpoints if e.has_errors and e.workload not in everyone]
        also = [w for w in alone if w in refused]
        said.update(also)
        own = [w for w in alone if w not in refused]
        if also:
            lines.append(
                f"{first.target} returned errors on {joined_names(also)}, as the baseline did, "
                "which reaches the backend directly: the backend refused some of those requests "
                "whatever was in front of it, so they are not the gateway's doing (the error "
                "column says which errors)."
            )
        if own:
            lines.extend(_leader_errors(summary, result.profile, first.target, own, ranked))
        if first.missing:
            lines.append(f"{first.target} has no measurement for {joined_names(first.missing)}.")
    # Gateways ranked lower, charged in the score with errors the baseline had too (the demo's
    # overtaken bids on a busy machine): say so, with the baseline's rate.
    scored = [
        w
        for w in summary.workloads
        if w in refused
        and w not in everyone
        and w not in said
        and any(e.workload == w and e.has_errors for g in ranked for e in g.endpoints)
    ]
    if scored and base:
        rates = [
            f"{fmt_number(c.metrics['error_pct'].mean, 1)} % on {w}"
            for w in scored
            if (c := summary.cell(w, base)) is not None
        ]
        lines.append(
            f"The baseline, which reaches the backend directly, had errors too ({', '.join(rates)}"
            "): the backend refused those requests whatever was in front of it, so part of each "
            "gateway's error rate there is not the gateway's doing, though the score counts it "
            "(the error column says which errors)."
        )
    return lines


def _leader_errors(
    summary: RunSummary, profile: str, leader: str, workloads: Sequence[str], ranked: Sequence[Any]
) -> list[str]:
    """What the verdict says of the errors of a gateway ranked first, where the baseline had
    none: its error rate beside the fewest of any ranked gateway's. Failed requests are often
    the fastest, and the paper profile weighs the error rate as one metric of ten: a gateway
    failing every request fast scored 90 and ranked first, said only as 'check the error
    column'."""
    worse = []
    for w in workloads:
        mine = summary.cell(w, leader)
        rates = {
            g.target: c.metrics["error_pct"].mean
            for g in ranked
            if (c := summary.cell(w, g.target)) is not None and "error_pct" in c.metrics
        }
        if mine is None or "error_pct" not in mine.metrics or len(rates) < 2:
            continue
        fewest = min(rates, key=lambda t: (rates[t], t))
        if rates[leader] > rates[fewest]:
            worse.append(
                f"{fmt_number(rates[leader], 1)} % of its requests on {w} "
                f"({fewest} {fmt_number(rates[fewest], 1)} %)"
            )
    if not worse:
        return [
            f"{leader} returned errors on {joined_names(list(workloads))}: check the error column."
        ]
    robust = (
        " `--profile robust` ranks a gateway with errors below every gateway without."
        if profile == "paper"
        else ""
    )
    return [
        f"{leader} failed {joined_names(worse)}: failed requests are often the fastest, and "
        f"the {profile} profile counts their times in the latencies and the error rate as one "
        f"metric among them, so part of its lead is its failures.{robust}"
    ]


TIMED_OUT = re.compile(r"request ?timeout|\(the timeout;", re.IGNORECASE)
"""A KO reason that is a request outliving the plan's timeout, in each engine's words:
Gatling's ``Request timeout to HOST after 3 ms``, gatebench-loadgen's ``request timeout after 3
ms``, wrk's ``took 3 ms or more (the timeout; counted at the timeout)``."""


def timed_out_count(cell: CellSummary) -> int:
    """The cell's KO that timed out: the load engine gave up on them at the plan's timeout,
    nobody refused them."""
    return sum(n for reason, n in cell.errors if TIMED_OUT.search(reason))


def _errors_everyone_had(
    summary: RunSummary, workloads: Sequence[str], targets: Sequence[str]
) -> list[str]:
    """Whose errors the errors of every target, the baseline included, are, by their KO
    reasons: requests that outlived the plan's timeout are the plan's, the rest the backend's
    refusals."""
    by_cause: dict[str, list[str]] = {}
    for w in workloads:
        cells = [c for t in targets if (c := summary.cell(w, t)) is not None]
        timed_out = sum(timed_out_count(c) for c in cells)
        ko = sum(c.ko for c in cells)
        cause = "timeout" if timed_out >= ko else "mixed" if timed_out else "refused"
        by_cause.setdefault(cause, []).append(w)
    lines = []
    for cause, names in by_cause.items():
        opening = (
            f"Every gateway returned errors on {joined_names(names)}, and so did the baseline, "
            "which reaches the backend directly: "
        )
        if cause == "timeout":
            lines.append(
                opening + "every error there is a request that outlived the plan's timeout "
                "(the workload's `timeout`): the load engine gave up on it, neither the backend "
                "nor a gateway refused it. Their latencies stop at that timeout: raise it to "
                "measure those requests."
            )
        elif cause == "mixed":
            lines.append(
                opening + "some errors there are requests that outlived the plan's timeout "
                "(the workload's `timeout`), which the load engine gave up on, the others the "
                "backend's refusals (the error column says which errors)."
            )
        else:
            lines.append(
                opening + "the backend refuses those requests (the error column says which "
                "errors), so their latencies are those of refusals."
            )
    return lines


def _lead(summary: RunSummary) -> str:
    """Whether the leader's lead over each other ranked gateway is larger than the run-to-run
    noise (the two rankings agree here: tied_on_the_repetitions found no disagreement): the
    leader against every other gateway, paired by repetition and Holm-corrected together
    (:func:`gatebench.core.aggregate.lead_comparisons`), and which gateways are within the
    noise of it, tied with it on this evidence."""
    result = summary.scores
    top = result.gateways[0]
    stability = {r.target: r for r in summary.rank_stability}
    comparisons = summary.comparisons or (
        (summary.comparison,) if summary.comparison is not None else ()
    )
    firsts = stability[top.target].first if top.target in stability else 0
    n = comparisons[0].repetitions if comparisons else 0
    if n < 2:
        return (
            "With a single complete repetition there is no measure of run-to-run noise: "
            "repeat the run (3 or more repetitions) before trusting this order."
        )
    beyond = [c for c in comparisons if c.significant]
    within = [c for c in comparisons if c.significant is False]
    untold = [c for c in comparisons if c.significant is None]
    runner = comparisons[0].runner_up
    if len(comparisons) == 1 and beyond:
        return (
            f"Its lead over {runner} ({_interval(beyond[0])}) is larger than the run-to-run "
            f"noise; it ranked first in {firsts} of {n} repetitions."
        )
    if len(comparisons) == 1 and within:
        return (
            f"Its lead over {runner} is inside the run-to-run noise ({_interval(within[0])}; "
            f"first in {firsts} of {n} repetitions): treat the two as equal on this evidence."
        )
    clauses = []
    if beyond:
        named = [
            (f"{c.runner_up} ({_interval(c)})" if c.runner_up == runner else c.runner_up)
            if i == 0
            else f"over {c.runner_up}"
            for i, c in enumerate(beyond)
        ]
        clauses.append(f"Its lead over {joined_names(named)} is larger than the run-to-run noise")
    if within:
        named = [f"{c.runner_up} ({_interval(c)})" for c in within]
        tied = joined_names([top.target, *(c.runner_up for c in within)])
        if beyond:
            clauses.append(
                f"but {joined_names(named)} {'is' if len(within) == 1 else 'are'} within it: "
                f"{tied} are tied on this evidence"
            )
        else:
            clauses.append(
                f"Its lead over {joined_names(named)} is inside the run-to-run noise: treat "
                f"{tied} as equal on this evidence"
            )
    text = ", ".join(clauses)
    if len(comparisons) > 1 and (beyond or within):
        text += (
            f" ({len(comparisons)} comparisons, {top.target} against each other gateway, "
            "paired by repetition and Holm-corrected)"
        )
    if untold:
        names = joined_names(c.runner_up for c in untold)
        same = (
            f"its lead over {names} was the same in each of the {n} repetitions"
            if len(untold) == 1
            else f"its lead over each of {names} was the same in each of the {n} repetitions"
        )
        untold_text = (
            f"{same} ({joined_names(fmt_points(c.difference.estimate, 1) for c in untold)}), "
            "which measures no run-to-run noise (the readings are too coarse, or the "
            "repetitions too few, to show it): not enough repetitions to tell whether "
            f"{'that lead is' if len(untold) == 1 else 'those leads are'} larger than the noise"
        )
        text = f"{text}; {untold_text}" if text else untold_text[0].upper() + untold_text[1:]
    return f"{text}; it ranked first in {firsts} of {n} repetitions."


def _interval(c: Comparison) -> str:
    """The mean of the repetitions' own differences (not the difference of the scores above),
    with its 95 % interval."""
    d = c.difference
    half = d.half_width or 0.0
    decimals = 1 if half < 10 else 0
    if 0 < half < 0.1:  # a narrow interval to two significant digits: never "0.8 to 0.8"
        decimals = min(SCORE_DECIMALS, 1 - math.floor(math.log10(half)))
    return (
        f"{fmt_points(d.estimate, decimals)} a repetition on average, 95 % CI "
        f"{fmt_number(d.low or 0.0, decimals)} to {fmt_number(d.high or 0.0, decimals)}"
    )


def tied_on_the_repetitions(summary: RunSummary) -> list[str]:
    """The gateways tied on this evidence when the score of the averaged metrics and the
    ranking of the single repetitions disagree, in the order of the score; empty when they
    agree.

    A gateway disagrees with the leader (the highest score of the averaged metrics) when, over
    the complete repetitions, it ranked first more often, has a better mean rank, or a higher
    mean of its per-repetition scores. Every gateway the score places between the leader and
    the lowest-scored one that disagrees is tied with them too: the evidence cannot order it
    against either."""
    result = summary.scores
    stability = {r.target: r for r in summary.rank_stability}
    order = [g.target for g in result.gateways]
    top = stability.get(order[0]) if order else None
    if top is None or not top.ranks:
        return []

    def disagrees(r: RankStability) -> bool:
        assert top is not None and top.mean_rank is not None and r.mean_rank is not None
        return (
            r.first > top.first
            or r.mean_rank < top.mean_rank
            or math.fsum(r.scores) / len(r.scores) > math.fsum(top.scores) / len(top.scores)
        )

    last = max(
        (
            i
            for i, g in enumerate(order)
            if g in stability and stability[g].ranks and disagrees(stability[g])
        ),
        default=0,
    )
    return order[: last + 1] if last else []


def _disagreement(summary: RunSummary, tied: Sequence[str], headline: str) -> list[str]:
    """The verdict's opening when the two rankings disagree (tied_on_the_repetitions): who is
    tied, each ranking in turn, and the paired difference with its sign made plain."""
    stability = {r.target: r for r in summary.rank_stability}
    n = len(stability[tied[0]].ranks)
    by_rounds = sorted(
        tied, key=lambda g: (-stability[g].first, stability[g].mean_rank or 0.0, tied.index(g))
    )
    rounds = [
        f"{g} {'ranked first in ' if i == 0 else 'in '}{stability[g].first}"
        + (f" of {n} repetitions" if i == 0 else "")
        + f" (mean rank {fmt_number(stability[g].mean_rank or 0.0, 1)})"
        for i, g in enumerate(by_rounds)
    ]
    per_round = f"Scored one repetition at a time, {joined_names(rounds)}"
    c = summary.comparison
    if c is not None and c.difference.half_width is not None and c.difference.estimate < 0:
        d = c.difference
        half = d.half_width or 0.0
        decimals = 1 if half < 10 else 0
        per_round += (
            f"; {c.runner_up}'s score averaged {fmt_points(-d.estimate, decimals)} above "
            f"{c.leader}'s (95 % CI {fmt_number(-(d.high or 0.0), decimals)} to "
            f"{fmt_number(-(d.low or 0.0), decimals)})"
        )
    return [
        f"{joined_names(list(tied))} are tied on this evidence: the score of the averaged metrics and "
        "the ranking of the single repetitions disagree.",
        "On the metrics averaged over the "
        + (f"{len(summary.repetitions)} repetitions, " if len(summary.repetitions) > 1 else "")
        + headline,
        per_round + ".",
        "More repetitions, or a quieter machine, may separate them; until then, compare them "
        "on the tables.",
    ]


def _single_gateway_overhead(summary: RunSummary, gateway: str) -> str:
    if summary.baseline is None:
        return "There is no baseline to compare it with; add `baseline: true` to the plan."
    parts = []
    for w in summary.workloads:
        o = summary.overhead_for(w, gateway, "mean")
        if o is not None:
            d = o.difference
            resolution = overhead_resolution(summary, w, gateway)
            text = fmt_signed("mean", d.estimate, d.half_width, resolution)
            if d.half_width:
                text += f" ± {fmt_value('mean', d.half_width, d.half_width, resolution)}"
            parts.append(f"{text} ms on {w}")
    if not parts:
        return "The baseline and the gateway share no workload to compare."
    return "Against the baseline its mean latency differs by " + joined_names(parts) + "."


def overhead_resolution(summary: RunSummary, workload: str, target: str) -> float:
    """The resolution of a difference from the baseline: the coarser of its two sides'."""
    sides = (summary.cell(workload, target), summary.cell(workload, summary.baseline or ""))
    return resolution_of(e for cell in sides if cell is not None for e in cell.engines)


def cautions(run: RunRecord, summary: RunSummary, trust: Trust | None = None) -> list[str]:
    out: list[str] = []
    flags = summary.flag_counts()
    if flags:
        parts = [
            f"{name} in {count} ({FLAGS.get(name, 'flagged by the engine')})"
            for name, count in flags.items()
        ]
        out.append(
            "Flagged measurements (target × workload × repetition): "
            + "; ".join(parts)
            + ". Their numbers describe the machine as much as the gateway."
        )
    if trust is not None:
        if trust.ceiling is not None and trust.ceiling.note:
            out.append(trust.ceiling.note[0].upper() + trust.ceiling.note[1:] + ".")
        disagreeing = [a for a in trust.agreements if not a.agrees]
        if disagreeing:
            out.append(
                f"The second engine does not confirm every number: {trust.summary} See "
                '"Trust" below.'
            )
        if trust.second_engine_note:
            out.append(f"Cross-check: {trust.second_engine_note}.")
    out.extend(baseline_not_a_floor(run, summary))
    out.extend(wrong_answer_evidence(summary))
    out.extend(rate_limit_notes(summary))
    every = (run.plan or {}).get("answers_every") or 1
    if isinstance(every, int) and every > 1:
        out.append(
            f"Answers were checked one in {every:,} (answers: {{every: {every}}}): a wrong "
            "answer between them is not seen, and the wrong answers counted are a sample."
        )
    left_out = left_out_of(run.environment)
    for target, reason in sorted(run.target_errors.items()):
        first_line = reason.strip().splitlines()[0] if reason.strip() else "no reason given"
        out.append(first_line if target in left_out else f"{target} failed: {first_line}")
    out.extend(str(line) for line in (run.environment.get("routes_left_out") or {}).values())
    # The cloud path: gateways whose meter did not cover every phase, and what of the plan's
    # deployment (TLS handshakes, a replica's fault) could not be observed
    # (gatebench.cloud._ingest).
    out.extend(str(line) for line in (run.environment.get("meter_gaps") or {}).values())
    out.extend(str(line) for line in run.environment.get("deployment_notes") or [])
    out.extend(summary.scores.notes)
    out.extend(summary.notes)
    if run.status.value not in ("done",):
        why = run.error.strip().splitlines()[0] if run.error and run.error.strip() else ""
        out.append(
            f"The run's status is '{run.status.value}'"
            + (f" ({why})" if why else "")
            + ": the results may be incomplete."
        )
    names = (*summary.targets, *run.gateways)
    return [_sentence(line, names) for line in out]


def _sentence(text: str, names: Sequence[str]) -> str:
    """A caution as a sentence: a capital first letter (unless it opens with a gateway's name,
    which keeps its own spelling) and a full stop (not after a colon that introduces what
    follows)."""
    opens_with_name = any(re.match(rf"{re.escape(n)}\b", text) for n in names if n)
    if text and not opens_with_name:
        text = text[0].upper() + text[1:]
    return text + "." if text and (text[-1].isalnum() or text[-1] in ")%'\"") else text


BEYOND_BASELINE_PCT = 10.0
"""With no interval (one repetition), a gateway is said to carry more than the baseline when
it carries this much more."""


def baseline_not_a_floor(run: RunRecord, summary: RunSummary) -> list[str]:
    """Where gateways carried more requests per second than the baseline (no gateway): there
    the baseline is no floor to read the gateways' overhead from, with what the run's own
    record says of why (the backend on the load engine's cores, TLS ended by the backend)."""
    ahead: dict[str, list[str]] = {}
    for w in summary.workloads:
        if not summary.throughput_scored(w):
            continue
        for g in summary.gateways:
            o = summary.overhead_for(w, g, "throughput")
            if o is None:
                continue
            d, relative = o.difference, o.relative_pct or 0.0
            if (d.low > 0) if d.low is not None else relative > BEYOND_BASELINE_PCT:
                ahead.setdefault(w, []).append(g)
    if not ahead:
        return []
    where = targets_on(ahead)
    return [
        f"More requests per second than the baseline (no gateway): {where}. There the "
        f"baseline is no floor{baseline_handicaps(run.environment)}: the overhead table shows "
        "gains there, so compare the gateways with one another"
    ]


def baseline_handicaps(environment: Mapping[str, Any]) -> str:
    """What the run's record says held the baseline back against the gateways, in brackets
    (empty when it says nothing): the backend on the load engine's cores, TLS ended by the
    backend."""
    why = []
    cores = recorded_cores(environment)
    shared = sorted(set(cores.get("backend") or ()) & set(cores.get("engine") or ()))
    if shared and cores.get("gateway"):
        listed = ", ".join(str(c) for c in shared)
        why.append(
            f"the baseline is the backend itself, which ran on the load engine's cpu {listed} "
            "while each gateway had its own"
        )
    if environment.get("tls"):
        why.append("with tls, the backend ends TLS itself at the baseline")
    return f" ({'; '.join(why)})" if why else ""


def wrong_answer_evidence(summary: RunSummary) -> list[str]:
    """One caution per target and workload with wrong answers: the first one kept, in the
    engine's words (request, expected, got)."""
    out = []
    for (workload, target), cell in sorted(summary.cells.items()):
        if cell.wrong_answers and cell.wrong_evidence:
            out.append(
                f"{target} on {workload}: {cell.wrong_answers:,} wrong answer"
                f"{'s' if cell.wrong_answers != 1 else ''}, the first: {cell.wrong_evidence[0]}"
            )
    return out


def rate_limit_notes(summary: RunSummary) -> list[str]:
    """One caution per target and workload the plan rate-limits: how many of its answers were
    the limit refusing the request. They are not errors, but their latency and throughput are
    in the cell's figures, so two gateways compare fairly only when they refused alike."""
    out = []
    for (workload, target), cell in sorted(summary.cells.items()):
        n = cell.rate_limited
        if n is None:
            continue
        share = 100.0 * n / cell.requests if cell.requests else 0.0
        out.append(
            f"{target} on {workload}: {n:,} of {cell.requests:,} answers ({share:.1f} %) were "
            "the plan's rate limit refusing the request (429), counted apart from the errors; "
            "the latency and throughput include them"
        )
    return out


def metric_label(metric: str) -> str:
    return {
        "throughput": "Throughput",
        "min": "Min",
        "mean": "Mean",
        "max": "Max",
        "stddev": "Std dev",
        "p50": "p50",
        "p90": "p90",
        "p95": "p95",
        "p99": "p99",
        "error_pct": "Errors",
    }.get(metric, metric)
