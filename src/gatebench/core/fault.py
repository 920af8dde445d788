"""What a killed replica did to one gateway's phase: the errors and the latency spike it
caused, and how long the gateway went on sending to the dead replica.

Pure: the requests of the phase (start, end, ok: epoch seconds), the moment of the kill, and,
where the loopback observer saw them (``gatebench.local._wire``), the connection attempts to the
dead replica's port. docs/input.md ("A replica fails") says what each figure means:

- ``requests_after``: the requests the kill could touch: those still in flight at the kill
  (on a connection to the dead replica, they are the first to fail) and those that started
  after it, up to the phase's end; a request that ended before the kill is not one of them
  (the clocks of the engine and of the killer may disagree by :data:`CLOCK_SKEW_S`: a request
  that ended that little before the recorded kill counts too);
- ``errors``: those of them that failed (the client saw the failure);
- ``spike_ms``: the slowest of them that was in flight at the kill or started in the
  :data:`SPIKE_WINDOW_S` after it, minus the p99 of the requests that succeeded and ended
  before it (0 when none was slower);
- ``disturbed_s``: from the kill to the end of the last of them that failed or took more than
  twice that p99 (at least :data:`SLOW_MARGIN_MS` more): how long clients noticed;
- ``stopped_after_s``: from the kill to the last moment the gateway still sent requests to
  the dead replica: the end of the last :data:`BUCKET_S` bucket with more connection attempts
  than health checks make (more than :data:`PROBE_ATTEMPTS` per bucket, and more than the
  busiest bucket of the last third of the phase after the kill, when only probes remain: every
  gateway of a local run probes the same replicas, and the loopback shows their attempts
  alike; without such a bucket, the last attempt of the first one: a retry right at the kill),
  or the last failed request, whichever is later. ``probe_rate`` is the rate of attempts in
  that last third: the health checks of every gateway running, not of the one under test
  alone. Health checks go on probing a dead replica (``probe_rate`` says how
  often); that is not traffic.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from gatebench.core.model import BASELINE

RESET_WAIT_S = 5.0
"""With a fault, how long a backend reset before a phase may wait for the replica that is
started again as the phase before it ends (the local and the cloud path alike)."""
CLOCK_SKEW_S = 0.005
"""How far the kill's recorded time and the load engine's request times may disagree: the
engine's clock is read in whole milliseconds, the kill's after the signal is sent (and, in the
cloud, on the backend VM, whose clock is synchronised with the testers'). A request that ended
this little before the recorded kill is counted as in flight at it."""
SPIKE_WINDOW_S = 5.0
SLOW_MARGIN_MS = 5.0
BUCKET_S = 0.25
PROBE_ATTEMPTS = 2
"""Connection attempts per bucket that health checks alone can make (an active check every
second, a retry or a second worker); more is traffic."""


@dataclass(frozen=True)
class Request:
    start: float
    end: float
    ok: bool


@dataclass(frozen=True)
class FaultImpact:
    killed_at: float
    """Epoch seconds of the kill."""
    requests_after: int
    errors: int
    error_pct: float
    p99_before_ms: float | None
    spike_ms: float
    disturbed_s: float
    stopped_after_s: float | None
    """None when neither attempts nor errors say (nothing observed)."""
    attempts: int | None
    """Connection attempts to the dead replica after the kill (None: not observed)."""
    probe_rate: float | None
    """Attempts per second after the gateway stopped sending traffic (its health checks)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _p99(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def fault_impact(
    requests: Sequence[Request],
    killed_at: float,
    phase_end: float,
    attempts: Sequence[float] | None = None,
    probers: int = 1,
) -> FaultImpact:
    """The impact of a kill at ``killed_at`` on a phase ending at ``phase_end``; ``attempts``:
    times of connection attempts to the dead replica (None: not observed); ``probers``: the
    gateways whose health checks reach it meanwhile (every gateway of the run is up at once).

    The requests the kill could touch are those still in flight at it (ended no earlier than
    :data:`CLOCK_SKEW_S` before it) or started after it, up to ``phase_end``: the errors,
    the spike and the disturbed time are read from them; the p99 before is that of the
    requests that succeeded and ended before them."""
    hit_from = killed_at - CLOCK_SKEW_S
    before = [(r.end - r.start) * 1000 for r in requests if r.end < hit_from and r.ok]
    after = [r for r in requests if r.end >= hit_from and r.start <= phase_end]
    errors = [r for r in after if not r.ok]
    p99 = _p99(before)
    window = [r for r in after if r.start <= killed_at + SPIKE_WINDOW_S]
    slowest = max(((r.end - r.start) * 1000 for r in window), default=0.0)
    spike = max(0.0, slowest - p99) if p99 is not None else 0.0
    slow_ms = max(2 * p99, p99 + SLOW_MARGIN_MS) if p99 is not None else math.inf
    disturbed = [r for r in after if not r.ok or (r.end - r.start) * 1000 > slow_ms]
    disturbed_s = max((max(0.0, r.end - killed_at) for r in disturbed), default=0.0)
    stopped: float | None = max((max(0.0, r.end - killed_at) for r in errors), default=None)
    probe_rate = None
    seen = None
    if attempts is not None:
        after_kill = sorted(t for t in attempts if killed_at <= t <= phase_end)
        seen = len(after_kill)
        buckets: dict[int, int] = {}
        for t in after_kill:
            n = int((t - killed_at) // BUCKET_S)
            buckets[n] = buckets.get(n, 0) + 1
        # Health checks are the background: every gateway of the run probes the same
        # replicas. Their rate is read from the last third of the window (the gateway under
        # test has long stopped sending by then); a bucket is traffic only well above it. A
        # tail busier than every gateway's checks together can be is not a background: the
        # gateway is still sending at the phase's end (Envoy once its passive ejection ran
        # out), and it is not taken for one.
        span_s = phase_end - killed_at
        first_tail = math.ceil((2 * span_s / 3) / BUCKET_S)
        tail_counts = [c for n, c in buckets.items() if n >= first_tail]
        checks = PROBE_ATTEMPTS * max(1, probers)
        threshold = max(PROBE_ATTEMPTS, min(max(tail_counts, default=0), checks))
        busy = [n for n, count in buckets.items() if count > threshold]
        if busy:
            traffic_end = (max(busy) + 1) * BUCKET_S
        else:  # a retry or two right at the kill, then nothing but health checks
            traffic_end = max(
                (t - killed_at for t in after_kill if t - killed_at < BUCKET_S), default=0.0
            )
        stopped = max(stopped or 0.0, traffic_end)
        tail_span = span_s - first_tail * BUCKET_S
        probe_rate = sum(tail_counts) / tail_span if tail_span > 0 else None
    return FaultImpact(
        killed_at=killed_at,
        requests_after=len(after),
        errors=len(errors),
        error_pct=100.0 * len(errors) / len(after) if after else 0.0,
        p99_before_ms=p99,
        spike_ms=spike,
        disturbed_s=disturbed_s,
        stopped_after_s=stopped,
        attempts=seen,
        probe_rate=probe_rate,
    )


class _Injection(Protocol):
    @property
    def duration(self) -> float | None: ...


class _Phase(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def target(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def measured(self) -> bool: ...
    @property
    def injection(self) -> _Injection: ...


class _Fault(Protocol):
    @property
    def workload(self) -> str: ...
    def offset(self, phase_duration_s: float | None) -> float | None: ...


def fault_offsets(
    fault: _Fault, phases: Iterable[_Phase], baseline: str = BASELINE
) -> dict[int, float]:
    """The phases that carry the plan's fault and when: phase index → seconds from the phase's
    start to the kill. Every measured phase of the fault's workload through a gateway (never
    the baseline's: it has no pool; never the load engine's ceiling's: it measures the engine,
    and a kill there ejected the replica from every gateway's pool just before their phases);
    one place decides it, for the local path (backends._fault) and the cloud's (the render
    step hands it to the tester)."""
    from gatebench.core.trust import CEILING_TARGET

    out: dict[int, float] = {}
    for phase in phases:
        if (
            phase.measured
            and phase.workload == fault.workload
            and phase.target not in (baseline, CEILING_TARGET)
        ):
            out[phase.index] = fault.offset(phase.injection.duration) or 0.0
    return out


def requests_by_phase(
    records: Iterable[object], phases: Container[str] | None = None
) -> dict[str, list[Request]]:
    """The requests of each phase (by record name, ``p0007``) of a Gatling log's records
    (``gatebench.core.simlog.read_simlog``), in epoch seconds; only those of ``phases`` when
    given (the others' records are passed over, never kept)."""
    from gatebench.core.simlog import RequestRecord, RunHeader

    start_ms = 0
    out: dict[str, list[Request]] = {}
    for record in records:
        if isinstance(record, RunHeader):
            start_ms = record.start_ms
        elif isinstance(record, RequestRecord) and (
            record.name in phases if phases is not None else record.name.startswith("p")
        ):
            out.setdefault(record.name, []).append(
                Request(
                    (start_ms + record.start) / 1000.0,
                    (start_ms + record.end) / 1000.0,
                    record.ok,
                )
            )
    return out


__all__ = [
    "BUCKET_S",
    "CLOCK_SKEW_S",
    "PROBE_ATTEMPTS",
    "RESET_WAIT_S",
    "SLOW_MARGIN_MS",
    "SPIKE_WINDOW_S",
    "FaultImpact",
    "Request",
    "fault_impact",
    "fault_offsets",
    "requests_by_phase",
]
