"""From a load engine's records to the contract with scoring: one :class:`~gatebench.core.model.Measurement`
per measured phase.

Both paths turn raw records into measurements here, with the same code: the laptop as the
engine reports each phase (:func:`measurement_from`, with the CPU shares sampled around it),
the cloud ingest step from the tester's finished ``simulation.log`` (:func:`ingest_simlog`,
no CPU figures). It lives in the core, beside ``stats`` and ``simlog``, so a Cloud Function
that ingests a log loads neither the runner nor an engine.

The flags a measurement carries are decided here too: ``noisy`` and ``tester-bound`` from the
CPU shares (:class:`CpuUsage`), ``tester-bound`` from the engine's ceiling
(``gatebench.core.trust``), ``incomplete`` when fewer requests completed than the profile sends,
``wrong-answers`` when an answer was not the right answer to its request
(``gatebench.core.answers``), ``too-short`` when the phase lasted too briefly for its throughput
to mean anything against the engine's timer resolution and, for a burst, the spread of its
start times (``gatebench.core.trust.too_short``, docs/trust.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gatebench.core.answers import WRONG_ANSWERS_FLAG
from gatebench.core.capabilities import checks_answers
from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement
from gatebench.core.resources import CgroupSample, PhaseResources, cgroup_resources
from gatebench.core.simlog import RequestRecord, RunHeader, SimLogSource, read_simlog
from gatebench.core.stats import PhaseSample, phase_stats
from gatebench.core.trust import (
    ENGINE_BUSY_SHARE,
    ENGINE_COLD_RATIO,
    ENGINE_RESOLUTION_MS,
    TOO_SHORT_FLAG,
    too_short,
)
from gatebench.core.workload import Phase, phases_from_document

NOISY_OTHERS_PCT = 20.0
"""A phase is ``noisy`` when processes that are not part of the benchmark (not the load
generator, not the gateway, not the backend) used more than this share of the machine. On a
virtual machine, time the hypervisor gave our cores to another guest (``steal`` in
/proc/stat) counts as theirs: the benchmark's processes waited for it all the same."""
TESTER_BOUND_BUSY_PCT = 85.0
"""A phase is ``tester-bound`` when the machine was this busy (or more) and the load generator
used more CPU than the target (gateway + backend): the generator, not the gateway, was what
ran out of CPU first."""


FLAGS = {
    "noisy": "other processes used much of the CPU",
    "tester-bound": (
        "the load generator was the bottleneck: within 20 % of its ceiling, or out of CPU"
    ),
    "incomplete": "fewer requests than the workload defines",
    "too-short": (
        "the phase was too short for its throughput to mean anything: under 20 × the "
        "timer's resolution plus a burst's launch spread"
    ),
    "target-failed": "the phase overlaps its target's failure; left out of every figure",
    "backend-failed": (
        "the phase overlaps the failure of the backend gatebench started; left out of every figure"
    ),
    "wrong-answers": (
        "an answer was not the backend's answer to its request, whole; the gateway is not ranked"
    ),
    "engine-cold": (
        "among the run's first phases of a workload, the load engine spent at least "
        f"{ENGINE_COLD_RATIO:g} × the median CPU per request of its phases: a JIT engine still "
        "compiling, so the phase reads slower than the target is"
    ),
    "engine-busy": (
        f"the load engine's pinned cores were busy for at least {ENGINE_BUSY_SHARE:.0%} of the "
        "phase (with the backend beside it) while the gateway's were not: the engine set the "
        "throughput"
    ),
}
"""What each flag of a measurement means, as the report and the command line say it
(docs/engine.md's table says when each is set)."""


@dataclass(frozen=True)
class CpuUsage:
    """CPU shares over one window, % of the whole machine (``engines/cpu.py`` samples them)."""

    busy_pct: float
    tester_pct: float
    target_pct: float
    others_pct: float
    window_s: float

    def flags(self) -> tuple[str, ...]:
        out = []
        if self.others_pct > NOISY_OTHERS_PCT:
            out.append("noisy")
        if self.busy_pct >= TESTER_BOUND_BUSY_PCT and self.tester_pct > self.target_pct:
            out.append("tester-bound")
        return tuple(out)


@dataclass(frozen=True)
class PhaseResult:
    """One phase's raw records, complete: what an engine reports and ingest reads back."""

    phase: int
    """The phase's index in the schedule."""
    sample: PhaseSample
    start_ms: float
    """Epoch ms of the phase's first request start."""
    end_ms: float
    cpu: CpuUsage | None
    resources: PhaseResources | None = None
    """What the phase cost per role (gatebench.core.resources), when the engine sampled it."""


def measurement_from(
    run_id: str,
    phase: Phase,
    result: PhaseResult,
    *,
    engine: str = "gatling",
) -> Measurement:
    """The contract with scoring: one Measurement per measured phase. Its flags here are the
    CPU accounting's; the ceiling's ``tester-bound`` is added once every phase is in
    (``gatebench.core.trust.flag_near_ceiling``, called by the runner)."""
    s = phase_stats(result.sample, phase.refusals)
    flags: list[str] = []
    if result.cpu is not None:
        flags.extend(result.cpu.flags())
    expected = phase.injection.expected_requests
    if expected is not None and s.requests < expected:
        flags.append("incomplete")
    # a burst's requests are meant to start together: the spread of their starts is the
    # engine's launch time, inside the window; other profiles spread their starts on purpose
    spread = result.sample.start_spread_ms if phase.injection.kind == "at_once" else 0.0
    if s.requests > 0 and too_short(
        result.sample.duration_ms, ENGINE_RESOLUTION_MS.get(engine, 1.0), spread
    ):
        flags.append(TOO_SHORT_FLAG)
    if s.wrong:
        flags.append(WRONG_ANSWERS_FLAG)
    metrics: dict[str, Any] = {name: getattr(s, name) for name in METRICS}
    costs: dict[str, Any] = (result.resources or PhaseResources()).to_dict()
    return Measurement(
        run_id=run_id,
        target=phase.target,
        workload=phase.workload,
        repetition=phase.repetition,
        **s.outcomes(),
        **metrics,
        started_at=result.start_ms / 1000.0,
        duration_s=s.duration_s,
        engine=engine,
        flags=tuple(flags),
        other_cpu_pct=None if result.cpu is None else round(result.cpu.others_pct, 1),
        tester_cpu_pct=None if result.cpu is None else round(result.cpu.tester_pct, 1),
        **costs,
        answers_checked=phase.answers_checked and checks_answers(engine),
        rate_limited=s.rate_limited if phase.refusals else None,
    )


def phase_results(simlog: SimLogSource, phases: Mapping[str, Phase]) -> dict[str, PhaseResult]:
    """Every phase of ``phases`` (id → phase) that has requests in a finished
    ``simulation.log``, as a :class:`PhaseResult` (no CPU figures). The log is read in chunks
    and each phase keeps counts per latency (gatebench.core.stats): memory does not grow with
    the number of requests."""
    samples: dict[str, PhaseSample] = {}
    start_ms = 0
    for record in read_simlog(simlog):
        if type(record) is RequestRecord:
            name = record.name
            sample = samples.get(name)
            if sample is None:
                if name not in phases:
                    continue
                sample = samples[name] = PhaseSample()
            sample.add(record.start, record.end, record.ok, record.message)
        elif isinstance(record, RunHeader):
            start_ms = record.start_ms
    out = {}
    for pid, sample in samples.items():
        if sample.first_start is None:
            continue
        out[pid] = PhaseResult(
            phases[pid].index,
            sample,
            float(start_ms + sample.first_start),
            float(start_ms + (sample.last_end or sample.first_start)),
            None,
        )
    return out


def ingest_simlog(simlog: SimLogSource, document: dict[str, Any], run_id: str) -> list[Measurement]:
    """Measurements of the measured phases of a finished ``simulation.log`` written from
    ``document`` (the cloud path ingests the tester's log this way, streamed from the bucket;
    no CPU figures)."""
    phases = {p.id: p for p in phases_from_document(document)}
    results = phase_results(simlog, phases)
    return [
        measurement_from(run_id, phase, results[pid])
        for pid, phase in phases.items()
        if phase.measured and pid in results
    ]


def with_gateway_cgroup(
    measurements: Sequence[Measurement], samples: Mapping[str, Sequence[CgroupSample]]
) -> list[Measurement]:
    """The cloud path's measurements with their gateway's CPU seconds and peak memory, from
    the cgroup samples its VM took of the gateway's container (target → samples): each phase's
    window is its first request start to its last end. A phase the samples do not cover from
    its start to its end keeps None (the meter's last upload had not come, or it did not run):
    figures cut to the samples' span would understate it."""
    out = []
    for m in measurements:
        found = samples.get(m.target)
        start_ms = m.started_at * 1000.0
        end_ms = start_ms + m.duration_s * 1000.0
        if not found or not (
            min(s.wall_ms for s in found) <= start_ms and max(s.wall_ms for s in found) >= end_ms
        ):
            out.append(m)
            continue
        cost = cgroup_resources(found, start_ms, end_ms)
        if cost.gateway_cpu_s is None:
            out.append(m)
            continue
        out.append(replace(m, gateway_cpu_s=cost.gateway_cpu_s, gateway_rss_mb=cost.gateway_rss_mb))
    return out


__all__ = [
    "FLAGS",
    "NOISY_OTHERS_PCT",
    "TESTER_BOUND_BUSY_PCT",
    "CpuUsage",
    "PhaseResult",
    "ingest_simlog",
    "measurement_from",
    "phase_results",
    "with_gateway_cgroup",
]
