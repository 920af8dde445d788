"""From the measurements of a run to what a reader needs: repetitions summarised, scored,
compared with the baseline, and checked for stability. Pure: no store, no printing.

- Per (workload, target) and metric: mean, sample std dev and a 95 % confidence interval
  of the mean (Student's t, :mod:`gatebench.core.confidence`).
- Scores from the means (:func:`gatebench.core.score.score`).
- Per repetition: the same score on that repetition's values alone, the ranks it gives, and
  how often each gateway ranks first. Only complete repetitions count (every measured
  cell of the run has that repetition), so an interrupted last round does not count
  against the gateways it had not reached yet.
- Overhead against the baseline per endpoint: gateway − baseline per metric, with the
  confidence interval of the difference (Welch).
- The leader against every other ranked gateway: the paired difference of their
  per-repetition global scores, Holm-corrected together, to say whether the win is larger than
  the run-to-run noise, and over whom.
- Tester-bound throughput: when a gateway's throughput reached 80 % of the load engine's
  ceiling for a workload (``ceiling``, measured by the run) in at least half of its
  repetitions, that workload's throughput ranks the generator, not the gateways: it is left
  out of the score, for every gateway (docs/trust.md).
- Too-short throughput: likewise when a gateway's phases on a workload were ``too short`` for
  their throughput to mean anything in at least half of its repetitions (docs/trust.md).
- A gateway that failed during the run (``failed``: target → when) is not ranked: its
  measurements stay in the tables, but the phases that overlap its failure (flagged
  ``target-failed``) are left out of every figure, and the score compares the others.
- A gateway that gave a wrong answer (``gatebench.core.answers``: an answer that was not the
  backend's answer to that request, whole) is not ranked either, however fast it was: a fast
  wrong answer is not a result, so it can never rank first over a gateway without one
  (docs/trust.md, "Right answers under load").

- A gateway with no measurement at all (a run stopped before its first phase, or one still
  going) is not ranked: a score of 0 would say it was measured and lost.

A measurement in which no request completed (``requests == 0``) says nothing about
latency (its latencies would read 0 ms and look best): it counts as missing, and the
target failed that workload in that repetition.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gatebench.core.answers import EVIDENCE_KEPT
from gatebench.core.confidence import (
    CONFIDENCE,
    Difference,
    Sample,
    holm,
    paired_difference,
    welch_difference,
)
from gatebench.core.metrics import COST_METRICS, METRICS
from gatebench.core.model import BASELINE, RESOURCE_FIELDS, Measurement
from gatebench.core.records import fields
from gatebench.core.resources import pooled_requests_per_cpu_s
from gatebench.core.score import RESOLUTION_MS, Profile, ScoreResult, score
from gatebench.core.stats import counted, fmt_rate, joined_names
from gatebench.core.trust import (
    BACKEND_FAILED_FLAG,
    ENGINE_BUSY_SHARE,
    ENGINE_RESOLUTION_MS,
    FAILED_TARGET_FLAG,
    LEFT_OUT_FLAGS,
    bound_by_tester,
    engine_busy_throughput,
    too_short_throughput,
)


@dataclass(frozen=True)
class CellSummary:
    """One target on one workload, over its repetitions."""

    workload: str
    target: str
    repetitions: tuple[int, ...]
    metrics: Mapping[str, Sample]
    requests: int
    ok: int
    ko: int
    flags: Mapping[str, int] = field(default_factory=dict)
    """Flag → number of repetitions that carry it (``noisy``, ``tester-bound``, ...)."""
    other_cpu_pct: float | None = None
    """The highest share of CPU other processes used during one of its repetitions."""
    tester_cpu_pct: float | None = None
    """The highest CPU share the load generator used during one of its repetitions."""
    errors: tuple[tuple[str, int], ...] = ()
    """KO reasons summed over the repetitions, most frequent first."""
    engines: tuple[str, ...] = ()
    resources: Mapping[str, Sample] = field(default_factory=dict)
    """What the cell cost (``req_per_cpu_s`` and each role's CPU seconds and peak MB,
    gatebench.core.model.RESOURCE_FIELDS) over the repetitions that measured it; a figure no
    repetition measured is absent."""
    wrong_answers: int = 0
    """Wrong answers summed over the repetitions (gatebench.core.answers)."""
    wrong_kinds: tuple[tuple[str, int], ...] = ()
    wrong_evidence: tuple[str, ...] = ()
    """The first few wrong answers, from the earliest repetitions."""
    unchecked: int = 0
    """Repetitions whose answers the engine did not check (wrk, a user's own backend, records
    older than the check)."""
    rate_limited: int | None = None
    """Answers that were the plan's rate limit refusing the request, summed over the
    repetitions (``Measurement.rate_limited``); None where the plan limits nothing."""

    @property
    def n(self) -> int:
        return len(self.repetitions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "target": self.target,
            "repetitions": list(self.repetitions),
            **fields(self, "requests ok ko"),
            "flags": dict(self.flags),
            "other_cpu_pct": self.other_cpu_pct,
            "tester_cpu_pct": self.tester_cpu_pct,
            "errors": [{"reason": r, "count": c} for r, c in self.errors],
            "engines": list(self.engines),
            "resources": {name: {"mean": s.mean, "n": s.n} for name, s in self.resources.items()},
            "wrong_answers": self.wrong_answers,
            "wrong_kinds": dict(self.wrong_kinds),
            "wrong_evidence": list(self.wrong_evidence),
            "unchecked": self.unchecked,
            **({} if self.rate_limited is None else {"rate_limited": self.rate_limited}),
            "metrics": {
                m: {
                    "mean": s.mean,
                    "stddev": s.stddev,
                    "n": s.n,
                    "ci95_half_width": s.ci_half_width,
                }
                for m, s in self.metrics.items()
            },
        }


@dataclass(frozen=True)
class Overhead:
    """``gateway − baseline`` for one metric on one workload."""

    workload: str
    target: str
    metric: str
    difference: Difference
    baseline_mean: float

    @property
    def relative_pct(self) -> float | None:
        if self.baseline_mean == 0:
            return None
        return 100.0 * self.difference.estimate / self.baseline_mean


@dataclass(frozen=True)
class RankStability:
    target: str
    ranks: tuple[int, ...]
    """Rank in each complete repetition, in repetition order."""
    scores: tuple[float, ...]
    """Global score in each complete repetition."""

    @property
    def first(self) -> int:
        """Repetitions in which it ranked first (a tie for first counts for each)."""
        return sum(1 for r in self.ranks if r == 1)

    @property
    def mean_rank(self) -> float | None:
        return math.fsum(self.ranks) / len(self.ranks) if self.ranks else None


@dataclass(frozen=True)
class Comparison:
    """The leader against another ranked gateway over the complete repetitions (paired)."""

    leader: str
    runner_up: str
    """The gateway compared with the leader: the runner-up in ``RunSummary.comparison``."""
    difference: Difference
    """Mean of (leader − runner-up) per-repetition global scores, with its 95 % CI."""
    repetitions: int
    adjusted_p: float | None = None
    """The p-value of the difference, Holm-adjusted for the ``family`` comparisons of the
    leader with every other ranked gateway (None without an interval)."""
    family: int = 1
    """How many comparisons were tested together (the leader against each other gateway)."""

    @property
    def significant(self) -> bool | None:
        """Whether the leader's lead over this gateway is larger than the run-to-run noise,
        with the ``family`` comparisons corrected for (Holm); None without an interval (one
        complete repetition, or every repetition gave the same difference)."""
        if self.difference.significant is None:
            return None
        if self.adjusted_p is None:
            return self.difference.significant
        return self.adjusted_p < 1.0 - CONFIDENCE


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    gateways: tuple[str, ...]
    baseline: str | None
    """The baseline target's name when the run measured it."""
    workloads: tuple[str, ...]
    repetitions: tuple[int, ...]
    """Every repetition index seen."""
    complete_repetitions: tuple[int, ...]
    cells: Mapping[tuple[str, str], CellSummary]
    """(workload, target) → summary."""
    scores: ScoreResult
    rank_stability: tuple[RankStability, ...]
    overhead: tuple[Overhead, ...]
    comparison: Comparison | None
    """The leader against the runner-up (the first of ``comparisons``)."""
    empty_measurements: tuple[str, ...] = ()
    """Keys (target:workload:repetition) of measurements where no request completed."""
    notes: tuple[str, ...] = ()
    tester_bound: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """workload → gateways whose throughput there is tester-bound (not scored there)."""
    engine_busy: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """workload → gateways whose phases there were ``engine-busy`` (part of ``tester_bound``:
    the engine's cores were out of time, not its ceiling reached)."""
    too_short: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """workload → gateways whose phases there were too short to measure a throughput."""
    rates_set: Mapping[str, float] = field(default_factory=dict)
    """workload → the rate its profile offers, which the engine carried: throughput there is
    the plan's (not scored)."""
    unranked: Mapping[str, str] = field(default_factory=dict)
    """Gateways left out of the score, with why (``failed during repetition 3``)."""
    left_out: Mapping[str, str] = field(default_factory=dict)
    """Gateways the run left out before it started → what they cannot do (``cannot apply the
    plan's policies``); in ``unranked`` too."""
    failed_measurements: tuple[str, ...] = ()
    """Keys of measurements that overlap their target's failure (left out of every figure)."""
    wrong: Mapping[str, int] = field(default_factory=dict)
    """Target → its wrong answers over the run, for every target that gave one (the baseline
    too): such a gateway is in ``unranked``."""
    comparisons: tuple[Comparison, ...] = ()
    """The leader against every other ranked gateway, in the score's order, paired by
    repetition and Holm-corrected together (:func:`lead_comparisons`)."""
    resolutions: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    """workload → (resolution in ms, engine) the score used there: the coarsest resolution
    among the engines that measured the ranked gateways' cells (:func:`scoring_resolutions`)."""

    @property
    def targets(self) -> tuple[str, ...]:
        return (*self.gateways, self.baseline) if self.baseline else self.gateways

    def throughput_scored(self, workload: str) -> bool:
        """Whether the score ranks throughput on ``workload`` (not when the load engine or the
        plan's rate set it, or the phases were too short to measure it)."""
        return not any(workload in m for m in (self.tester_bound, self.too_short, self.rates_set))

    def unscored_throughput(self) -> dict[str, str]:
        """workload → the first reason its throughput is not scored (:func:`first_reasons`)."""
        return first_reasons(self.tester_bound, self.rates_set, self.too_short)

    def cell(self, workload: str, target: str) -> CellSummary | None:
        return self.cells.get((workload, target))

    def measured_targets(self, workload: str) -> list[str]:
        """The targets with a cell on ``workload``, in the summary's order."""
        return [t for t in self.targets if self.cell(workload, t) is not None]

    def by_workload(self, metric: str) -> list[tuple[str, list[tuple[str, Sample]]]]:
        """For a chart: each workload with at least one measured target, and that metric's
        sample for each measured target, in the summary's order."""
        out = []
        for w in self.workloads:
            samples = [(t, self.cells[(w, t)].metrics[metric]) for t in self.measured_targets(w)]
            if samples:
                out.append((w, samples))
        return out

    def best_among_gateways(self, workload: str) -> dict[str, float]:
        """metric → the best mean among the ranked gateways measured on ``workload`` (the
        baseline does not compete, nor does a gateway that is not ranked: one that failed
        during the run, gave wrong answers or was left out); empty when no ranked gateway was
        measured there."""
        best: dict[str, float] = {}
        gateways = [
            t
            for t in self.measured_targets(workload)
            if t != self.baseline and t not in self.wrong and t not in self.unranked
        ]
        for m in METRICS:
            values = [self.cells[(workload, t)].metrics[m].mean for t in gateways]
            if values:
                best[m] = max(values) if METRICS[m] == "higher" else min(values)
        return best

    def overhead_for(self, workload: str, target: str, metric: str) -> Overhead | None:
        for o in self.overhead:
            if (o.workload, o.target, o.metric) == (workload, target, metric):
                return o
        return None

    def flag_counts(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for cell in self.cells.values():
            total.update(cell.flags)
        return dict(sorted(total.items()))


UNSCORED_REASONS = ("tester-bound", "rate-set", "too-short")
"""Why a workload's throughput is not scored, the first that holds said alone: the load
engine set it, the plan's rate set it, its phases were too short to measure it."""


def first_reasons(
    tester_bound: Iterable[str], rates_set: Iterable[str], too_short: Iterable[str]
) -> dict[str, str]:
    """workload → the first of :data:`UNSCORED_REASONS` that holds for it, in that order: the
    verdict and the summary's notes name each workload once, with that reason."""
    out: dict[str, str] = {}
    for reason, workloads in zip(
        UNSCORED_REASONS, (tester_bound, rates_set, too_short), strict=True
    ):
        for w in workloads:
            out.setdefault(w, reason)
    return out


UNMEASURED = "was not measured"
"""Why a gateway of the run with no measurement at all is not ranked (a run stopped before
it, or still going): never ranked with a score of 0 as if it had been measured and lost."""


def summarize(
    measurements: Iterable[Measurement],
    *,
    run_id: str | None = None,
    gateways: Sequence[str] | None = None,
    workloads: Sequence[str] | None = None,
    baseline: str = BASELINE,
    profile: Profile = "paper",
    weights: Mapping[str, float] | Sequence[tuple[str, float]] | None = None,
    ceiling: Mapping[str, float] | None = None,
    rates_set: Mapping[str, float] | None = None,
    failed: Mapping[str, str] | None = None,
    left_out: Mapping[str, str] | None = None,
) -> RunSummary:
    """Summarise a run's measurements. ``gateways`` and ``workloads`` (from the run record)
    give the order and say who was expected; by default they come from the measurements.
    ``ceiling``: workload → the load engine's throughput against the ceiling server, where
    that is its limit. ``rates_set``: workload → the rate its profile offers, where the
    engine carried it (:meth:`gatebench.core.trust.Ceiling.rates_set`): throughput is not
    scored there, it is the plan's.
    ``failed``: gateways that failed during the run → when (``during repetition 3``): not
    ranked. ``left_out``: gateways the run left out before it started → what they cannot do
    (``cannot apply the plan's policies``): not ranked either, and never said to have failed."""
    all_ms = sorted(measurements, key=lambda m: (m.target, m.workload, m.repetition))
    empty = tuple(m.key for m in all_ms if m.requests <= 0)
    overlapping = tuple(m.key for m in all_ms if FAILED_TARGET_FLAG in m.flags)
    backend_down = tuple(m.key for m in all_ms if BACKEND_FAILED_FLAG in m.flags)
    usable = [m for m in all_ms if m.requests > 0 and not set(LEFT_OUT_FLAGS) & set(m.flags)]
    if run_id is None:
        run_id = all_ms[0].run_id if all_ms else ""
    if gateways is None:
        gateways = sorted({m.target for m in all_ms if m.target != baseline})
    gateway_list = tuple(g for g in gateways if g != baseline)
    extra_targets = sorted({m.target for m in all_ms} - set(gateway_list) - {baseline})
    gateway_list = (*gateway_list, *extra_targets)
    if workloads is None:
        workloads = sorted({m.workload for m in all_ms})
    extra_workloads = sorted({m.workload for m in all_ms} - set(workloads))
    workload_list = (*workloads, *extra_workloads)
    has_baseline = any(m.target == baseline for m in all_ms)

    left = {g: why for g, why in (left_out or {}).items() if g in gateway_list}
    unranked = {g: f"was left out before the run, as it {why}" for g, why in left.items()}
    for g, when in (failed or {}).items():
        if g in gateway_list and g not in unranked:
            unranked[g] = f"failed {when}"
    wrong = wrong_answers(usable)
    for g, n in wrong.items():
        if g in gateway_list and g not in unranked:
            unranked[g] = f"gave {n:,} wrong answer{'s' if n != 1 else ''}"
    recorded = {m.target for m in all_ms}
    for g in gateway_list:
        if g not in unranked and g not in recorded:
            unranked[g] = UNMEASURED
    ranked = tuple(g for g in gateway_list if g not in unranked)
    repetitions = tuple(sorted({m.repetition for m in all_ms}))

    grouped: dict[tuple[str, str], list[Measurement]] = {}
    for m in usable:
        grouped.setdefault((m.workload, m.target), []).append(m)
    cells = {key: _cell(ms) for key, ms in grouped.items()}

    means: dict[str, dict[str, Mapping[str, Sample]]] = {}
    for (w, t), cell in cells.items():
        means.setdefault(w, {})[t] = cell.metrics
    rates = {w: r for w, r in (rates_set or {}).items() if w in workload_list}
    limits = {w: c for w, c in (ceiling or {}).items() if w not in rates}
    bound = bound_by_tester(usable, ranked, limits)
    busy = engine_busy_throughput(usable, ranked)
    short = {w: ts for w, ts in too_short_throughput(usable, ranked).items() if w not in rates}
    unscored_metrics = dict.fromkeys(sorted({*bound, *short, *rates}), ("throughput",))
    resolutions = scoring_resolutions(cells.values(), ranked)
    scored = partial(
        score,
        gateways=ranked,
        workloads=workload_list,
        profile=profile,
        weights=weights,
        baseline=baseline,
        left_out=unscored_metrics,
        resolution_ms={w: ms for w, (ms, _) in resolutions.items()},
        engines={w: engine for w, (_, engine) in resolutions.items()},
    )
    result = scored(means)  # the means over the repetitions; each complete repetition below

    by_rep: dict[int, dict[tuple[str, str], Measurement]] = {}
    for m in usable:
        by_rep.setdefault(m.repetition, {})[(m.workload, m.target)] = m
    expected_cells = {key for key in cells if key[1] in ranked}
    complete = tuple(
        r for r in repetitions if expected_cells and expected_cells <= set(by_rep.get(r, {}))
    )
    per_rep: list[ScoreResult] = []
    for r in complete:
        values: dict[str, dict[str, dict[str, Sample]]] = {}
        for (w, t), m in by_rep[r].items():
            values.setdefault(w, {})[t] = {name: Sample(m.metric(name)) for name in METRICS} | {
                name: Sample(cost) for name in COST_METRICS if (cost := m.cost(name)) is not None
            }
        per_rep.append(scored(values))
    stability = tuple(
        RankStability(
            g,
            tuple(res.gateway(g).rank for res in per_rep),
            tuple(res.gateway(g).score for res in per_rep),
        )
        for g in ranked
    )
    comparisons = lead_comparisons(result, per_rep)
    comparison = comparisons[0] if comparisons else None

    overhead: list[Overhead] = []
    if has_baseline:
        for w in workload_list:
            base = cells.get((w, baseline))
            if base is None:
                continue
            for g in gateway_list:
                gateway_cell = cells.get((w, g))
                if gateway_cell is None:
                    continue
                for name in METRICS:
                    overhead.append(
                        Overhead(
                            w,
                            g,
                            name,
                            welch_difference(gateway_cell.metrics[name], base.metrics[name]),
                            base.metrics[name].mean,
                        )
                    )

    unscored: dict[str, list[str]] = {}  # why → the workloads it holds for, said once
    for w, reason in first_reasons(bound, rates, short).items():  # each workload once
        if reason == "tester-bound" and w in busy:
            why = (
                "the load engine's cores (with the backend where it is pinned beside the "
                f"engine) were busy for at least {ENGINE_BUSY_SHARE:.0%} of the phases of "
                f"{joined_names(busy[w])} in at least half of the repetitions while their "
                "gateway's core was not (engine-busy), so the number ranks the load generator, "
                "not the gateways"
            )
        elif reason == "tester-bound":
            why = (
                f"{joined_names(bound[w])} reached 80 % of the load engine's ceiling there in at "
                "least half of the repetitions (tester-bound), so the number ranks the load "
                "generator, not the gateways"
            )
        elif reason == "rate-set":
            why = (
                f"its profile starts {fmt_rate(rates[w])} requests a second whatever the target "
                "does (an open model) and the load engine carried that rate, so every target "
                "that keeps up carries the same; its latency and errors are scored"
            )
        else:
            why = (
                f"the phases of {joined_names(short[w])} there were too short to measure a rate "
                "(shorter than 20 × the timer's resolution plus a burst's launch spread, in at "
                "least half of the repetitions; docs/trust.md)"
            )
        unscored.setdefault(why, []).append(w)
    notes = [
        f"throughput on {joined_names(workloads)} is not scored: {why}"
        for why, workloads in unscored.items()
    ]
    for g, why in unranked.items():
        notes.append(f"{g} is not ranked: it {why}")
    if baseline in wrong:
        notes.append(
            f"the baseline gave {counted(wrong[baseline], 'wrong answer')} with no gateway in the "
            "way: "
            "the backend or the load engine is at fault, not a gateway"
        )
    for keys, failure in (
        (overlapping, ("its target's failure", "their target's failure")),
        (backend_down, ("the failure of the backend gatebench started",) * 2),
    ):
        if keys:
            one = len(keys) == 1
            notes.append(
                f"{counted(len(keys), 'measurement')} {'overlaps' if one else 'overlap'} "
                f"{failure[0] if one else failure[1]} and {'is' if one else 'are'} left out of "
                f"every figure: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
            )
    if empty:
        notes.append(
            f"{counted(len(empty), 'measurement')} completed no request and "
            + ("counts" if len(empty) == 1 else "count")
            + " as missing: "
            + ", ".join(empty[:5])
            + (" ..." if len(empty) > 5 else "")
        )
    incomplete = [r for r in repetitions if r not in complete]
    if incomplete and per_rep:
        notes.append(
            ("repetition " if len(incomplete) == 1 else "repetitions ")
            + joined_names(str(r) for r in incomplete)
            + " did not measure every target and "
            + ("is" if len(incomplete) == 1 else "are")
            + " left out of the rank stability"
        )
    return RunSummary(
        run_id=run_id,
        gateways=gateway_list,
        baseline=baseline if has_baseline else None,
        workloads=workload_list,
        repetitions=repetitions,
        complete_repetitions=complete,
        cells=cells,
        scores=result,
        rank_stability=stability,
        overhead=tuple(overhead),
        comparison=comparison,
        comparisons=comparisons,
        empty_measurements=empty,
        notes=tuple(notes),
        tester_bound=bound,
        engine_busy=busy,
        too_short=short,
        rates_set=rates,
        unranked=unranked,
        left_out=left,
        failed_measurements=overlapping,
        wrong=wrong,
        resolutions=resolutions,
    )


def lead_comparisons(result: ScoreResult, per_rep: Sequence[ScoreResult]) -> tuple[Comparison, ...]:
    """The leader (the highest score of the averaged metrics) against every other ranked
    gateway, in the score's order: the paired difference of their global scores over the
    complete repetitions (``per_rep``), with the p-values Holm-adjusted together, so that "its
    lead is larger than the noise" holds against all of them at once at 95 %. Empty with fewer
    than two gateways or no complete repetition."""
    if len(result.gateways) < 2 or not per_rep:
        return ()
    leader = result.gateways[0].target
    mine = [res.gateway(leader).score for res in per_rep]
    differences = [
        (
            g.target,
            # two scores of 0-100: their difference lies within -100..100, whatever t says
            paired_difference(
                mine, [res.gateway(g.target).score for res in per_rep], bounds=(-100.0, 100.0)
            ),
        )
        for g in result.gateways[1:]
    ]
    adjusted = holm([d.p_value for _, d in differences])
    return tuple(
        Comparison(leader, other, d, len(mine), p, len(differences))
        for (other, d), p in zip(differences, adjusted, strict=True)
    )


def scoring_resolutions(
    cells: Iterable[CellSummary], ranked: Sequence[str]
) -> dict[str, tuple[float, str]]:
    """workload → (resolution in ms, engine): the coarsest latency resolution among the engines
    that measured the ranked gateways there (``gatebench.core.trust.ENGINE_RESOLUTION_MS``; an
    engine it does not know counts as :data:`gatebench.core.score.RESOLUTION_MS`), so that two
    gateways are never told apart by a difference one of their engines could not see. The
    score raises latencies under it to it (a 0 ms reading never divides by zero)."""
    out: dict[str, tuple[float, str]] = {}
    for cell in sorted(cells, key=lambda c: (c.workload, c.target)):
        if cell.target not in ranked:
            continue
        for engine in cell.engines:
            ms = ENGINE_RESOLUTION_MS.get(engine, RESOLUTION_MS)
            if cell.workload not in out or ms > out[cell.workload][0]:
                out[cell.workload] = (ms, engine)
    return out


def wrong_answers(measurements: Iterable[Measurement]) -> dict[str, int]:
    """Target → its wrong answers, for the targets that gave at least one, sorted by target."""
    total: Counter[str] = Counter()
    for m in measurements:
        if m.wrong_answers:
            total[m.target] += m.wrong_answers
    return dict(sorted(total.items()))


def _costs(ms: list[Measurement]) -> dict[str, Sample]:
    """What the cell cost (gatebench.core.metrics.COST_METRICS), over the repetitions that
    measured it: absent when none did, so the paper's metrics stay the only ones there.
    Requests per gateway CPU-second is every repetition's requests over all their gateway CPU
    (:func:`_per_cpu_s`), never the mean of the repetitions that reached 0.1 CPU-s alone."""
    out: dict[str, Sample] = {}
    for name in COST_METRICS:
        if name == "req_per_cpu_s":
            pooled = _per_cpu_s(ms)
            if pooled is not None:
                out[name] = pooled
            continue
        values = [v for m in ms if (v := m.cost(name)) is not None]
        if values:
            out[name] = Sample.of(values)
    return out


def _per_cpu_s(ms: list[Measurement]) -> Sample | None:
    """Requests per gateway CPU-second over the cell's repetitions: total requests over total
    CPU (gatebench.core.resources.pooled_requests_per_cpu_s; a repetition under 0.1 CPU-s has no
    figure of its own, and leaving it out would keep a gateway's costliest repetitions only)."""
    pooled = pooled_requests_per_cpu_s((m.requests, m.gateway_cpu_s) for m in ms)
    return None if pooled is None else Sample(*pooled)


def _resources(ms: list[Measurement]) -> dict[str, Sample]:
    out: dict[str, Sample] = {}
    pooled = _per_cpu_s(ms)
    if pooled is not None:
        out["req_per_cpu_s"] = pooled
    for name in RESOURCE_FIELDS:
        values = [v for m in ms if (v := getattr(m, name)) is not None]
        if values:
            out[name] = Sample.of(values)
    return out


def _cell(ms: list[Measurement]) -> CellSummary:
    ms = sorted(ms, key=lambda m: m.repetition)
    flags: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for m in ms:
        flags.update(set(m.flags))
        for reason, count in m.errors:
            errors[reason] += count
    others = [m.other_cpu_pct for m in ms if m.other_cpu_pct is not None]
    testers = [m.tester_cpu_pct for m in ms if m.tester_cpu_pct is not None]
    kinds: Counter[str] = Counter()
    for m in ms:
        kinds.update(dict(m.wrong_kinds))
    return CellSummary(
        workload=ms[0].workload,
        target=ms[0].target,
        repetitions=tuple(m.repetition for m in ms),
        metrics={name: Sample.of([m.metric(name) for m in ms]) for name in METRICS} | _costs(ms),
        requests=sum(m.requests for m in ms),
        ok=sum(m.ok for m in ms),
        ko=sum(m.ko for m in ms),
        flags=dict(sorted(flags.items())),
        other_cpu_pct=max(others) if others else None,
        tester_cpu_pct=max(testers) if testers else None,
        errors=tuple(sorted(errors.items(), key=lambda item: (-item[1], item[0]))),
        engines=tuple(sorted({m.engine for m in ms})),
        resources=_resources(ms),
        wrong_answers=sum(m.wrong_answers for m in ms),
        wrong_kinds=tuple(sorted(kinds.items())),
        wrong_evidence=tuple(e for m in ms for e in m.wrong_evidence)[:EVIDENCE_KEPT],
        unchecked=sum(1 for m in ms if not m.answers_checked),
        rate_limited=_sum_known(m.rate_limited for m in ms),
    )


def _sum_known(values: Iterable[int | None]) -> int | None:
    """The sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


__all__ = [
    "UNSCORED_REASONS",
    "CellSummary",
    "Comparison",
    "Overhead",
    "RankStability",
    "RunSummary",
    "first_reasons",
    "lead_comparisons",
    "scoring_resolutions",
    "summarize",
    "wrong_answers",
]
