"""The metrics plugin: what one probe measured, read from its raw records.

A probe is one constant arrival rate offered to one target for a measured window (after its
warm-up). Its records are the engine's (``gatebench.core.loadlog``): every request's latency from
its intended start, and how the engine kept the schedule. :func:`read_probe` reduces them to
:class:`ProbeMetrics`, the only thing the scoring function and the step controller see.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gatebench.core.loadlog import ScheduleSample
from gatebench.core.measure import PhaseResult
from gatebench.core.plan import OBJECTIVE_LATENCY_METRICS
from gatebench.core.resources import requests_per_cpu_s
from gatebench.core.stats import LatencySummary, nearest_rank, phase_stats

ProbeKind = Literal["grow", "shrink", "bisect", "confirm"]


@dataclass(frozen=True)
class ProbeRequest:
    """What the step controller asks for: a rate, for how long, and why."""

    rate: float
    kind: ProbeKind
    warmup_s: float
    duration_s: float

    @property
    def seconds(self) -> float:
        return self.warmup_s + self.duration_s


def _latencies(s: LatencySummary) -> dict[str, float]:
    """A probe's figures (``ProbeMetrics.latency``'s keys: the latencies an objective may
    bound) from the one summary."""
    return {name: getattr(s, name) for name in OBJECTIVE_LATENCY_METRICS}


@dataclass(frozen=True)
class ProbeMetrics:
    """One probe's measured window, reduced."""

    offered_rate: float
    duration_s: float
    scheduled: int
    sent: int
    dropped: int
    """Arrivals the engine itself could not send (the tester's failure)."""
    refused: int
    """Arrivals not sent because the target held the engine's in-flight limit (KO)."""
    requests: int
    ok: int
    ko: int
    error_pct: float
    achieved_rate: float
    """Requests completed per second of the measured window."""
    latency: Mapping[str, float]
    """ms from each request's intended start: p50, p90, p95, p99, mean, max."""
    from_send: Mapping[str, float]
    """The same, from the moment each request really left (without the engine's lag)."""
    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    late_pct: float
    """Arrivals that left more than ``late_ms`` after they were due, % of those sent."""
    late_ms: float
    engine_cpu_pct: float
    """The engine's CPU, % of the cores it could use (the busiest tester's)."""
    connections: int
    testers: int = 1
    served_rate: float | None = None
    """What the target served per second since the warm-up began: the warm-up's arrivals and
    the window's OK responses over the time from the warm-up's start to the window's last
    response. A target offered more than it can carry serves its queue first come, first
    served at its capacity from the warm-up on, so this is its capacity then (the window's
    own rate undercounts it: the queue the warm-up built delays the window's responses).
    None in records from before it was kept."""
    gateway_cpu_s: float | None = None
    gateway_rss_mb: float | None = None
    machine_busy_pct: float | None = None
    """CPU used on the machine, % of all its cores (the local path's sampling)."""
    engine_machine_pct: float | None = None
    """The engine's CPU, % of the machine."""
    target_machine_pct: float | None = None
    """The target's CPU (gateway and backend), % of the machine."""
    others_cpu_pct: float | None = None
    """CPU of processes that are not part of the benchmark, % of the machine."""
    cpu_flags: tuple[str, ...] = ()
    """The CPU accounting's flags (``noisy``, ``tester-bound``: gatebench.core.measure.CpuUsage)."""
    errors: tuple[tuple[str, int], ...] = ()
    drop_reasons: tuple[tuple[str, int], ...] = field(default=())
    shared_core: str | None = None
    """Why the target may have shared a core with the load generator during the probe (the
    run's layout, gatebench.core.pinning); None: the layout kept them apart."""
    started_ms: float | None = None
    """Epoch ms of the measured window's start and end (the gateway's CPU over it can be
    read afterwards from samples taken elsewhere: the cloud path's cgroup meter)."""
    ended_ms: float | None = None
    wrong_answers: int = 0
    """Answers of the window that were not the backend's answer to their request, whole
    (gatebench.core.answers): a probe with any breaches its objective."""
    wrong_kinds: tuple[tuple[str, int], ...] = ()
    wrong_evidence: tuple[str, ...] = ()

    @property
    def req_per_cpu_s(self) -> float | None:
        """Requests per gateway CPU-second (gatebench.core.resources.requests_per_cpu_s)."""
        return requests_per_cpu_s(self.requests, self.gateway_cpu_s)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["latency"] = dict(self.latency)
        out["from_send"] = dict(self.from_send)
        out["errors"] = [list(e) for e in self.errors]
        out["drop_reasons"] = [list(e) for e in self.drop_reasons]
        out["cpu_flags"] = list(self.cpu_flags)
        out["wrong_kinds"] = [list(e) for e in self.wrong_kinds]
        out["wrong_evidence"] = list(self.wrong_evidence)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeMetrics:
        values = dict(data)
        values["errors"] = tuple((str(m), int(n)) for m, n in data.get("errors", ()))
        values["drop_reasons"] = tuple((str(m), int(n)) for m, n in data.get("drop_reasons", ()))
        values["cpu_flags"] = tuple(data.get("cpu_flags", ()))
        values["wrong_kinds"] = tuple((str(k), int(n)) for k, n in data.get("wrong_kinds", ()))
        values["wrong_evidence"] = tuple(str(e) for e in data.get("wrong_evidence", ()))
        return cls(**{k: v for k, v in values.items() if k in cls.__dataclass_fields__})


def _served(request: ProbeRequest, ok: int, window_s: float) -> float | None:
    """:attr:`ProbeMetrics.served_rate`: the warm-up's arrivals and the window's OK responses
    over the warm-up and the window's span (first start to last response)."""
    if ok == 0 or window_s <= 0:
        return None
    return (request.rate * request.warmup_s + ok) / (
        request.warmup_s + max(window_s, request.duration_s)
    )


def read_probe(
    request: ProbeRequest,
    result: PhaseResult,
    schedule: ScheduleSample,
    *,
    late_ms: float,
    shared_core: str | None = None,
) -> ProbeMetrics:
    """The metrics of a probe's measured phase (``result``: its requests; ``schedule``: how
    the engine kept it). Achieved rate is over the planned window: a target that answers
    after the window ends did not carry the rate in it."""
    s = phase_stats(result.sample)
    lags = sorted(schedule.lags_ms)
    late = sum(1 for lag in lags if lag > late_ms)
    cpu = result.cpu
    cost = result.resources
    return ProbeMetrics(
        offered_rate=request.rate,
        duration_s=request.duration_s,
        scheduled=schedule.scheduled,
        sent=schedule.sent,
        dropped=schedule.dropped,
        refused=schedule.refused,
        **s.outcomes(),
        error_pct=s.error_pct,
        achieved_rate=s.ok / max(request.duration_s, s.duration_s) if s.requests else 0.0,
        served_rate=_served(request, s.ok, s.duration_s),
        latency=_latencies(s),
        from_send=_latencies(
            LatencySummary.of(schedule.from_send_ms) if schedule.from_send_ms else s
        ),
        lag_p50_ms=nearest_rank(lags, 50),
        lag_p99_ms=nearest_rank(lags, 99),
        lag_max_ms=lags[-1] if lags else 0.0,
        late_pct=100.0 * late / len(lags) if lags else 0.0,
        late_ms=late_ms,
        engine_cpu_pct=schedule.engine_cpu_pct,
        connections=schedule.connections,
        testers=schedule.testers,
        gateway_cpu_s=None if cost is None else cost.gateway_cpu_s,
        gateway_rss_mb=None if cost is None else cost.gateway_rss_mb,
        machine_busy_pct=None if cpu is None else round(cpu.busy_pct, 1),
        engine_machine_pct=None if cpu is None else round(cpu.tester_pct, 1),
        target_machine_pct=None if cpu is None else round(cpu.target_pct, 1),
        others_cpu_pct=None if cpu is None else round(cpu.others_pct, 1),
        cpu_flags=() if cpu is None else cpu.flags(),
        drop_reasons=tuple(sorted(schedule.drop_reasons.items(), key=lambda kv: -kv[1]))[:5],
        shared_core=shared_core,
        started_ms=result.start_ms,
        ended_ms=result.end_ms,
    )


__all__ = ["ProbeKind", "ProbeMetrics", "ProbeRequest", "read_probe"]
