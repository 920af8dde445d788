"""This machine as a run's machine (``gatebench.run.ports.Machine``): every process the run
starts is a process of one :class:`~gatebench.local.procs.Supervisor`, on loopback or in
network namespaces the run creates.

One :class:`LocalMachine` serves one run; it keeps the handles the stages do not need to see
(the backend's replicas, for a fault to kill one) and implements the ports of every kind:
the shared stages' (here), the capacity search's (``gatebench.kinds.capacity.CapacityMachine``)
and the live runs' (``gatebench.kinds.scale.LiveMachine``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gatebench.core.errors import GatebenchError
from gatebench.core.fairness import CpuPolicy, local_cpu_policy
from gatebench.core.pinning import CpuLayout, LayoutRule, resolve_layout
from gatebench.core.tls import remove_tls_folder
from gatebench.core.trust import Ceiling
from gatebench.local._guardian import LEDGER
from gatebench.local.ceiling import SERVER_LABEL
from gatebench.local.engines import BoundEngine, get_engine
from gatebench.local.procs import ManagedProcess, Supervisor
from gatebench.run._journal import Progress
from gatebench.run.ports import (
    Backend,
    FanOut,
    MergingHooks,
    Provisioner,
    RunTlsFiles,
    StageContext,
    Watch,
)

if TYPE_CHECKING:
    from gatebench.core.ir import Api
    from gatebench.core.plan import Capacity, Plan
    from gatebench.core.workload import Phase
    from gatebench.kinds._live._gateway import Gateway, RateLoad
    from gatebench.kinds._live._machine import GrownSite
    from gatebench.kinds.capacity import ProbeMetrics, ProbeRequest, SearchResult
    from gatebench.kinds.capacity._machine import ProbeSite
    from gatebench.local._netns import LoadHost
    from gatebench.local.backends import PlanBackend


class LocalMachine:
    """This machine, for one run."""

    name = "local"

    def __init__(self, supervisor: Supervisor | None = None) -> None:
        self.supervisor = supervisor or Supervisor()
        self.backends: PlanBackend | None = None
        """The replicas gatebench started (None before ``start_backend``, or for the user's own
        service)."""

    @contextlib.contextmanager
    def session(self, run_dir: Path) -> Iterator[object]:
        """The supervisor, with its ledger in the run folder (gatebench.local._guardian)."""
        self.supervisor.guard(run_dir / LEDGER)
        with self.supervisor:
            yield self.supervisor

    def engine(self, name: str) -> BoundEngine:
        return BoundEngine(get_engine(name), self.supervisor)

    def start_backend(self, ctx: StageContext, layout: LayoutRule = resolve_layout) -> Backend:
        """The plan's ``cpus:`` resolved here and handed to the supervisor before anything
        starts (gatebench.core.pinning); the run's TLS; the backend (an unreachable ``url:``
        backend fails the run here, before any load); then the ceiling server (docs/trust.md),
        unless the run skips it: when it cannot start, the run goes on with a note."""
        from gatebench.local._deployed import prepare_tls
        from gatebench.local.backends import start_plan_backends
        from gatebench.run.stages.parse import Parsed

        parsed = ctx.get(Parsed)
        plan = parsed.plan
        cores = self.pin(plan, ctx.note, layout)
        ctx.journal.display(Progress(step="provisioning", message="backend"))
        tls = prepare_tls(plan)
        if tls is not None:
            ctx.resources.callback(remove_tls_folder, tls.folder)
            ctx.journal.environment(tls=tls.record)
        started = start_plan_backends(
            self.supervisor,
            plan,
            ctx.api,
            ctx.run_dir,
            tls=tls.backend if tls is not None else None,
        )
        self.backends = started if started.replicas else None
        pids = [r.process.pid for r in started.replicas]
        if pids:
            ctx.cpu_groups["backend"] = pids
        if plan.backend.replicas > 1:
            ctx.journal.environment(
                replicas={"count": plan.backend.replicas, "balance": plan.backend.balance}
            )
        ceiling, ceiling_url = (
            self._start_ceiling(ctx, parsed.engine) if ctx.options.ceiling else (None, None)
        )
        parts = urlsplit(started.origins[0])
        return Backend(
            started.url,
            f"{parts.scheme}://{parts.netloc}",
            started.reset_urls[0] if started.reset_urls else None,
            pids[0] if pids else None,
            cores,
            local_cpu_policy(cores, sorted(os.sched_getaffinity(0))),
            ceiling,
            ceiling_url,
            origins=started.origins if started.replicas else (),
            reset_urls=started.reset_urls if started.replicas else (),
            tls=RunTlsFiles(tls.gateway, tls.trust_store) if tls is not None else None,
            ceiling_label=SERVER_LABEL,
            watched=tuple(
                r.process
                for r in started.replicas
                if plan.fault is None or r.replica != plan.fault.replica
            ),
        )

    def pin(
        self, plan: Plan, note: Callable[[str], None], rule: LayoutRule = resolve_layout
    ) -> CpuLayout:
        """The plan's ``cpus:`` on this machine (by ``rule``), handed to the supervisor before
        anything starts; why pinning could not be done goes in the run's notes."""
        layout = rule(plan.cpus, sorted(os.sched_getaffinity(0)))
        if layout.setting == "pinned" and not plan.gateways:
            # Pinning gives the gateway its share; a run without one keeps every core.
            layout = CpuLayout(
                "pinned", note="no gateway to give a share of the cores: ran unpinned"
            )
        self.supervisor.pin(layout.cores)
        if layout.note:
            note(f"cpus: {layout.note}")
        return layout

    def _start_ceiling(
        self, ctx: StageContext, engine: str
    ) -> tuple[ManagedProcess | None, str | None]:
        """The ceiling server (gatebench.local.ceiling), or (None, None) with a note when it
        cannot run: the run goes on, and only the CPU accounting can flag ``tester-bound``."""
        from gatebench.local.ceiling import start_ceiling_server

        try:
            return start_ceiling_server(self.supervisor, ctx.run_dir / "ceiling")
        except GatebenchError as exc:
            note = f"the load engine's ceiling was not measured: {str(exc).splitlines()[0]}"
            ctx.note(note)
            ceiling = Ceiling(engine, SERVER_LABEL, note=note)
            ctx.journal.environment(ceiling=ceiling.to_dict())
            return None, None

    def provisioner(self, **settings: Any) -> Provisioner:
        """The gateways as processes of this run's supervisor, with the port's settings
        (``Machine.provisioner``)."""
        from gatebench.local.provisioners.local import LocalProvisioner

        return LocalProvisioner(self.supervisor, **settings)

    def fanout_problem(self, testers: int, engine: str) -> str | None:
        from gatebench.local._fanout import fanout_problem

        return fanout_problem(testers, engine)

    def run_testers(
        self,
        document: dict[str, Any],
        testers: int,
        run_dir: Path,
        hooks: MergingHooks,
        *,
        cpu_groups: Mapping[str, Sequence[int]],
        target_groups: Callable[[str], Sequence[str]],
        ready: Callable[[], None],
    ) -> FanOut:
        from gatebench.local._fanout import run_testers

        return run_testers(
            document,
            testers,
            run_dir,
            hooks,
            supervisor=self.supervisor,
            cpu_groups=cpu_groups,
            target_groups=target_groups,
            ready=ready,
        )

    def deployment_watch(
        self, plan: Plan, phases: Sequence[Phase], ports: Mapping[str, int], run_dir: Path
    ) -> Watch | None:
        """For a TLS plan, each target's handshakes; with a fault, the replica killed and
        started again (gatebench.local._deployed). None for a plain plan or the user's own
        backend."""
        if (plan.tls is None and plan.fault is None) or self.backends is None:
            return None
        from gatebench.local._deployed import DeploymentWatch

        watch = DeploymentWatch(
            self.supervisor, plan, self.backends, phases, ports, run_dir, run_dir
        )
        watch.start()
        return watch

    # the capacity search's port (gatebench.kinds.capacity.CapacityMachine)

    def load_generator(self, connections: str = "keep-alive") -> BoundEngine:
        from gatebench.local.engines.loadgen import LoadgenEngine

        return BoundEngine(LoadgenEngine(connections=connections), self.supervisor)

    def namespaces_problem(self) -> str | None:
        from gatebench.local._netns import namespaces_problem

        return namespaces_problem()

    @contextlib.contextmanager
    def load_hosts(self, testers: int) -> Iterator[Sequence[object]]:
        """``testers`` network namespaces (gatebench.local._netns); one tester: none."""
        if testers <= 1:
            yield []
            return
        from gatebench.local._netns import LoadHostNetwork

        with LoadHostNetwork(testers) as network:
            yield list(network.hosts)

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
        from gatebench.local.probing import measure_ceiling

        return measure_ceiling(
            plan,
            api,
            workload,
            settings,
            self.supervisor,
            workdir,
            url=url,
            hosts=_hosts(hosts),
            cpu_groups=cpu_groups,
        )

    def prober(self, site: ProbeSite) -> Callable[[ProbeRequest], ProbeMetrics]:
        from gatebench.local.engines.loadgen import LoadgenEngine
        from gatebench.local.probing import Prober

        return Prober(
            site.plan,
            site.api,
            site.workload,
            site.target,
            site.base_url,
            self.supervisor,
            site.workdir,
            site.late_ms,
            engine=LoadgenEngine(connections=site.connections),
            reset_url=site.reset_url,
            reset_urls=site.reset_urls,
            cpu_groups=site.cpu_groups,
            target_groups=site.target_groups,
            hosts=_hosts(site.hosts),
            seed=site.seed,
            tick=site.tick,
            shared_core=site.shared_core,
        )

    # the live runs' port (gatebench.kinds._live.LiveMachine)

    def gateway_cores(self, ctx: StageContext) -> tuple[CpuLayout, CpuPolicy]:
        layout = self.pin(ctx.plan, ctx.note)
        return layout, local_cpu_policy(layout, sorted(os.sched_getaffinity(0)))

    def echo_backends(self, names: Sequence[str], ctx: StageContext) -> dict[str, str]:
        from gatebench.local.backends import start_backend

        urls = {}
        for name in names:
            proc, port = start_backend(
                self.supervisor,
                "echo",
                ctx.run_dir / f"backend-{name}",
                extra_args=["-instance", name],
            )
            ctx.cpu_groups[f"backend-{name}"] = [proc.pid]
            urls[name] = f"http://127.0.0.1:{port}"
        return urls

    def rate_load(self) -> RateLoad:
        from gatebench.local.engines.constant_rate import LoadgenRateLoad

        return LoadgenRateLoad(self.supervisor)

    def unavailable(self, gateway: str) -> str | None:
        from gatebench.core.renderers import get_renderer

        reason = get_renderer(gateway).available_here()
        return None if reason is None else f"unsupported here: {reason}"

    def live_gateway(self, site: GrownSite) -> Gateway:
        from gatebench.local.liveruns import render_grown

        return render_grown(site, self.supervisor)


def _hosts(hosts: Sequence[object]) -> list[LoadHost]:
    """The hosts :meth:`LocalMachine.load_hosts` gave, back in their own type."""
    from gatebench.local._netns import LoadHost

    out = []
    for host in hosts:
        if not isinstance(host, LoadHost):
            raise TypeError(f"not a host of this machine: {host!r}")
        out.append(host)
    return out


__all__ = ["LocalMachine"]
