"""What the machine was doing while a benchmark ran: the context every figure needs."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from typing import Any


def describe_machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gib = 0.0
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem_gib = int(line.split()[1]) / 1024 / 1024
                    break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} × {cpu}, {mem_gib:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def _cpu_times() -> tuple[float, float, float]:
    """/proc/stat's first eight fields (guest time is already in user), the idle part and the
    steal part (a virtual machine's cores given to another guest)."""
    with open("/proc/stat", encoding="utf-8") as fh:
        parts = [float(x) for x in fh.readline().split()[1:9]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0.0)
    steal = parts[7] if len(parts) > 7 else 0.0
    return sum(parts), idle, steal


@dataclass
class CpuWindow:
    """Machine-wide CPU busy % (steal included), the steal alone and this process's own CPU %
    over a window."""

    start_total: float = 0.0
    start_idle: float = 0.0
    start_steal: float = 0.0
    steal_pct: float = 0.0
    start_self: float = 0.0
    start_wall: float = 0.0
    busy_pct: float = 0.0
    self_pct: float = 0.0

    def __enter__(self) -> CpuWindow:
        self.start_total, self.start_idle, self.start_steal = _cpu_times()
        t = os.times()
        self.start_self = t.user + t.system + t.children_user + t.children_system
        self.start_wall = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        total, idle, steal = _cpu_times()
        dt, didle = total - self.start_total, idle - self.start_idle
        self.busy_pct = 100.0 * (dt - didle) / dt if dt > 0 else 0.0
        self.steal_pct = 100.0 * (steal - self.start_steal) / dt if dt > 0 else 0.0
        t = os.times()
        used = t.user + t.system + t.children_user + t.children_system - self.start_self
        wall = time.monotonic() - self.start_wall
        ncpu = os.cpu_count() or 1
        self.self_pct = 100.0 * used / (wall * ncpu) if wall > 0 else 0.0

    @property
    def others_pct(self) -> float:
        """Machine CPU used by other processes (and stolen by the hypervisor), % of all
        cores."""
        return max(0.0, self.busy_pct - self.self_pct)


@dataclass(frozen=True)
class RunCores:
    """The cores a run here gives every gateway (the default ``cpus:``), applied to a
    benchmark's supervisor: the gateway's share, and where the load and the backends go."""

    cpu: Any
    """The ``gatebench.core.fairness.CpuPolicy`` every gateway is rendered for."""
    engine: frozenset[int]
    """The cores a load tool started outside the supervisor runs on (empty: any)."""

    def pin_load_tool(self) -> None:
        """``preexec_fn`` of a load tool's subprocess: the engine's cores."""
        if self.engine:
            os.sched_setaffinity(0, self.engine)


def run_cores(supervisor: Any) -> RunCores:
    """The default CPU policy of a run on this machine, handed to ``supervisor`` (its
    gateways on their share, its backends on the others), as ``gatebench run`` does it."""
    from gatebench.core.fairness import local_cpu_policy
    from gatebench.core.pinning import resolve_layout
    from gatebench.core.plan import Cpus

    available = sorted(os.sched_getaffinity(0))
    layout = resolve_layout(Cpus(), available)
    supervisor.pin(layout.cores)
    return RunCores(local_cpu_policy(layout, available), frozenset(layout.cores.get("engine", ())))
