"""CPU accounting per phase: interpolation between samples, shares, and the flags."""

from __future__ import annotations

import os
import time

import pytest

from gatebench.core.measure import CpuUsage
from gatebench.local.engines import cpu as cpu_mod
from gatebench.local.engines.cpu import CpuSample, CpuSampler


def test_flags_thresholds() -> None:
    quiet = CpuUsage(busy_pct=50, tester_pct=30, target_pct=15, others_pct=5, window_s=1)
    assert quiet.flags() == ()
    assert CpuUsage(50, 10, 10, 20.5, 1).flags() == ("noisy",)
    assert CpuUsage(85, 50, 30, 5, 1).flags() == ("tester-bound",)
    assert CpuUsage(84.9, 50, 30, 5, 1).flags() == ()
    assert CpuUsage(95, 30, 40, 25, 1).flags() == ("noisy",)  # saturated, but by the target


def test_usage_interpolates_between_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_mod, "_HZ", 100)
    monkeypatch.setattr(cpu_mod, "_NCPU", 2)
    sampler = CpuSampler()
    sampler.names = ("gw", "tester")
    # 2 cores × 100 Hz = 200 ticks/s. From t=0 to t=1000 ms: 150 busy ticks of 200,
    # tester 60 ticks, gateway 40 ticks, gatebench itself 10 ticks.
    sampler.samples = [
        CpuSample(0.0, 1000.0, 500.0, (0.0, 0.0, 0.0)),
        CpuSample(1000.0, 1200.0, 550.0, (40.0, 60.0, 10.0)),
    ]
    usage = sampler.usage(0.0, 1000.0, "tester", ["gw"])
    assert usage is not None
    assert usage.busy_pct == pytest.approx(75.0)
    assert usage.tester_pct == pytest.approx(30.0)
    assert usage.target_pct == pytest.approx(20.0)
    assert usage.others_pct == pytest.approx(75.0 - 30 - 20 - 5)
    half = sampler.usage(250.0, 750.0, "tester", ["gw"])  # linear inside the window
    assert half is not None and half.tester_pct == pytest.approx(30.0)
    assert sampler.usage(0.0, 0.0, "tester", ["gw"]) is None


def test_hypervisor_steal_counts_as_others_and_makes_a_phase_noisy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a virtual machine the hypervisor may run another guest on our cores (/proc/stat's
    steal): our processes wait as if another process held the CPU, so steal is time others
    used. 30 % of the machine stolen, nothing else busy: noisy."""
    from types import SimpleNamespace

    monkeypatch.setattr(cpu_mod, "_HZ", 100)
    monkeypatch.setattr(cpu_mod, "_NCPU", 2)
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    times = [
        SimpleNamespace(**{**dict.fromkeys(fields, 0.0), "idle": 10.0}),
        # one second later: 2 cores × 1 s = 2 s of CPU time, 0.6 s of it stolen
        SimpleNamespace(**{**dict.fromkeys(fields, 0.0), "idle": 11.4, "steal": 0.6}),
    ]
    monkeypatch.setattr(cpu_mod.psutil, "cpu_times", lambda: times.pop(0))
    clock = iter([1000.0, 2000.0])
    monkeypatch.setattr(cpu_mod.time, "time", lambda: next(clock))
    sampler = CpuSampler()
    first, second = sampler.sample(), sampler.sample()
    usage = sampler.usage(first.wall_ms, second.wall_ms, "", [])
    assert usage is not None
    assert usage.busy_pct == pytest.approx(30.0)
    assert usage.others_pct == pytest.approx(30.0, abs=1.0)  # less this process's own ticks
    assert usage.flags() == ("noisy",)


def _burn_cpu(seconds: float) -> None:
    """Use at least ``seconds`` of this process's CPU time (bounded by 20 s of wall time)."""
    start, deadline = time.process_time(), time.monotonic() + 20
    while time.process_time() - start < seconds and time.monotonic() < deadline:
        sum(i * i for i in range(20_000))


def test_real_sample_sees_our_own_process_group() -> None:
    sampler = CpuSampler()
    sampler.set_groups({"me": [os.getpgrp()]})
    first = sampler.sample()
    _burn_cpu(0.1)  # 10 clock ticks at 100 Hz: well above the counters' resolution
    second = sampler.sample()
    assert sampler.names == ("me",)
    assert len(second.groups) == 2  # "me", then gatebench itself
    assert second.total > first.total
    # both counters grew by about the CPU burnt (strictly: a counter that stood still fails)
    me, own = (b - a for a, b in zip(first.groups, second.groups, strict=True))
    assert me >= 5, (first, second)  # ticks of our process group
    assert own >= 5, (first, second)  # ticks of this process
    usage = sampler.usage(first.wall_ms, second.wall_ms, "me", [])
    assert usage is not None and usage.tester_pct > 0
