"""What a phase cost: CPU seconds and peak resident memory of the gateway, the backend and the
load engine, from samples taken while it ran.

Users choose gateways by what they cost too (Kong and KrakenD publish per-core figures), so
every measured phase carries, beside its latencies, each role's CPU time (user + system) over
the phase's window and the highest resident memory seen during it. Two sources give the same
fields (:class:`PhaseResources`):

- on a laptop, the engine samples every process of each role's process groups with psutil
  (``gatebench.local.engines.cpu``): CPU time is cumulative, so the window's CPU is the difference
  of the samples interpolated to the window's start and end; memory is a level, so its peak
  is the highest RSS sum among the samples taken during the window and the one on each side
  of it (a phase shorter than the sampling interval still gets the samples around it);
- on the cloud path, the gateway VM samples its container's cgroup v2 files (``cpu.stat``
  ``usage_usec``, ``memory.current``, ``memory.peak``, ``memory.stat`` ``inactive_file``) and
  :func:`cgroup_window` turns those samples into the same fields for each phase window.

RSS summed over a process tree counts a page shared by two processes (an nginx master and its
workers share their code) once per process, as ``ps`` does: an upper bound of what the tree
holds. A cgroup's memory is the kernel's own count, each page once; its working set (current
minus inactive file cache, as ``docker stats`` shows) is what is reported.

Pure: no process, file or clock is read here.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

MB = 1024 * 1024
MIN_CPU_S = 0.1
"""Below this much gateway CPU in a phase, requests per CPU-second is not computed: the
kernel counts CPU time in 10 ms ticks, so a smaller figure would carry an error above 10 %."""
SAMPLE_INTERVAL_S = 0.2
"""How often the local sampler reads each role's processes (the engines' poll interval):
walking every process costs about a hundredth of a core at this rate, and a gateway's
memory grows with the connections and buffers of a phase, which last the whole phase, so
any phase longer than half a second has samples inside it."""


@dataclass(frozen=True)
class PhaseResources:
    """Per role: CPU seconds (user + system) over the phase and peak resident MB during it;
    None where that role was not measured (the baseline has no gateway; a user's own backend
    is not ours to sample)."""

    gateway_cpu_s: float | None = None
    gateway_rss_mb: float | None = None
    backend_cpu_s: float | None = None
    backend_rss_mb: float | None = None
    engine_cpu_s: float | None = None
    engine_rss_mb: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def requests_per_cpu_s(requests: int, gateway_cpu_s: float | None) -> float | None:
    """Requests served per second of gateway CPU: the req/s one fully busy core would give.
    None without a gateway figure or with less than :data:`MIN_CPU_S` of it."""
    if gateway_cpu_s is None or gateway_cpu_s < MIN_CPU_S or requests <= 0:
        return None
    return requests / gateway_cpu_s


def pooled_requests_per_cpu_s(
    phases: Iterable[tuple[int, float | None]],
) -> tuple[float, float, int] | None:
    """Requests per gateway CPU-second over several phases (a cell's repetitions), from
    (requests, gateway CPU seconds) each: all their requests over all their CPU, as
    ``(ratio, stddev, n)`` with ``stddev / √n`` the ratio's standard error (the ratio
    estimator's, ``√(Σ (r − R·c)² / (n − 1)) / mean c / √n``), so a Student-t interval of the
    mean reads it as one. A phase without a gateway figure counts in neither sum; a phase under
    :data:`MIN_CPU_S` counts in both (the tick's error is on the total, which must reach
    :data:`MIN_CPU_S`). None when the total does not.

    Why not the mean of the phases' own ratios: a phase under :data:`MIN_CPU_S` has none, and
    dropping those keeps only a gateway's costliest phases, the cheaper the gateway the more
    of them (7 of 10 phases at 0.05 CPU-s and 3 at 0.2 read 5,000 req/CPU-s where the run
    served 10,526)."""
    measured = [(requests, cpu) for requests, cpu in phases if cpu is not None and requests > 0]
    total_cpu = sum(cpu for _, cpu in measured)
    if not measured or total_cpu < MIN_CPU_S:
        return None
    ratio = sum(requests for requests, _ in measured) / total_cpu
    n = len(measured)
    if n < 2:
        return ratio, 0.0, n
    residual = sum((requests - ratio * cpu) ** 2 for requests, cpu in measured) / (n - 1)
    return ratio, residual**0.5 / (total_cpu / n), n


# -- samples of one role over time: the local sampler's and the cgroup collector's ------------


@dataclass(frozen=True)
class UsageSample:
    """One reading: when (epoch ms), cumulative CPU seconds, resident bytes at that moment."""

    wall_ms: float
    cpu_s: float
    rss_bytes: float


def window_usage(
    samples: Sequence[UsageSample], start_ms: float, end_ms: float
) -> tuple[float, float] | None:
    """(CPU seconds, peak resident MB) over [start_ms, end_ms] from time-ordered samples, or
    None with fewer than two samples or a window outside the time they span.

    CPU is cumulative: interpolated linearly to the window's start and end (a window reaching
    past the first or last sample is cut to it). Memory is a level: the highest of the samples
    inside the window and the nearest one on each side of it."""
    if len(samples) < 2 or end_ms < start_ms:
        return None
    times = [s.wall_ms for s in samples]
    if end_ms < times[0] or start_ms > times[-1]:
        return None
    start_ms, end_ms = max(start_ms, times[0]), min(end_ms, times[-1])

    def cpu_at(t: float) -> float:
        i = bisect.bisect_left(times, t)
        if i < len(samples) and times[i] == t:
            return samples[i].cpu_s
        a, b = samples[i - 1], samples[i]
        f = (t - a.wall_ms) / (b.wall_ms - a.wall_ms) if b.wall_ms > a.wall_ms else 0.0
        return a.cpu_s + (b.cpu_s - a.cpu_s) * f

    first = max(0, bisect.bisect_right(times, start_ms) - 1)
    last = min(len(samples) - 1, bisect.bisect_left(times, end_ms))
    peak = max(s.rss_bytes for s in samples[first : last + 1])
    return max(0.0, cpu_at(end_ms) - cpu_at(start_ms)), peak / MB


# -- cgroup v2: the gateway container on a cloud VM ---------------------------------------------


class CgroupFormatError(ValueError):
    """A cgroup file that is not what cgroup v2 writes."""


def parse_flat_keyed(text: str, name: str = "cpu.stat") -> dict[str, int]:
    """A cgroup v2 flat-keyed file (``cpu.stat``, ``memory.stat``): ``key value`` per line."""
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise CgroupFormatError(
                f"{name} line {number}: expected 'key value' (a whole number), got {line!r}"
            )
        out[parts[0]] = int(parts[1])
    return out


def parse_single_value(text: str, name: str = "memory.current") -> int:
    """A cgroup v2 single-value file (``memory.current``, ``memory.peak``): bytes."""
    value = text.strip()
    if not value.isdigit():
        raise CgroupFormatError(f"{name}: expected a number of bytes, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class CgroupSample:
    """One reading of a container's cgroup (what the VM's collector writes, one JSON line)."""

    wall_ms: float
    usage_usec: int
    """``cpu.stat`` ``usage_usec``: CPU time of every task in the group, user + system."""
    memory_current: int
    inactive_file: int = 0
    """``memory.stat`` ``inactive_file``: page cache the kernel would drop first."""
    memory_peak: int | None = None
    """``memory.peak`` (kernel 5.19+): the highest ``memory.current`` since the group began."""

    @classmethod
    def from_files(
        cls,
        wall_ms: float,
        cpu_stat: str,
        memory_current: str,
        memory_stat: str = "",
        memory_peak: str | None = None,
    ) -> CgroupSample:
        """A sample from the files' text, as read at ``wall_ms``."""
        cpu = parse_flat_keyed(cpu_stat, "cpu.stat")
        if "usage_usec" not in cpu:
            raise CgroupFormatError("cpu.stat: no usage_usec line (is this cgroup v2?)")
        stat = parse_flat_keyed(memory_stat, "memory.stat") if memory_stat else {}
        return cls(
            wall_ms=wall_ms,
            usage_usec=cpu["usage_usec"],
            memory_current=parse_single_value(memory_current, "memory.current"),
            inactive_file=stat.get("inactive_file", 0),
            memory_peak=(
                parse_single_value(memory_peak, "memory.peak") if memory_peak is not None else None
            ),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CgroupSample:
        peak = data.get("memory_peak")
        return cls(
            wall_ms=float(data["wall_ms"]),
            usage_usec=int(data["usage_usec"]),
            memory_current=int(data["memory_current"]),
            inactive_file=int(data.get("inactive_file") or 0),
            memory_peak=int(peak) if peak is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def cgroup_window(
    samples: Iterable[CgroupSample], start_ms: float, end_ms: float
) -> tuple[float, float] | None:
    """(CPU seconds, peak MB) of a container over [start_ms, end_ms] from its cgroup samples,
    or None when the samples do not cover the window.

    CPU: ``usage_usec`` interpolated to the window's ends. Memory: the highest working set
    (``memory.current`` − ``inactive_file``) sampled in and around the window; when
    ``memory.peak`` rose during the window, the container set a new high inside it, which the
    samples may have missed: that high (less the cache at the sample after it) is the peak."""
    ordered = sorted(samples, key=lambda s: s.wall_ms)
    usage = [
        UsageSample(s.wall_ms, s.usage_usec / 1e6, float(s.memory_current - s.inactive_file))
        for s in ordered
    ]
    found = window_usage(usage, start_ms, end_ms)
    if found is None:
        return None
    cpu_s, peak_mb = found
    times = [s.wall_ms for s in ordered]
    before = ordered[max(0, bisect.bisect_right(times, start_ms) - 1)]
    after_i = min(len(ordered) - 1, bisect.bisect_left(times, end_ms))
    after = ordered[after_i]
    if (
        before.memory_peak is not None
        and after.memory_peak is not None
        and after.memory_peak > before.memory_peak
    ):
        peak_mb = max(peak_mb, (after.memory_peak - after.inactive_file) / MB)
    return cpu_s, peak_mb


def cgroup_resources(
    samples: Iterable[CgroupSample], start_ms: float, end_ms: float
) -> PhaseResources:
    """The gateway's fields of a phase from its container's cgroup samples (the cloud path
    measures the gateway VM's container only: the tester and backend VMs are its own)."""
    found = cgroup_window(samples, start_ms, end_ms)
    if found is None:
        return PhaseResources()
    cpu_s, peak_mb = found
    return PhaseResources(gateway_cpu_s=round(cpu_s, 4), gateway_rss_mb=round(peak_mb, 2))


__all__ = [
    "MB",
    "MIN_CPU_S",
    "SAMPLE_INTERVAL_S",
    "CgroupFormatError",
    "CgroupSample",
    "PhaseResources",
    "UsageSample",
    "cgroup_resources",
    "cgroup_window",
    "parse_flat_keyed",
    "parse_single_value",
    "pooled_requests_per_cpu_s",
    "requests_per_cpu_s",
    "window_usage",
]
