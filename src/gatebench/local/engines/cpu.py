"""CPU used during a phase: by the whole machine, the load generator, the target, and others.

On a 2-core machine the load generator competes with the gateway it loads, and other work on
the box swings results by ±10–40 % (docs/engine.md). Every measured phase therefore records
how much CPU the rest of the machine used and how much the load generator used, from the
CPU times psutil reads (the machine's, and each process of our process groups'), sampled by
the engine while it runs and interpolated to the phase's exact start and end.

Percentages are of the whole machine (all cores): 50 % on 2 cores is one core.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import psutil

from gatebench.core.measure import CpuUsage
from gatebench.core.resources import PhaseResources, UsageSample, window_usage

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_NCPU = os.cpu_count() or 1


@dataclass(frozen=True)
class CpuSample:
    wall_ms: float
    total: float
    idle: float
    groups: tuple[float, ...]
    rss: tuple[float, ...] = ()
    """Resident bytes of each group at this moment (same order as ``groups``, without self)."""


def _machine() -> tuple[float, float]:
    """Machine-wide CPU time (the first eight fields of ``/proc/stat``'s cpu line) and the
    idle part of it (idle + iowait), in clock ticks. Steal (a virtual machine's cores given to
    another guest by the hypervisor) is busy time that none of our processes used: it lands in
    ``others_pct`` (gatebench.core.measure.NOISY_OTHERS_PCT)."""
    t = psutil.cpu_times()
    total = t.user + t.nice + t.system + t.idle + t.iowait + t.irq + t.softirq + t.steal
    return total * _HZ, (t.idle + t.iowait) * _HZ


@dataclass
class CpuSampler:
    """Samples the machine and named groups of process groups (plus gatebench itself, as the
    last value of each sample); ``usage`` interpolates to any window."""

    groups: dict[str, frozenset[int]] = field(default_factory=dict)
    samples: list[CpuSample] = field(default_factory=list)
    names: tuple[str, ...] = ()

    def set_groups(self, groups: Mapping[str, Sequence[int]]) -> None:
        self.groups = {k: frozenset(v) for k, v in groups.items()}
        self.names = tuple(sorted(self.groups))
        self.samples.clear()

    def sample(self) -> CpuSample:
        total, idle = _machine()
        all_pgids = frozenset().union(*self.groups.values()) if self.groups else frozenset()
        ticks = dict.fromkeys(self.names, 0.0)
        rss = dict.fromkeys(self.names, 0.0)
        if all_pgids:
            per_pgid = _per_pgid_ticks(all_pgids)
            for name in self.names:
                ticks[name] = sum(per_pgid.get(g, (0.0, 0.0))[0] for g in self.groups[name])
                rss[name] = sum(per_pgid.get(g, (0.0, 0.0))[1] for g in self.groups[name])
        own = os.times()
        ticks["self"] = (own.user + own.system) * _HZ
        s = CpuSample(
            time.time() * 1000.0,
            total,
            idle,
            tuple(ticks[n] for n in (*self.names, "self")),
            tuple(rss[n] for n in self.names),
        )
        self.samples.append(s)
        return s

    def _at(self, wall_ms: float) -> CpuSample | None:
        if not self.samples:
            return None
        times = [s.wall_ms for s in self.samples]
        i = bisect.bisect_left(times, wall_ms)
        if i <= 0:
            return self.samples[0]
        if i >= len(self.samples):
            return self.samples[-1]
        a, b = self.samples[i - 1], self.samples[i]
        f = (wall_ms - a.wall_ms) / (b.wall_ms - a.wall_ms) if b.wall_ms > a.wall_ms else 0.0

        def lerp(x: float, y: float) -> float:
            return x + (y - x) * f

        return CpuSample(
            wall_ms,
            lerp(a.total, b.total),
            lerp(a.idle, b.idle),
            tuple(lerp(x, y) for x, y in zip(a.groups, b.groups, strict=True)),
        )

    def usage(
        self, start_ms: float, end_ms: float, tester: str, target: Sequence[str]
    ) -> CpuUsage | None:
        """Shares over [start_ms, end_ms] (epoch ms); None without samples around it."""
        a, b = self._at(start_ms), self._at(end_ms)
        if a is None or b is None or b.wall_ms <= a.wall_ms:
            return None
        d_total = b.total - a.total
        busy = 100.0 * (d_total - (b.idle - a.idle)) / d_total if d_total > 0 else 0.0
        capacity = (b.wall_ms - a.wall_ms) / 1000.0 * _HZ * _NCPU

        def share(name: str) -> float:
            if name not in self.names:
                return 0.0
            i = self.names.index(name)
            return max(0.0, 100.0 * (b.groups[i] - a.groups[i]) / capacity)

        tester_pct = share(tester)
        target_pct = sum(share(t) for t in target)
        own = max(0.0, 100.0 * (b.groups[-1] - a.groups[-1]) / capacity)
        # everything ours: the generator, the gateways and backend (all of them, not only the
        # target: an idle gateway is still ours), and gatebench itself
        ours = sum(share(n) for n in self.names) + own
        others = max(0.0, busy - ours)
        return CpuUsage(
            busy_pct=max(0.0, min(100.0, busy)),
            tester_pct=tester_pct,
            target_pct=target_pct,
            others_pct=others,
            window_s=(end_ms - start_ms) / 1000.0,
        )

    def resources(
        self, start_ms: float, end_ms: float, tester: str, target: Sequence[str]
    ) -> PhaseResources | None:
        """CPU seconds and peak resident MB over [start_ms, end_ms] of the gateway (the
        target's ``gw:`` groups), the backend (``backend``) and the load engine (``tester``);
        None without samples around the window (gatebench.core.resources.window_usage)."""
        gateway = [g for g in target if g.startswith("gw:") and g in self.names]
        roles = {"gateway": gateway, "backend": ["backend"], "engine": [tester]}
        out: dict[str, float | None] = {}
        for role, names in roles.items():
            found = self._role_window([n for n in names if n in self.names], start_ms, end_ms)
            out[f"{role}_cpu_s"] = None if found is None else round(found[0], 4)
            out[f"{role}_rss_mb"] = None if found is None else round(found[1], 2)
        if all(v is None for v in out.values()):
            return None
        return PhaseResources(**out)

    def _role_window(
        self, names: Sequence[str], start_ms: float, end_ms: float
    ) -> tuple[float, float] | None:
        if not names or not self.samples or not self.samples[0].rss:
            return None
        index = [self.names.index(n) for n in names]
        series = [
            UsageSample(
                s.wall_ms,
                sum(s.groups[i] for i in index) / _HZ,
                sum(s.rss[i] for i in index),
            )
            for s in self.samples
        ]
        return window_usage(series, start_ms, end_ms)


def exited_unreaped(pid: int) -> bool:
    """Whether our child ``pid`` has ended, without reaping it: until it is reaped its CPU
    time stays readable in /proc, so the sampler can take a last sample that includes it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _per_pgid_ticks(pgids: frozenset[int]) -> dict[int, tuple[float, float]]:
    """Per group in ``pgids``: CPU time of every process in it (user + system, reaped
    children's included) in clock ticks, and their resident memory in bytes, summed."""
    out: dict[int, tuple[float, float]] = {}
    for proc in psutil.process_iter():
        try:
            pgrp = os.getpgid(proc.pid)
            if pgrp not in pgids:
                continue
            t = proc.cpu_times()
        except (psutil.Error, OSError):
            continue
        try:
            rss = float(proc.memory_info().rss)
        except (psutil.Error, OSError):
            rss = 0.0  # an exited, unreaped child: its CPU time counts, it holds no memory
        seconds = t.user + t.system + t.children_user + t.children_system
        ticks, resident = out.get(pgrp, (0.0, 0.0))
        out[pgrp] = (ticks + seconds * _HZ, resident + rss)
    return out


__all__ = [
    "CpuSample",
    "CpuSampler",
    "exited_unreaped",
]
