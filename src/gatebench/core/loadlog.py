"""Our reader of the open-model load engine's records (``loadgen/``, ``gatebench-loadgen``), and
the merge of several testers' schedules.

The engine sends each arrival of a constant-rate phase when the schedule says it is due and
measures its latency from that due time (no coordinated omission), recording beside it how late
it really left (its schedule lag). This module turns its tab-separated records (the layout is in
``loadgen/main.go``) into what the rest of gatebench reads:

* a :class:`~gatebench.core.measure.PhaseResult` per phase, whose sample holds every request's
  latency from its intended start, in milliseconds with microsecond resolution, OK and KO as
  Gatling's are counted (an arrival refused because the target held ``max-in-flight`` requests
  is a KO entered at the request timeout, a lower bound, as wrk's timeouts are);
* a :class:`ScheduleSample` per phase: how well the engine kept the schedule (arrivals due,
  sent, dropped by the engine itself, each one's lag, the CPU the engine used, connections it
  opened) — what decides whether a probe measured the target or the tester
  (``gatebench.kinds.capacity``).

Pure: text in, data out (the cloud ingest and the local engine read the same way).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.core.stats import PhaseSample, nearest_rank

FORMAT = "gatebench-loadgen/1"


@dataclass
class ScheduleSample:
    """How the engine kept one phase's arrival schedule."""

    scheduled: int = 0
    """Arrivals the schedule had."""
    sent: int = 0
    """Arrivals handed to the network."""
    dropped: int = 0
    """Arrivals the engine could not send: its own failure (it fell behind by more than the
    request timeout, the system refused a socket), never the target's."""
    lags_ms: list[float] = field(default_factory=list)
    """Per sent or refused arrival: from its due time to the moment it was handed over."""
    from_send_ms: list[float] = field(default_factory=list)
    """Per sent or refused arrival: its latency without the lag (from the moment it left):
    what the target alone took, had the engine been on time."""
    engine_cpu_s: float = 0.0
    """CPU the engine used while dispatching the phase (user + system)."""
    window_s: float = 0.0
    """The schedule's length: what the CPU share is over."""
    cores: int = 1
    """Cores the engine could run on (its GOMAXPROCS)."""
    connections: int = 0
    """Connections opened during the phase (the rest rode the pool)."""
    drop_reasons: Counter[str] = field(default_factory=Counter)
    testers: int = 1
    busiest_cpu_pct: float | None = None
    """Several testers merged: the CPU share of the busiest one (the sum of their CPU seconds
    would hide one that ran out)."""

    @property
    def refused(self) -> int:
        """Arrivals not sent because the target already held the engine's in-flight limit."""
        return max(0, self.scheduled - self.sent - self.dropped)

    def lag_ms(self, pct: float) -> float:
        return nearest_rank(sorted(self.lags_ms), pct)

    @property
    def engine_cpu_pct(self) -> float:
        """The engine's CPU over the phase, % of the cores it could use (100: saturated); of
        the busiest tester when several shared the phase."""
        if self.busiest_cpu_pct is not None:
            return self.busiest_cpu_pct
        capacity = self.window_s * max(1, self.cores)
        return 100.0 * self.engine_cpu_s / capacity if capacity > 0 else 0.0


@dataclass(frozen=True)
class OpenPhase:
    """One phase as the engine recorded it."""

    result: PhaseResult
    schedule: ScheduleSample
    control_failure: str | None = None


@dataclass(frozen=True)
class LoadLog:
    start_epoch_ms: float
    cores: int
    phases: dict[int, OpenPhase]


def read_loadlog(path: str | os.PathLike[str]) -> LoadLog:
    """Every phase of a finished records file (RunError when it is not one)."""
    with open(path, encoding="utf-8") as fh:
        return parse_loadlog(fh, str(path))


def parse_loadlog(lines: Iterable[str], name: str = "records") -> LoadLog:
    it = iter(lines)
    header = next(it, "").rstrip("\n").split("\t")
    if header[0] != FORMAT or len(header) < 3:
        first = " ".join(header)[:60]
        raise RunError(f"{name}: not a {FORMAT} file (first line: {first!r})")
    start_epoch_ms = int(header[1]) / 1000.0
    cores = int(header[2])
    messages: dict[str, str] = {"0": ""}
    samples: dict[int, PhaseSample] = {}
    schedules: dict[int, ScheduleSample] = {}
    controls: dict[int, str] = {}
    ends: dict[int, tuple[int, int]] = {}
    for number, raw in enumerate(it, start=2):
        f = raw.rstrip("\n").split("\t")
        try:
            kind = f[0]
            if kind == "R":
                phase = int(f[1])
                intended_us, lag_us, latency_us = int(f[2]), int(f[3]), int(f[4])
                message = messages[f[6]]
                sample = samples.setdefault(phase, PhaseSample())
                _add(sample, intended_us, latency_us, message)
                schedule = schedules.setdefault(phase, ScheduleSample())
                schedule.lags_ms.append(lag_us / 1000.0)
                schedule.from_send_ms.append(max(0, latency_us - lag_us) / 1000.0)
            elif kind == "D":
                schedule = schedules.setdefault(int(f[1]), ScheduleSample())
                schedule.dropped += 1
                schedule.drop_reasons[messages[f[3]]] += 1
            elif kind == "M":
                messages[f[1]] = f[2]
            elif kind == "C":
                controls[int(f[1])] = f[2]
            elif kind == "E":
                phase = int(f[1])
                schedule = schedules.setdefault(phase, ScheduleSample())
                start_us, end_us = int(f[2]), int(f[3])
                schedule.scheduled = int(f[4])
                schedule.sent = int(f[5])
                schedule.engine_cpu_s = int(f[6]) / 1e6
                schedule.connections = int(f[7])
                schedule.window_s = (end_us - start_us) / 1e6
                schedule.cores = cores
                ends[phase] = (start_us, end_us)
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (IndexError, KeyError, ValueError) as exc:
            raise RunError(f"{name}:{number}: unreadable record ({exc}): {raw[:80]!r}") from None
    phases = {}
    for index, (start_us, end_us) in sorted(ends.items()):
        sample = samples.get(index, PhaseSample())
        last_end_ms = (sample.last_end or 0) / 1000.0
        phases[index] = OpenPhase(
            PhaseResult(
                index,
                _in_ms(sample),
                start_epoch_ms + start_us / 1000.0,
                start_epoch_ms + max(end_us / 1000.0, last_end_ms),
                None,
            ),
            schedules.get(index, ScheduleSample()),
            controls.get(index),
        )
    return LoadLog(start_epoch_ms, cores, phases)


def _add(sample: PhaseSample, intended_us: int, latency_us: int, message: str) -> None:
    """One request, its times kept in µs until the phase is complete (:func:`_in_ms`)."""
    sample.add_latency(latency_us / 1000.0)
    if message:
        sample.ko += 1
        sample.errors[message] += 1
    else:
        sample.ok += 1
    end_us = intended_us + latency_us
    if sample.first_start is None or intended_us < sample.first_start:
        sample.first_start = intended_us
    if sample.last_start is None or intended_us > sample.last_start:
        sample.last_start = intended_us
    if sample.last_end is None or end_us > sample.last_end:
        sample.last_end = end_us


def _in_ms(sample: PhaseSample) -> PhaseSample:
    """The sample's window in whole ms from the engine's start (what PhaseSample holds): the
    first intended start rounded down, the last end rounded up."""
    if sample.first_start is not None:
        sample.first_start = sample.first_start // 1000
    if sample.last_start is not None:
        sample.last_start = sample.last_start // 1000
    if sample.last_end is not None:
        sample.last_end = math.ceil(sample.last_end / 1000)
    return sample


def merge_schedules(parts: Sequence[ScheduleSample]) -> ScheduleSample:
    """Several testers' shares of one phase as one schedule: counts, connections and CPU
    seconds summed, every lag kept, and the busiest tester's CPU share."""
    out = ScheduleSample(testers=len(parts))
    for part in parts:
        out.scheduled += part.scheduled
        out.sent += part.sent
        out.dropped += part.dropped
        out.lags_ms.extend(part.lags_ms)
        out.from_send_ms.extend(part.from_send_ms)
        out.connections += part.connections
        out.engine_cpu_s += part.engine_cpu_s
        out.drop_reasons.update(part.drop_reasons)
        out.window_s = max(out.window_s, part.window_s)
        out.cores = max(out.cores, part.cores)
    out.busiest_cpu_pct = max((p.engine_cpu_pct for p in parts), default=0.0)
    return out


__all__ = [
    "FORMAT",
    "LoadLog",
    "OpenPhase",
    "ScheduleSample",
    "merge_schedules",
    "parse_loadlog",
    "read_loadlog",
]
