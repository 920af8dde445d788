"""A simulated target for the capacity search's tests: a queue with ``workers`` servers of a
fixed service time behind an engine that can dispatch at most ``engine_rate`` arrivals per
second, computed exactly (a discrete-event simulation, seeded), so every search over it is
deterministic. It writes the same records the real engine's reader produces (a PhaseResult and
a ScheduleSample), and the real metrics plugin reads them: only the load itself is simulated.

Arrival k of a probe is due at k / rate; the engine hands it over at
``max(due, previous + 1 / engine_rate)`` (dropped when that is more than the timeout late); it
starts on the first free worker (first come, first served) and takes ``service_ms`` times a
seeded jitter of ± ``jitter`` (a fraction). A probe's warm-up runs first at the same rate and its
queue carries into the measured window. Capacity: ``workers / service_ms`` per ms.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from gatebench.core.loadlog import ScheduleSample
from gatebench.core.measure import CpuUsage, PhaseResult
from gatebench.core.plan import Objective
from gatebench.core.resources import PhaseResources
from gatebench.core.stats import PhaseSample
from gatebench.kinds.capacity import ProbeMetrics, ProbeRequest, late_threshold_ms, read_probe


@dataclass
class SimulatedTarget:
    workers: int = 4
    service_ms: float = 10.0
    engine_rate: float = 1e9
    """The most arrivals per second the simulated engine can hand over."""
    jitter: float = 0.0
    seed: int = 1
    timeout_ms: float = 60_000.0
    cpu_ms_per_request: float = 0.05
    objective: Objective = field(default_factory=Objective)
    machine_saturated_above: float | None = None
    """Above this rate the CPU accounting reports the machine saturated by the engine."""
    others_pct: float = 0.0
    """CPU other processes used, % of the machine (more than 20 %: the probe is noisy)."""
    probes: list[ProbeRequest] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def capacity(self) -> float:
        return self.workers / self.service_ms * 1000.0

    def __call__(self, request: ProbeRequest) -> ProbeMetrics:
        self.probes.append(request)
        self.seconds += request.seconds
        rng = random.Random(self.seed * 1_000_003 + len(self.probes))
        total_s = request.warmup_s + request.duration_s
        n = round(request.rate * total_s)
        warm = round(request.rate * request.warmup_s)
        free = [0.0] * self.workers
        heapq.heapify(free)
        sample = PhaseSample()
        schedule = ScheduleSample(cores=1, window_s=request.duration_s)
        last_sent = -1e18
        gap = 1000.0 / self.engine_rate
        for k in range(n):
            due = 1000.0 * k / request.rate
            sent = max(due, last_sent + gap)
            lag = sent - due
            measured = k >= warm
            if measured:
                schedule.scheduled += 1
            if lag > self.timeout_ms:
                if measured:
                    schedule.dropped += 1
                    schedule.drop_reasons["the engine fell behind its schedule"] += 1
                continue
            last_sent = sent
            service = self.service_ms * (1.0 + self.jitter * (2.0 * rng.random() - 1.0))
            start = max(sent, heapq.heappop(free))
            end = start + service
            heapq.heappush(free, end)
            if not measured:
                continue
            schedule.sent += 1
            schedule.lags_ms.append(lag)
            schedule.from_send_ms.append(end - sent)
            sample.add_latency(end - due)
            sample.ok += 1
            first = int(due)
            sample.first_start = first if sample.first_start is None else sample.first_start
            sample.last_start = first
            sample.last_end = max(sample.last_end or 0, int(end) + 1)
        schedule.engine_cpu_s = min(1.0, request.rate / self.engine_rate) * request.duration_s
        saturated = (
            self.machine_saturated_above is not None and request.rate > self.machine_saturated_above
        )
        cpu = CpuUsage(
            busy_pct=95.0 if saturated else 40.0,
            tester_pct=60.0 if saturated else 5.0,
            target_pct=30.0,
            others_pct=self.others_pct,
            window_s=request.duration_s,
        )
        cost = PhaseResources(
            gateway_cpu_s=sample.ok * self.cpu_ms_per_request / 1000.0, gateway_rss_mb=12.0
        )
        result = PhaseResult(0, sample, 0.0, request.duration_s * 1000.0, cpu, cost)
        return read_probe(request, result, schedule, late_ms=late_threshold_ms(self.objective))
