"""A fair fight: the cores every gateway is given, and the concurrency its pools must hold.

A result is the gateway's only when every gateway ran with the same CPU share and with pools
no smaller than the load the plan sends (docs/gateways.md, "A fair fight"). This module decides
both numbers, once, for both paths; ``renderers.gateway_target`` (the one builder of a
:class:`~gatebench.core.renderers.RenderTarget`) carries them into every configuration, and each
renderer turns them into its own settings (workers, threads, event loops, ``GOMAXPROCS``, MPM
limits, thread pools, upstream pools: the parity table).

**Cores** (:class:`CpuPolicy`):

- Locally, from the plan's ``cpus:`` on this machine (``gatebench.core.pinning``): ``pinned`` (the
  default) gives each gateway the upper half of the cores gatebench may use and keeps it
  there with ``sched_setaffinity``; explicit lists give it its list; ``unpinned`` gives it
  the same number as ``pinned`` would (the equal share), configured but not enforced: a
  gateway with threads of its own (Apache, Varnish, the JVMs) may then use more. Where pinning
  cannot be done (one core) the share is still configured, and the policy says it is not
  enforced.
- On Google Cloud, each gateway runs alone on its VM: every vCPU of the machine type
  (:func:`gatebench.core.cost.machine_vcpus`).

**Concurrency** (:func:`plan_concurrency`): the most requests the plan can hold in flight
through one gateway at once. Closed models count their users; an open model (constant rate)
counts one second of arrivals (a request held longer has failed any objective); a capacity
search counts the highest rate it may offer times its objective's latency bound (Little's law:
a rate carried within the objective has at most that many in flight). Never below
:data:`MIN_CONCURRENCY`, never above :data:`MAX_CONCURRENCY`.

Pure: it reads the plan and the cores it is handed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gatebench.core.cost import machine_vcpus
from gatebench.core.pinning import CpuLayout, resolve_layout
from gatebench.core.plan import CapacityPlan, Cpus, Plan
from gatebench.core.records import fields
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.tls import GatewayTls

MIN_CONCURRENCY = 64
"""The smallest pool a gateway is rendered with, whatever the plan (its warm-up, a probe and
the readiness check share it with the measured load)."""
MAX_CONCURRENCY = 4000
"""The most connections any gateway here is configured to hold (HAProxy's ``maxconn``: the
machine's hard limit is 20,000 open files, and a proxied request holds two)."""

PathName = Literal["local", "cloud"]


@dataclass(frozen=True)
class CpuPolicy:
    """The cores each gateway of a run is given, on which path, and how the share is held."""

    cores: int
    """Every gateway's worker processes, threads and event loops follow this number."""
    path: PathName
    pinned: tuple[int, ...] = ()
    """Locally, the cores the gateway is pinned to (empty: not pinned)."""
    machine: str = ""
    """On the cloud path, the gateway VM's machine type."""
    note: str = ""
    """Why the share is not enforced, when it is not."""

    def __post_init__(self) -> None:
        if not isinstance(self.cores, int) or isinstance(self.cores, bool) or self.cores < 1:
            raise ValueError(f"a gateway needs at least one core; got {self.cores!r}")

    @property
    def enforced(self) -> bool:
        """True when nothing but the gateway can use its share (pinned, or its own VM)."""
        return self.path == "cloud" or bool(self.pinned)

    def describe(self) -> str:
        """One line for the report: ``every gateway: 1 core (cpu 1, pinned); ...``."""
        plural = "core" if self.cores == 1 else "cores"
        if self.path == "cloud":
            return (
                f"every gateway: {self.cores} {plural}, every vCPU of its own "
                f"{self.machine} VM; workers, threads and event loops set to {self.cores}"
            )
        if self.pinned:
            where = f"cpu {','.join(map(str, self.pinned))}, pinned"
        else:
            where = "not pinned: a gateway with threads of its own may use more" + (
                f" ({self.note})" if self.note else ""
            )
        return (
            f"every gateway: {self.cores} {plural} ({where}); workers, threads and event "
            f"loops set to {self.cores}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "path": self.path,
            "pinned": list(self.pinned),
            **fields(self, "machine enforced note"),
            "describe": self.describe(),
        }


def equal_share(available: Sequence[int]) -> int:
    """The cores a gateway gets on a machine whose ``available`` cores the engine and the
    backend share with it: the upper half, as ``pinned`` lays them out (1 of 2, 4 of 8; all of
    one)."""
    count = len(set(available))
    return max(1, count - count // 2)


def local_cpu_policy(layout: CpuLayout, available: Sequence[int]) -> CpuPolicy:
    """The policy of a local run whose ``cpus:`` resolved to ``layout`` on ``available``."""
    pinned = layout.cores.get("gateway", ())
    if pinned:
        return CpuPolicy(len(pinned), "local", pinned=tuple(pinned))
    note = layout.note or ("the plan's cpus: unpinned" if layout.setting == "unpinned" else "")
    return CpuPolicy(equal_share(available), "local", note=note)


def default_local_policy(available: Sequence[int]) -> CpuPolicy:
    """The policy a run here gives when its plan says nothing about ``cpus:``."""
    return local_cpu_policy(resolve_layout(Cpus(), available), available)


def vm_cpu_policy(machine: str) -> CpuPolicy:
    """The policy of a cloud run whose gateways run on ``machine`` VMs (CostError for a
    machine type whose vCPUs are unknown)."""
    return CpuPolicy(machine_vcpus(machine), "cloud", machine=machine)


def stated_cpu_policy(cores: int) -> CpuPolicy:
    """A local policy of ``cores``, stated rather than derived from a plan (``gatebench render
    --cores``, benchmarks that boot a gateway by themselves)."""
    return CpuPolicy(cores, "local", note="stated, not pinned")


def bounded_concurrency(value: float) -> int:
    """``value`` in flight, within :data:`MIN_CONCURRENCY` .. :data:`MAX_CONCURRENCY`."""
    return max(MIN_CONCURRENCY, min(MAX_CONCURRENCY, math.ceil(value)))


def injection_concurrency(kind: str, users: int | None, rate: float | None) -> float:
    """Requests one injection profile can hold in flight (module docstring)."""
    if kind == "sequential":
        return 1.0
    if kind == "constant_rate":
        return float(rate or 0.0)
    return float(users or 1)


def plan_concurrency(plan: Plan, *, capacity: bool = False) -> int:
    """The concurrency every gateway's pools must hold for ``plan``: its workloads' peak, or
    with ``capacity`` the capacity search's too (module docstring)."""
    peaks: list[float] = [
        injection_concurrency(w.injection.kind, w.injection.users, w.injection.rate)
        for w in plan.workloads
    ]
    if capacity:
        peaks.extend(_capacity_peaks(plan))
    return bounded_concurrency(max(peaks, default=0.0))


def _capacity_peaks(plan: Plan) -> Iterable[float]:
    settings = plan.capacity or CapacityPlan()
    for workload in plan.workloads:
        found = settings.of(workload.name)
        if found is None:
            continue
        bound_ms = max((limit for _, limit in found.objective.latency), default=1000.0)
        yield found.max_rate * bound_ms / 1000.0


def gateway_target(
    cpu: CpuPolicy,
    *,
    workdir: str,
    listen_port: int,
    backend_url: str,
    listen_host: str = "127.0.0.1",
    admin_port: int | None = None,
    redis_host: str = "127.0.0.1",
    redis_port: int = 6379,
    tls: GatewayTls | None = None,
    replicas: Sequence[str] = (),
    balance: str = "round_robin",
    concurrency: int = DEFAULT_CONCURRENCY,
) -> RenderTarget:
    """The one way a path builds the target a gateway is rendered for: its cores from
    ``cpu``, its pools from ``concurrency``. ``replicas``: the backend pool's origins (one or
    none: ``backend_url`` alone; two or more: the first replaces ``backend_url``).
    ``tests/unit/test_parity.py`` fails when code outside this function builds a
    :class:`~gatebench.core.renderers.RenderTarget` of its own."""
    pool = tuple(replicas) if len(replicas) > 1 else ()
    return RenderTarget(
        workdir=workdir,
        listen_host=listen_host,
        listen_port=listen_port,
        backend_url=pool[0] if pool else backend_url,
        admin_port=admin_port,
        redis_host=redis_host,
        redis_port=redis_port,
        workers=cpu.cores,
        concurrency=concurrency,
        tls=tls,
        replicas=pool,
        balance=balance,
    )


def cpu_environment(
    cpu: CpuPolicy, gateways: Iterable[str], concurrency: int = DEFAULT_CONCURRENCY
) -> dict[str, Any]:
    """What a run records of the policy in its environment, on both paths: the policy
    (``cpu_policy``), the concurrency the pools hold, and each gateway's own setting for its
    cores (``gateway_cpu``: ``nginx: worker_processes 2``). The report shows them."""
    settings = {}
    for name in gateways:
        renderer = get_renderer(name)
        target = gateway_target(
            cpu,
            workdir="/gatebench",
            listen_port=8080,
            backend_url="http://127.0.0.1:9000",
            concurrency=concurrency,
        )
        settings[renderer.name] = renderer.cpu_setting(target)
    return {
        "cpu_policy": cpu.to_dict(),
        "concurrency": concurrency,
        "gateway_cpu": dict(sorted(settings.items())),
    }


def rate_concurrency(rate: float) -> int:
    """The concurrency of a constant-rate load (route scale, change under load)."""
    return bounded_concurrency(rate)


__all__ = [
    "DEFAULT_CONCURRENCY",
    "MAX_CONCURRENCY",
    "MIN_CONCURRENCY",
    "CpuPolicy",
    "bounded_concurrency",
    "cpu_environment",
    "default_local_policy",
    "equal_share",
    "gateway_target",
    "injection_concurrency",
    "local_cpu_policy",
    "plan_concurrency",
    "rate_concurrency",
    "stated_cpu_policy",
    "vm_cpu_policy",
]
