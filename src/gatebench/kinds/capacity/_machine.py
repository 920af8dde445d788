"""What a capacity search needs of its machine, beyond every run's
(``gatebench.run.ports.Machine``): the load generator, testers on hosts of their own, the
generator's ceiling, and a probe function per target and workload (this machine:
``gatebench.local.machine``; a tester VM of the cloud path: ``gatebench.vm._capacity``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.plan import Capacity, Plan
from gatebench.kinds.capacity._metrics import ProbeMetrics, ProbeRequest
from gatebench.kinds.capacity._search import SearchResult
from gatebench.run.ports import LoadEngine, Machine


@dataclass(frozen=True)
class ProbeSite:
    """What one target's probes on one workload are made of: the target at ``base_url``, the
    files under ``workdir``, a request later than ``late_ms`` late, the generator's
    ``connections``, the backends' resets, the accounting groups, the testers' ``hosts``, the
    values' ``seed``, a ``tick`` about 5 times a second while a probe runs (health checks), and
    ``shared_core``: why the target may share a core with the generator (every probe says so in
    its reasons)."""

    plan: Plan
    api: Api
    workload: str
    target: str
    base_url: str
    workdir: Path
    late_ms: float
    connections: str
    reset_url: str | None
    reset_urls: Sequence[str]
    cpu_groups: Mapping[str, Sequence[int]]
    target_groups: Callable[[str], Sequence[str]]
    hosts: Sequence[object]
    seed: int
    tick: Callable[[], None]
    shared_core: str | None = None


@runtime_checkable
class CapacityMachine(Machine, Protocol):
    def load_generator(self) -> LoadEngine:
        """The open-model load generator the search probes with."""

    def namespaces_problem(self) -> str | None:
        """Why testers cannot run on hosts of their own here (None: they can)."""

    def load_hosts(self, testers: int) -> AbstractContextManager[Sequence[object]]:
        """``testers`` hosts for the whole load (none for one tester), removed on every way
        out."""

    def measure_ceiling(
        self,
        plan: Plan,
        api: Api,
        workload: str,
        settings: Capacity,
        workdir: Path,
        *,
        url: str,
        hosts: Sequence[object],
        cpu_groups: Mapping[str, Sequence[int]],
    ) -> tuple[float | None, SearchResult]:
        """The load generator's ceiling for one workload against the ceiling server."""

    def prober(self, site: ProbeSite) -> Callable[[ProbeRequest], ProbeMetrics]:
        """The probe function of one target on one workload."""


def capacity_machine(machine: Machine) -> CapacityMachine:
    """``machine`` as a capacity search's, or a RunError saying it cannot search."""
    if not isinstance(machine, CapacityMachine):
        raise RunError(f"the {machine.name} machine cannot run a capacity search")
    return machine


__all__ = ["CapacityMachine", "ProbeSite", "capacity_machine"]
