"""Several load generators per phase, one exact result: the split and the merge.

One tester (a Gatling JVM, a tester VM) can be the bottleneck of a fast gateway. Gatling's
open-source way to scale out is several injectors running the same simulation, each writing its
own log, merged afterwards. Both halves are pure and live here, in the core:

* :func:`split_document` divides a workload document across N testers, deterministically.
  The rule (docs/engine.md, "Several testers"): a count ``q`` (users, requests, the requests a
  constant rate sends) is split as ``q // N`` each, and the first ``q % N`` testers get one
  more; so tester 0 always has the largest share and runs every phase anyone runs, and the
  shares add up to the original exactly. A constant rate is split through its request count
  (tester i sends ``count_i`` over the same duration, rate ``count_i / duration``); a recorded
  arrival curve step by step. A closed
  phase with a request budget splits its users first, then its requests over the testers that
  got users. A ``sequential`` phase (one user) cannot be split: tester 0 runs it. A tester
  whose share is zero leaves the phase out. Only tester 0 runs the controls (the backend
  reset) before a phase. Counters stay disjoint: tester i counts from ``start + i*step`` in
  steps of ``N*step``, and a weighted list's draws too (tester i takes draws ``i``, ``i + N``,
  ...); so do simulated users (``user_base``, ``user_stride``: which token of a
  pool of subjects each user carries). Tester 0's document equals the original when N is 1.
* :func:`merge_phase` merges one phase's raw records from every tester: percentiles over every
  record (nothing averaged), throughput over the union of the testers' windows. It records
  each tester's count, window and CPU, the start skew between testers, flags the phase
  ``tester-bound`` when any tester was, and ``partial`` (with the reason) when a tester that
  had a share of the phase failed: never a silently lower throughput.
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.measure import CpuUsage, PhaseResult, measurement_from, phase_results
from gatebench.core.model import Measurement
from gatebench.core.plan import MAX_TESTERS, Injection
from gatebench.core.records import fields
from gatebench.core.simlog import SimLogSource
from gatebench.core.stats import PhaseSample
from gatebench.core.workload import Phase, injection_from_json, injection_json, phases_from_document

PARTIAL_FLAG = "partial"


def split_counts(total: int, testers: int) -> tuple[int, ...]:
    """``total`` over ``testers``: ``total // testers`` each, one more for the first
    ``total % testers`` testers."""
    if testers < 1:
        raise RunError(f"testers: expected at least 1, got {testers}")
    base, extra = divmod(total, testers)
    return tuple(base + (1 if i < extra else 0) for i in range(testers))


def split_injection(inj: Injection, testers: int) -> tuple[Injection | None, ...]:
    """Each tester's share of one phase's injection (None: that tester sends nothing)."""
    if testers == 1:
        return (inj,)
    empty: list[Injection | None] = [None] * testers
    if inj.kind == "sequential":
        return (inj, *empty[1:])
    if inj.kind in ("at_once", "ramp"):
        return tuple(
            Injection(inj.kind, users=u, duration=inj.duration) if u else None
            for u in split_counts(inj.users or 0, testers)
        )
    if inj.kind == "arrivals":
        # each step split as any count: every tester replays the curve within one request
        # per step, and tester 0, with the largest share, runs the phase whenever anyone does
        steps = [split_counts(count, testers) for count in inj.counts]
        shares = [tuple(split[t] for split in steps) for t in range(testers)]
        return tuple(replace(inj, counts=counts) if sum(counts) else None for counts in shares)
    if inj.kind == "constant_rate":
        assert inj.duration is not None and inj.rate is not None
        counts = split_counts(round(inj.rate * inj.duration), testers)
        return tuple(
            Injection("constant_rate", rate=c / inj.duration, duration=inj.duration) if c else None
            for c in counts
        )
    # concurrent: users first, then the request budget over the testers that got users
    users = split_counts(inj.users or 1, testers)
    with_users = sum(1 for u in users if u)
    requests = (
        split_counts(inj.requests, with_users) + (0,) * (testers - with_users)
        if inj.requests is not None
        else (None,) * testers
    )
    out: list[Injection | None] = []
    for u, r in zip(users, requests, strict=True):
        if not u or r == 0:
            out.append(None)
            continue
        out.append(Injection("concurrent", users=u, duration=inj.duration, requests=r))
    return tuple(out)


def _split_params(params: dict[str, Any], tester: int, testers: int) -> dict[str, Any]:
    out = {}
    for name, gen in params.items():
        if gen.get("kind") == "counter" and testers > 1:
            step = int(gen.get("step", 1))
            gen = dict(gen, start=int(gen.get("start", 1)) + tester * step, step=step * testers)
        elif gen.get("kind") == "weighted" and testers > 1:
            # tester t takes draws t, t + N, ... of the phase's one sequence
            stride = int(gen.get("stride", 1))
            gen = dict(
                gen, offset=int(gen.get("offset", 0)) + tester * stride, stride=stride * testers
            )
        out[name] = gen
    return out


def _user_numbers(share: Sequence[Injection | None], tester: int, testers: int) -> dict[str, int]:
    """Where a tester's users sit among the phase's (what picks a user's token from the pool
    of subjects: gatebench.core.tokens.subject_of_user): a closed phase's users follow the earlier
    testers' users; an open phase's arrivals interleave (tester t has t, t + N, ...)."""
    inj = share[tester]
    if inj is not None and inj.kind in ("ramp", "constant_rate", "arrivals"):
        return {"user_base": tester, "user_stride": testers}
    before = sum((s.users or 1) for s in share[:tester] if s is not None)
    return {"user_base": before, "user_stride": 1}


def split_document(document: dict[str, Any], testers: int) -> list[dict[str, Any]]:
    """One workload document per tester (the rule is in the module docstring)."""
    if not 1 <= testers <= MAX_TESTERS:
        raise RunError(f"testers: expected 1 to {MAX_TESTERS}, got {testers}")
    if testers == 1:
        return [copy.deepcopy(document)]
    shares = [
        split_injection(injection_from_json(p["injection"]), testers) for p in document["phases"]
    ]
    out = []
    for t in range(testers):
        phases = []
        for p, share in zip(document["phases"], shares, strict=True):
            inj = share[t]
            if inj is None:
                continue
            phases.append(
                dict(
                    copy.deepcopy(p),
                    injection=injection_json(inj),
                    before=copy.deepcopy(p["before"]) if t == 0 else [],
                    seed=(int(p["seed"]) + t * 7_919) % (2**62),
                    params=_split_params(p["params"], t, testers),
                    **_user_numbers(share, t, testers),
                )
            )
        out.append(dict(copy.deepcopy(document), phases=phases))
    return out


@dataclass(frozen=True)
class PhasePart:
    """What one tester reported for one phase: its records, or why it has none."""

    tester: int
    result: PhaseResult | None
    failure: str | None = None


@dataclass(frozen=True)
class PhaseShare:
    tester: int
    requests: int
    start_ms: float | None
    end_ms: float | None
    cpu_pct: float | None
    failure: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return fields(self, "tester requests start_ms end_ms cpu_pct failure")


@dataclass(frozen=True)
class MergedPhase:
    result: PhaseResult
    """Every tester's records in one sample; its window is the union of theirs."""
    shares: tuple[PhaseShare, ...]
    start_skew_ms: float
    flags: tuple[str, ...] = ()
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.result.phase,
            "testers": [s.to_dict() for s in self.shares],
            "start_skew_ms": self.start_skew_ms,
            "flags": list(self.flags),
            "reasons": list(self.reasons),
        }


def union_ms(windows: Sequence[tuple[float, float]]) -> float:
    """The length of the union of [start, end] windows (overlaps counted once)."""
    total = 0.0
    current: tuple[float, float] | None = None
    for start, end in sorted(windows):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
    if current is not None:
        total += current[1] - current[0]
    return total


def _merged_cpu(cpus: Sequence[CpuUsage]) -> CpuUsage | None:
    """Testers on one machine each count the others as "others": take them back out."""
    if not cpus:
        return None
    testers = sum(c.tester_pct for c in cpus)
    others = min(max(0.0, c.others_pct - (testers - c.tester_pct)) for c in cpus)
    return CpuUsage(
        busy_pct=max(c.busy_pct for c in cpus),
        tester_pct=testers,
        target_pct=max(c.target_pct for c in cpus),
        others_pct=others,
        window_s=max(c.window_s for c in cpus),
    )


def merge_phase(phase: int, parts: Sequence[PhasePart]) -> MergedPhase:
    """One phase's result from every tester that had a share of it (see the module docstring)."""
    sample = PhaseSample()
    errors: Counter[str] = Counter()
    windows: list[tuple[float, float]] = []
    last_starts: list[float] = []
    shares: list[PhaseShare] = []
    cpus: list[CpuUsage] = []
    flags: list[str] = []
    reasons: list[str] = []
    for part in sorted(parts, key=lambda p: p.tester):
        r = part.result
        if r is None or part.failure is not None:
            reasons.append(f"tester {part.tester} failed: {part.failure or 'no records'}")
        if r is None:
            shares.append(PhaseShare(part.tester, 0, None, None, None, part.failure))
            continue
        s = r.sample
        sample.merge_latencies(s)
        sample.ok += s.ok
        sample.ko += s.ko
        sample.unanswered += s.unanswered
        sample.merge_wrong(s)
        errors.update(s.errors)
        if s.requests:
            windows.append((r.start_ms, r.end_ms))
            last_starts.append(r.start_ms + s.start_spread_ms)
        if r.cpu is not None:
            cpus.append(r.cpu)
            if "tester-bound" in r.cpu.flags():
                flags.append("tester-bound")
        shares.append(
            PhaseShare(
                part.tester,
                s.requests,
                r.start_ms if s.requests else None,
                r.end_ms if s.requests else None,
                None if r.cpu is None else round(r.cpu.tester_pct, 1),
                part.failure,
            )
        )
    sample.errors = errors
    if windows:
        sample.first_start = 0  # the merged sample counts from the earliest start
        sample.last_start = round(max(last_starts) - min(w[0] for w in windows))
        sample.last_end = max(1, math.ceil(union_ms(windows)))
    start_ms = min((w[0] for w in windows), default=0.0)
    end_ms = max((w[1] for w in windows), default=0.0)
    starts = [w[0] for w in windows]
    cpu = _merged_cpu(cpus)
    if cpu is not None and "noisy" in cpu.flags():
        flags.append("noisy")
    if reasons:
        flags.append(PARTIAL_FLAG)
    return MergedPhase(
        PhaseResult(phase, sample, start_ms, end_ms, cpu),
        tuple(shares),
        (max(starts) - min(starts)) if starts else 0.0,
        tuple(dict.fromkeys(flags)),
        tuple(reasons),
    )


def merged_measurement(
    run_id: str, phase: Phase, merged: MergedPhase, *, engine: str = "gatling"
) -> Measurement:
    """The Measurement of a merged phase: ``measurement_from`` plus the merge's flags."""
    m = measurement_from(run_id, phase, merged.result, engine=engine)
    flags = tuple(dict.fromkeys((*m.flags, *merged.flags)))
    return m if flags == m.flags else _with_flags(m, flags)


def _with_flags(m: Measurement, flags: tuple[str, ...]) -> Measurement:
    from dataclasses import replace

    return replace(m, flags=flags)


def _log_results(path: SimLogSource, phases: dict[str, Phase]) -> dict[int, PhaseResult]:
    return {phases[pid].index: r for pid, r in phase_results(path, phases).items()}


def ingest_tester_logs(
    logs: Sequence[SimLogSource | None],
    document: dict[str, Any],
    run_id: str,
    failures: Sequence[str | None] = (),
) -> tuple[list[Measurement], list[MergedPhase]]:
    """Measurements of the measured phases from every tester's ``simulation.log`` (None: that
    tester left no log), for ``document`` split across ``len(logs)`` testers. ``failures[i]``
    is why tester i failed (None: it did not). A phase a failed tester had a share of is
    ``partial``; a failed tester's records that did reach its log still count."""
    testers = len(logs)
    phases = {p.id: p for p in phases_from_document(document)}
    by_index = {p.index: p for p in phases.values()}
    documents = split_document(document, testers)
    results = [_log_results(path, phases) if path is not None else {} for path in logs]
    reasons = [(list(failures) + [None] * testers)[i] for i in range(testers)]
    for i, path in enumerate(logs):
        if path is None and reasons[i] is None:
            reasons[i] = "no simulation.log"
    measurements: list[Measurement] = []
    merged_phases: list[MergedPhase] = []
    for index, phase in sorted(by_index.items()):
        if not phase.measured:
            continue
        parts = []
        for t in range(testers):
            has_share = any(int(p["index"]) == index for p in documents[t]["phases"])
            if not has_share:
                continue
            result = results[t].get(index)
            failure = reasons[t]
            if failure is not None and result is not None:
                share = next(p for p in documents[t]["phases"] if int(p["index"]) == index)
                expected = injection_from_json(share["injection"]).expected_requests
                last = max(results[t])
                done = result.sample.requests >= expected if expected is not None else index < last
                failure = None if done else failure
            parts.append(PhasePart(t, result, failure))
        merged = merge_phase(index, parts)
        if merged.result.sample.requests == 0:
            continue
        merged_phases.append(merged)
        measurements.append(merged_measurement(run_id, phase, merged))
    return measurements, merged_phases


__all__ = [
    "MAX_TESTERS",
    "PARTIAL_FLAG",
    "MergedPhase",
    "PhasePart",
    "PhaseShare",
    "ingest_tester_logs",
    "merge_phase",
    "merged_measurement",
    "split_counts",
    "split_document",
    "split_injection",
    "union_ms",
]
