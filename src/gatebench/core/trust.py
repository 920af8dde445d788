"""Whether a run's numbers can be trusted: the load engine's headroom, a second engine's
agreement, and how much results move from run to run. Pure: data in, data out.

**Headroom.** A gateway cannot be shown to be faster than the load generator can drive the
fastest target on the machine (nginx serving a small static file: :mod:`gatebench.local.ceiling`).
The runner measures that *ceiling* at the start of every run, with the run's own engine and
each workload's own injection profile, and stores it with the run (``environment.ceiling``).
A measurement whose throughput reaches :data:`TESTER_BOUND_SHARE` (80 %) of its workload's
ceiling is flagged ``tester-bound``: the number describes the generator as much as the
gateway. The ceiling is the one the run demonstrated (:func:`demonstrated_ceiling`: the
reading, or a target's mean throughput where one went faster), for the flag of each phase
(:func:`flag_near_ceiling`, once every phase is in) and for the score alike. The engine's CPU accounting sets the same flag when the machine was saturated and
the generator used more CPU than the target (``engines/cpu.py``). A workload's throughput is
not scored (for any gateway) when some gateway reached 80 % of the ceiling in at least half of
its repetitions (:func:`bound_by_tester`): ranking on it would rank the generator. The CPU
flag stays a caution: on a shared machine it also fires when other work filled the CPU. The
ceiling server leaves the engine's cores to the engine; in a run the backend may share them:
where the engine is pinned apart from the gateway and its cores were busy with the engine
and the backend (95 % or more) while the gateway's were not, the phase is ``engine-busy``
(:func:`flag_engine_busy`), and counts as tester-bound for the score.
Where the profile sets the arrival rate (an open model) and the engine carried it against the
ceiling server, that reading is the plan's rate, not a limit (:meth:`Ceiling.limits`,
:meth:`Ceiling.rates_set`): no phase is flagged by it, and throughput there is not scored
because every target that keeps up carries the same.

**Too short to measure** (:func:`too_short`). A phase's throughput is its requests over its
window (first start to last end), read from timestamps of :data:`ENGINE_RESOLUTION_MS`
(Gatling: whole milliseconds). Each end of the window is off by less than one tick, so the
window is off by less than ``r``; for a burst (``at_once``) the engine also needed ``j`` ms
(the spread of its start times) to launch requests the profile meant to start together. The
throughput's relative error is then below ``(r + j) / D``; a phase is ``too short`` when that
bound exceeds :data:`TOO_SHORT_ERROR_PCT` (5 %), i.e. ``D < 20 × (r + j)``. A workload's
throughput is not scored when some gateway was too short there in at least half of its
repetitions (:func:`too_short_throughput`), like a tester-bound one.

**A second engine.** Gatling and wrk run the same closed-model phases against the same
targets (``gatebench run --cross-check wrk``); :func:`compare_engines` pairs their cells.
Two values *agree* when the smaller is at least 90 % of the larger (:data:`AGREEMENT_PCT`);
for p50 a difference of up to the coarser engine's resolution (Gatling: 1 ms) also agrees,
because a whole-millisecond reading cannot say more.

**Reproducibility.** The same plan run several times: the coefficient of variation of each
metric across the runs, and how often the ranking changes (:func:`reproducibility`).

docs/trust.md explains the decisions and shows the measurements behind them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from gatebench.core.confidence import Sample
from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement
from gatebench.core.records import fields
from gatebench.core.score import ScoreResult

CEILING_TARGET = "ceiling"
"""The pseudo-target of the ceiling phases (never a gateway, never stored as a measurement)."""
TESTER_BOUND_SHARE = 0.8
"""A throughput at or above this share of the engine's ceiling is ``tester-bound``."""
RATE_CARRIED_SHARE = 0.9
"""A ceiling phase whose profile sets the arrival rate (an open model) and that carried at
least this share of that rate measured the plan's rate, not the engine's limit."""
AGREEMENT_PCT = 10.0
"""Two engines agree on a value when the smaller is at least (100 − this) % of the larger."""
ENGINE_RESOLUTION_MS = {"gatling": 1.0, "wrk": 0.001, "loadgen": 0.001}
"""The latency resolution of each engine's records."""
CROSS_CHECK_REPETITIONS = 3
"""A cross-check runs the plan's repetitions, at most this many."""
TOO_SHORT_ERROR_PCT = 5.0
"""A phase is ``too short`` when its throughput may be off by more than this (%)."""
FAILED_TARGET_FLAG = "target-failed"
"""A phase that overlaps its target's failure window (last seen alive → first seen dead)."""
BACKEND_FAILED_FLAG = "backend-failed"
"""A phase that overlaps the failure of the backend gatebench started: every target's."""
LEFT_OUT_FLAGS = (FAILED_TARGET_FLAG, BACKEND_FAILED_FLAG)
"""A phase flagged so is left out of every figure: what it measured is a failure's."""
TOO_SHORT_FLAG = "too-short"
ENGINE_COLD_FLAG = "engine-cold"
"""A phase among a workload's first of the run on which the load engine spent
:data:`ENGINE_COLD_RATIO` times the median CPU per request of its phases (:func:`flag_engine_cold`)."""
ENGINE_COLD_RATIO = 1.5
ENGINE_COLD_MIN_CPU_S = 0.05
"""Phases on which the engine spent less CPU are too small to compare (a timer's wake-ups)."""
ENGINE_BUSY_FLAG = "engine-busy"
"""A phase on which the cores the load engine is pinned to were busy with it (and the
backend pinned beside it) for :data:`ENGINE_BUSY_SHARE` of the phase or more, while the
gateway's own cores were not (:func:`flag_engine_busy`)."""
ENGINE_BUSY_SHARE = 0.95
"""The share of its cores' time the load side must use to be the bottleneck: a core is not
saturated below it (10 concurrent users through a 1 ms backend kept it at 79-89 %)."""


# -- headroom ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CeilingPoint:
    """The engine against the ceiling server, with one workload's injection profile."""

    throughput: float
    p50: float
    requests: int
    offered: float | None = None
    """Requests per second the workload's profile starts whatever the target does (an open
    model: :attr:`gatebench.core.plan.Injection.offered_rate`); None where the target sets
    the pace (closed models, a burst)."""

    @property
    def rate_set(self) -> bool:
        """Whether this reading is the plan's rate rather than the engine's limit: the profile
        offers a rate and the engine carried it against the fastest target, so every target
        that keeps up carries the same throughput."""
        return self.offered is not None and self.throughput >= RATE_CARRIED_SHARE * self.offered


@dataclass(frozen=True)
class Ceiling:
    engine: str
    server: str
    workloads: Mapping[str, CeilingPoint] = field(default_factory=dict)
    share: float = TESTER_BOUND_SHARE
    note: str = ""
    """Why there is no ceiling (nginx missing, the server did not start...)."""

    def throughput(self, workload: str) -> float | None:
        point = self.workloads.get(workload)
        return point.throughput if point is not None else None

    def limits(self) -> dict[str, float]:
        """workload → the engine's throughput against the fastest target, where that is the
        engine's limit (not where the plan's rate set it: :attr:`CeilingPoint.rate_set`)."""
        return {w: p.throughput for w, p in self.workloads.items() if not p.rate_set}

    def rates_set(self) -> dict[str, float]:
        """workload → the rate its profile offers, where the engine carried it: there the
        throughput says how much the plan sent, not how fast a target is."""
        return {
            w: p.offered for w, p in self.workloads.items() if p.rate_set and p.offered is not None
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "server": self.server,
            "tester_bound_share": self.share,
            "note": self.note,
            "workloads": {
                w: {"throughput": p.throughput, "p50": p.p50, "requests": p.requests}
                | ({} if p.offered is None else {"offered": p.offered})
                for w, p in sorted(self.workloads.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ceiling:
        points = {
            str(w): CeilingPoint(
                float(p["throughput"]),
                float(p["p50"]),
                int(p["requests"]),
                None if p.get("offered") is None else float(p["offered"]),
            )
            for w, p in (data.get("workloads") or {}).items()
        }
        return cls(
            engine=str(data.get("engine", "")),
            server=str(data.get("server", "")),
            workloads=points,
            share=float(data.get("tester_bound_share", TESTER_BOUND_SHARE)),
            note=str(data.get("note", "")),
        )


def ceiling_of(environment: Mapping[str, Any]) -> Ceiling | None:
    """The ceiling a run stored with itself (``environment.ceiling``), if any."""
    data = environment.get("ceiling")
    return Ceiling.from_dict(data) if isinstance(data, Mapping) else None


def near_ceiling(
    throughput: float, ceiling: float | None, share: float = TESTER_BOUND_SHARE
) -> bool:
    """Whether a throughput came within (1 − share) of the engine's ceiling (or above it)."""
    return ceiling is not None and ceiling > 0 and throughput >= share * ceiling


def is_tester_bound(flagged: int, repetitions: int) -> bool:
    """A cell is tester-bound when at least half of its repetitions were flagged."""
    return flagged > 0 and 2 * flagged >= repetitions


def demonstrated_ceiling(
    measurements: Iterable[Measurement], ceiling: Mapping[str, float]
) -> dict[str, float]:
    """workload → the engine's ceiling as the run demonstrated it: the ceiling server's
    throughput, or the highest mean throughput any target (the baseline included) reached on
    that workload when that is higher.

    The ceiling phase runs once, before the first repetition; a short workload (50 requests at
    once, a few hundred sequential ones) makes that one reading noisy. A target that went
    faster on average proves that the engine drives at least that rate, and comparing the
    gateways with the lower reading would call every fast one tester-bound."""
    sums: dict[tuple[str, str], list[float]] = {}
    for m in measurements:
        if m.requests > 0 and m.workload in ceiling and not set(LEFT_OUT_FLAGS) & set(m.flags):
            sums.setdefault((m.workload, m.target), []).append(m.throughput)
    out = dict(ceiling)
    for (w, _), values in sums.items():
        out[w] = max(out[w], sum(values) / len(values))
    return out


def flag_near_ceiling(
    measurements: Sequence[Measurement],
    ceiling: Mapping[str, float],
    share: float = TESTER_BOUND_SHARE,
) -> list[Measurement]:
    """``measurements`` with ``tester-bound`` added where the throughput reached ``share`` of
    the ceiling the run demonstrated (:func:`demonstrated_ceiling`): the ceiling
    :func:`bound_by_tester` scores with, so a phase's flag and the score agree. Decided once
    every phase is in (the demonstrated ceiling needs them all). A flag already there (the
    CPU accounting's) stays; unchanged measurements are the same objects."""
    top = demonstrated_ceiling(measurements, ceiling)
    out = []
    for m in measurements:
        if (
            m.requests > 0
            and "tester-bound" not in m.flags
            and near_ceiling(m.throughput, top.get(m.workload), share)
        ):
            m = replace(m, flags=(*m.flags, "tester-bound"))
        out.append(m)
    return out


def flag_engine_cold(measurements: Sequence[Measurement]) -> list[Measurement]:
    """``measurements`` with ``engine-cold`` added to the phases that opened a workload on a
    load engine still warming (docs/trust.md, "The engine's own warm-up"): per workload, in the
    order the phases ran, each phase from the first on whose engine CPU per request was at
    least :data:`ENGINE_COLD_RATIO` times the median of the workload's phases, until the first
    that was not (the median, not the cheapest: the baseline, faster, spreads the engine's
    fixed cost per second over more requests).

    The same target's other repetitions tell a cold engine from a target that costs the engine
    more per request (new connections, larger answers): where one of them cost as much, the
    phase keeps no flag. Phases without the engine's CPU or without requests are left out; a
    workload needs three that have both. One with less than :data:`ENGINE_COLD_MIN_CPU_S` counts in the
    median but is too small to judge (neither flagged nor ending the first ones). Unchanged
    measurements are the same objects."""

    by_workload: dict[str, list[tuple[float, int]]] = {}
    for i, m in enumerate(measurements):
        if m.engine_cpu_s is not None and m.requests > 0:
            by_workload.setdefault(m.workload, []).append((m.engine_cpu_s / m.requests, i))
    cold: set[int] = set()
    for phases in by_workload.values():
        if len(phases) < 3:
            continue
        bar = ENGINE_COLD_RATIO * statistics.median(c for c, _ in phases)
        costly = {
            i
            for c, i in phases
            if c >= bar and (measurements[i].engine_cpu_s or 0.0) >= ENGINE_COLD_MIN_CPU_S
        }
        for _, i in sorted(phases, key=lambda p: (measurements[p[1]].started_at, p[1])):
            m = measurements[i]
            if (m.engine_cpu_s or 0.0) < ENGINE_COLD_MIN_CPU_S:
                continue  # too small to judge either way
            if i not in costly:
                break
            again = [
                j
                for _, j in phases
                if j != i
                and measurements[j].target == m.target
                and measurements[j].repetition != m.repetition
            ]
            if not any(j in costly for j in again):
                cold.add(i)
    return [
        replace(m, flags=(*m.flags, ENGINE_COLD_FLAG))
        if i in cold and ENGINE_COLD_FLAG not in m.flags
        else m
        for i, m in enumerate(measurements)
    ]


def flag_engine_busy(
    measurements: Sequence[Measurement], cores: Mapping[str, Sequence[int]]
) -> list[Measurement]:
    """``measurements`` with ``engine-busy`` added where the load side was the bottleneck:
    the cores the engine is pinned to (``cores``: role → core numbers, the run's
    ``environment.cpu_affinity.cores``) were busy with the engine, and the backend where it is
    pinned among them, for :data:`ENGINE_BUSY_SHARE` of the phase or more, while the gateway's
    cores were below that. Such a phase's throughput is the rate the engine could send from
    its cores, not the gateway's: the ceiling misses it, since the ceiling server leaves the
    engine's cores to the engine alone. Only this run's own processes count (not the noise of
    others, which the CPU accounting's ``tester-bound`` also counts), and only where the
    engine and the gateway are pinned apart. Unchanged measurements are the same objects."""
    engine = set(cores.get("engine") or ())
    gateway = set(cores.get("gateway") or ())
    if not engine or not gateway or engine & gateway:
        return list(measurements)
    backend = set(cores.get("backend") or ())
    beside = bool(backend) and backend <= engine
    out = []
    for m in measurements:
        if m.engine_cpu_s is not None and m.duration_s > 0 and ENGINE_BUSY_FLAG not in m.flags:
            load = m.engine_cpu_s + ((m.backend_cpu_s or 0.0) if beside else 0.0)
            busy = load / (m.duration_s * len(engine)) >= ENGINE_BUSY_SHARE
            own = m.gateway_cpu_s
            free = own is None or own / (m.duration_s * len(gateway)) < ENGINE_BUSY_SHARE
            if busy and free:
                m = replace(m, flags=(*m.flags, ENGINE_BUSY_FLAG))
        out.append(m)
    return out


def bound_by_tester(
    measurements: Iterable[Measurement],
    gateways: Iterable[str],
    ceiling: Mapping[str, float],
    share: float = TESTER_BOUND_SHARE,
) -> dict[str, tuple[str, ...]]:
    """workload → the gateways whose throughput there is tester-bound: it reached ``share`` of
    the engine's ceiling for that workload (:func:`demonstrated_ceiling`), or the engine's
    cores were busy (``engine-busy``: :func:`flag_engine_busy`), in at least half of its
    repetitions. Only workloads with at least one such gateway.

    Not the CPU accounting's flag of the same name: on a shared machine that one also fires
    when other processes, not the generator, filled the CPU, and it would then hide
    throughput that the gateways did set (docs/trust.md)."""
    measurements = list(measurements)
    ceiling = demonstrated_ceiling(measurements, ceiling)
    return _in_half(
        measurements,
        gateways,
        lambda m: (
            near_ceiling(m.throughput, ceiling.get(m.workload), share)
            or ENGINE_BUSY_FLAG in m.flags
        ),
    )


def engine_busy_throughput(
    measurements: Iterable[Measurement], gateways: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """workload → the gateways whose phases there were ``engine-busy`` in at least half of
    their repetitions (the part of :func:`bound_by_tester` the ceiling did not decide)."""
    return _in_half(measurements, gateways, lambda m: ENGINE_BUSY_FLAG in m.flags)


# -- too short to measure ----------------------------------------------------------------------


def min_phase_ms(
    resolution_ms: float, launch_spread_ms: float = 0.0, error_pct: float = TOO_SHORT_ERROR_PCT
) -> float:
    """The shortest window whose throughput is within ``error_pct`` whatever the rounding:
    the window's error is below ``resolution_ms + launch_spread_ms``, so the relative error of
    requests / window stays within ``error_pct`` from ``100 × (r + j) / error_pct`` on."""
    return 100.0 * (resolution_ms + max(0.0, launch_spread_ms)) / error_pct


def too_short(duration_ms: float, resolution_ms: float, launch_spread_ms: float = 0.0) -> bool:
    """Whether a phase lasted too briefly for its throughput to mean anything
    (:func:`min_phase_ms`)."""
    return duration_ms < min_phase_ms(resolution_ms, launch_spread_ms)


def too_short_throughput(
    measurements: Iterable[Measurement], gateways: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """workload → the gateways whose phases there were ``too short`` in at least half of their
    repetitions (the rule of :func:`is_tester_bound`). Only workloads with such a gateway."""
    return _in_half(measurements, gateways, lambda m: TOO_SHORT_FLAG in m.flags)


def _in_half(
    measurements: Iterable[Measurement],
    gateways: Iterable[str],
    holds: Callable[[Measurement], bool],
) -> dict[str, tuple[str, ...]]:
    """workload → the ``gateways`` for which ``holds`` in at least half of their repetitions
    there that sent requests (the rule of :func:`is_tester_bound`). Only workloads with
    such a gateway."""
    wanted = set(gateways)
    held: dict[tuple[str, str], int] = {}
    total: dict[tuple[str, str], int] = {}
    for m in measurements:
        if m.target not in wanted or m.requests <= 0:
            continue
        key = (m.workload, m.target)
        total[key] = total.get(key, 0) + 1
        if holds(m):
            held[key] = held.get(key, 0) + 1
    out: dict[str, list[str]] = {}
    for key, count in held.items():
        if is_tester_bound(count, total[key]):
            out.setdefault(key[0], []).append(key[1])
    return {w: tuple(sorted(ts)) for w, ts in sorted(out.items())}


def left_out_of(environment: Mapping[str, Any]) -> dict[str, str]:
    """Gateways the run left out before it started (``environment.left_out``, written by the
    render stage) → what they cannot do: ``cannot apply the plan's policies``."""
    data = environment.get("left_out")
    if not isinstance(data, Mapping):
        return {}
    return {str(g): str(why) for g, why in sorted(data.items())}


def failures_of(environment: Mapping[str, Any]) -> dict[str, str]:
    """Gateways that failed during the run (``environment.failures``, written by the runner)
    → when: ``during repetition 3``."""
    data = environment.get("failures")
    if not isinstance(data, Mapping):
        return {}
    out = {}
    for target, item in sorted(data.items()):
        rep = item.get("repetition") if isinstance(item, Mapping) else None
        out[str(target)] = f"during repetition {rep}" if rep else "during the run"
    return out


# -- a second engine --------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """One target and workload measured by the run's engine and by a second one (means over
    each engine's repetitions)."""

    target: str
    workload: str
    engine: str
    other: str
    throughput: float
    other_throughput: float
    p50: float
    other_p50: float
    repetitions: int
    other_repetitions: int
    tester_bound: bool = False
    """The run's engine was tester-bound on this cell (its number is the generator's)."""

    @property
    def throughput_gap_pct(self) -> float:
        return gap_pct(self.throughput, self.other_throughput)

    @property
    def p50_gap_pct(self) -> float:
        return gap_pct(self.p50, self.other_p50)

    @property
    def p50_tolerance_ms(self) -> float:
        return max(
            ENGINE_RESOLUTION_MS.get(self.engine, 1.0), ENGINE_RESOLUTION_MS.get(self.other, 1.0)
        )

    @property
    def throughput_agrees(self) -> bool:
        return self.throughput_gap_pct <= AGREEMENT_PCT

    @property
    def p50_agrees(self) -> bool:
        return (
            self.p50_gap_pct <= AGREEMENT_PCT
            or abs(self.p50 - self.other_p50) <= self.p50_tolerance_ms
        )

    @property
    def agrees(self) -> bool:
        return self.throughput_agrees and self.p50_agrees

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(
                self,
                "target workload engine other throughput other_throughput throughput_gap_pct throughput_agrees p50 other_p50 p50_gap_pct p50_agrees repetitions other_repetitions tester_bound agrees",
            ),
        }


def gap_pct(a: float, b: float) -> float:
    """How far apart two values are, as % of the larger (0 when both are 0)."""
    top = max(abs(a), abs(b))
    return 0.0 if top == 0 else 100.0 * abs(a - b) / top


def compare_engines(main: Iterable[Measurement], other: Iterable[Measurement]) -> list[Agreement]:
    """Pair the cells (target, workload) both engines measured; means over repetitions.
    Measurements where no request completed are left out."""

    def cells(ms: Iterable[Measurement]) -> dict[tuple[str, str], list[Measurement]]:
        out: dict[tuple[str, str], list[Measurement]] = {}
        for m in ms:
            if m.requests > 0:
                out.setdefault((m.target, m.workload), []).append(m)
        return out

    a, b = cells(main), cells(other)
    result = []
    for key in sorted(set(a) & set(b)):
        ma, mb = a[key], b[key]
        flagged = sum(1 for m in ma if "tester-bound" in m.flags)
        result.append(
            Agreement(
                target=key[0],
                workload=key[1],
                engine=ma[0].engine,
                other=mb[0].engine,
                throughput=statistics.fmean(m.throughput for m in ma),
                other_throughput=statistics.fmean(m.throughput for m in mb),
                p50=statistics.fmean(m.p50 for m in ma),
                other_p50=statistics.fmean(m.p50 for m in mb),
                repetitions=len(ma),
                other_repetitions=len(mb),
                tester_bound=is_tester_bound(flagged, len(ma)),
            )
        )
    return result


def cross_check_of(environment: Mapping[str, Any]) -> tuple[str, list[Measurement]] | None:
    """The second engine's name and measurements stored with a run (``environment.cross_check``)."""
    data = environment.get("cross_check")
    if not isinstance(data, Mapping):
        return None
    ms = [Measurement.from_dict(m) for m in data.get("measurements") or []]
    return str(data.get("name", "")), ms


def agreement_summary(agreements: Sequence[Agreement]) -> str:
    """One sentence for a report."""
    if not agreements:
        return "The second engine measured no cell that the run's engine measured."
    first = agreements[0]
    good = [a for a in agreements if a.agrees]
    text = (
        f"{first.other} and {first.engine} agree within {AGREEMENT_PCT:g} % on throughput and "
        f"p50 in {len(good)} of {len(agreements)} target × workload cell(s)"
    )
    bad = [a for a in agreements if not a.agrees]
    if not bad:
        return text + "."

    def failing_gap(a: Agreement) -> float:
        return max(
            0.0 if a.throughput_agrees else a.throughput_gap_pct,
            0.0 if a.p50_agrees else a.p50_gap_pct,
        )

    worst = max(bad, key=failing_gap)
    gaps = []
    if not worst.throughput_agrees:
        gaps.append(f"throughput {worst.throughput_gap_pct:.0f} %")
    if not worst.p50_agrees:
        gaps.append(f"p50 {worst.p50_gap_pct:.0f} %")
    bound = sum(1 for a in bad if a.tester_bound)
    text += (
        f"; they disagree on {len(bad)} (largest gap: {worst.target} · {worst.workload}, "
        f"{', '.join(gaps)})"
    )
    if bound:
        text += f", {bound} of them where {first.engine} was tester-bound"
    return text + "."


# -- reproducibility --------------------------------------------------------------------------


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation / mean, in %; None for fewer than 2 values or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return 100.0 * statistics.stdev(values) / abs(mean)


@dataclass(frozen=True)
class Variation:
    target: str
    workload: str
    metric: str
    values: tuple[float, ...]
    """The run-level mean of each run, in run order."""

    @property
    def cv_pct(self) -> float | None:
        return coefficient_of_variation(self.values)


@dataclass(frozen=True)
class Reproducibility:
    runs: int
    rankings: tuple[tuple[str, ...], ...]
    """Each run's gateways, best first."""
    variations: tuple[Variation, ...]

    @property
    def leaders(self) -> tuple[str, ...]:
        return tuple(r[0] for r in self.rankings if r)

    @property
    def rankings_differing_from_first(self) -> int:
        """Runs whose whole ranking differs from the first run's."""
        return sum(1 for r in self.rankings[1:] if r != self.rankings[0])

    @property
    def leader_changes(self) -> int:
        """Runs whose leader differs from the first run's."""
        return sum(1 for leader in self.leaders[1:] if leader != self.leaders[0])

    def pair_flips(self) -> tuple[int, int]:
        """(gateway pairs whose order differs between two runs, pairs compared), over every
        pair of runs."""
        flips = compared = 0
        for i in range(len(self.rankings)):
            for j in range(i + 1, len(self.rankings)):
                a, b = self.rankings[i], self.rankings[j]
                common = [g for g in a if g in b]
                for x in range(len(common)):
                    for y in range(x + 1, len(common)):
                        compared += 1
                        g, h = common[x], common[y]
                        if (a.index(g) < a.index(h)) != (b.index(g) < b.index(h)):
                            flips += 1
        return flips, compared

    def cv_by_metric(self) -> dict[str, tuple[float, float, float]]:
        """metric → (median, min, max) CV % over the cells that have one."""
        out: dict[str, tuple[float, float, float]] = {}
        for metric in METRICS:
            cvs = [
                cv
                for v in self.variations
                if v.metric == metric and (cv := v.cv_pct) is not None and math.isfinite(cv)
            ]
            if cvs:
                out[metric] = (statistics.median(cvs), min(cvs), max(cvs))
        return out


class _Cell(Protocol):
    @property
    def metrics(self) -> Mapping[str, Sample]: ...


class RunScores(Protocol):
    """What :func:`reproducibility` reads of each run: :class:`gatebench.core.aggregate.RunSummary`
    (named by shape, because aggregate imports this module)."""

    @property
    def cells(self) -> Mapping[tuple[str, str], _Cell]: ...

    @property
    def scores(self) -> ScoreResult: ...


def reproducibility(summaries: Sequence[RunScores]) -> Reproducibility:
    """How much the same plan's results move across runs: per (target, workload, metric) the
    run-level means of every run, and each run's ranking by global score."""
    rankings = tuple(tuple(g.target for g in s.scores.gateways) for s in summaries)
    keys = sorted({key for s in summaries for key in s.cells})
    variations = []
    for workload, target in keys:
        for metric in METRICS:
            values = []
            for s in summaries:
                cell = s.cells.get((workload, target))
                if cell is not None:
                    values.append(cell.metrics[metric].mean)
            if len(values) == len(summaries):
                variations.append(Variation(target, workload, metric, tuple(values)))
    return Reproducibility(len(summaries), rankings, tuple(variations))


__all__ = [
    "AGREEMENT_PCT",
    "BACKEND_FAILED_FLAG",
    "CEILING_TARGET",
    "CROSS_CHECK_REPETITIONS",
    "ENGINE_BUSY_FLAG",
    "ENGINE_BUSY_SHARE",
    "ENGINE_COLD_FLAG",
    "ENGINE_COLD_MIN_CPU_S",
    "ENGINE_COLD_RATIO",
    "ENGINE_RESOLUTION_MS",
    "FAILED_TARGET_FLAG",
    "LEFT_OUT_FLAGS",
    "TESTER_BOUND_SHARE",
    "TOO_SHORT_ERROR_PCT",
    "TOO_SHORT_FLAG",
    "Agreement",
    "Ceiling",
    "CeilingPoint",
    "Reproducibility",
    "Variation",
    "agreement_summary",
    "bound_by_tester",
    "ceiling_of",
    "coefficient_of_variation",
    "compare_engines",
    "cross_check_of",
    "demonstrated_ceiling",
    "engine_busy_throughput",
    "failures_of",
    "flag_engine_busy",
    "flag_engine_cold",
    "flag_near_ceiling",
    "gap_pct",
    "is_tester_bound",
    "left_out_of",
    "min_phase_ms",
    "near_ceiling",
    "reproducibility",
    "too_short",
    "too_short_throughput",
]
