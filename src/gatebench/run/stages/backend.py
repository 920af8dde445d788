"""``backend`` (local path only): the cores, the backend and the engine's ceiling server.

The plan's ``cpus:`` is resolved on this machine and handed to the supervisor before anything
starts (gatebench.local.pinning). The backend starts first, because the gateways' configurations
point at its port, chosen as it starts (``render`` needs it); an unreachable ``url:`` backend
fails the run here, before any load. Then the ceiling server (docs/trust.md), unless the run
skips it; when it cannot start the run goes on with a note.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gatebench.core.errors import GatebenchError
from gatebench.core.model import RunStatus
from gatebench.core.plan import Cpus, Plan
from gatebench.core.tls import remove_tls_folder
from gatebench.core.trust import Ceiling
from gatebench.local._deployed import RunTls, prepare_tls
from gatebench.local.backends import PlanBackend, start_plan_backends
from gatebench.local.pinning import CpuLayout, resolve_layout
from gatebench.local.procs import ManagedProcess, Supervisor
from gatebench.run._base import Stage
from gatebench.run._journal import Progress
from gatebench.run.stages.parse import Parsed

if TYPE_CHECKING:
    from gatebench.run._context import RunContext, RunOutcome


@dataclass(frozen=True)
class Backend:
    url: str
    """The backend's base URL: the baseline target."""
    origin: str
    """Its scheme and host: what the gateways forward to."""
    reset_url: str | None
    pid: int | None
    """The process gatebench started (None: the user's own service)."""
    layout: CpuLayout
    ceiling: ManagedProcess | None
    ceiling_url: str | None
    replicas: PlanBackend | None = None
    """Every replica gatebench started (None: the user's own service)."""
    tls: RunTls | None = None
    """The run's TLS material (a plan with ``tls``); its folder is removed at teardown."""


class StartBackend(Stage):
    """``layout``: how the plan's ``cpus:`` becomes cores (a capacity search splits them its
    own way: gatebench.local.pinning.capacity_layout)."""

    name = "backend"
    step = RunStatus.PROVISIONING
    needs = (Parsed,)
    gives = Backend
    local_only = (
        "the gateways' configurations point at the backend's port, which is chosen as it "
        "starts, so the local backend starts before render; on Google Cloud the backend VM "
        "has a fixed address and is created by provision"
    )

    def __init__(self, layout: Callable[[Cpus, Sequence[int]], CpuLayout] = resolve_layout) -> None:
        self.layout = layout

    def run(self, ctx: RunContext) -> Backend:
        plan = ctx.get(Parsed).plan
        layout = pin(ctx.supervisor, plan, ctx.outcome, self.layout)
        ctx.journal.display(Progress(step="provisioning", message="backend"))
        tls = prepare_tls(plan)
        if tls is not None:
            ctx.resources.callback(remove_tls_folder, tls.folder)
            ctx.journal.environment(tls=tls.record)
        started = start_plan_backends(
            ctx.supervisor,
            plan,
            ctx.api,
            ctx.run_dir,
            tls=tls.backend if tls is not None else None,
        )
        pids = [r.process.pid for r in started.replicas]
        if pids:
            ctx.cpu_groups["backend"] = pids
        if plan.backend.replicas > 1:
            ctx.journal.environment(
                replicas={"count": plan.backend.replicas, "balance": plan.backend.balance}
            )
        ceiling, ceiling_url = start_ceiling(ctx) if ctx.options.ceiling else (None, None)
        parts = urlsplit(started.origins[0])
        return Backend(
            started.url,
            f"{parts.scheme}://{parts.netloc}",
            started.reset_urls[0] if started.reset_urls else None,
            pids[0] if pids else None,
            layout,
            ceiling,
            ceiling_url,
            started if started.replicas else None,
            tls,
        )


def start_ceiling(ctx: RunContext) -> tuple[ManagedProcess | None, str | None]:
    """The ceiling server (gatebench.local.ceiling), or (None, None) with a note when it cannot run:
    the run goes on, and only the CPU accounting can flag ``tester-bound`` then."""
    from gatebench.local.ceiling import SERVER_LABEL, start_ceiling_server

    try:
        return start_ceiling_server(ctx.supervisor, ctx.run_dir / "ceiling")
    except GatebenchError as exc:
        note = f"the load engine's ceiling was not measured: {str(exc).splitlines()[0]}"
        ctx.note(note)
        ceiling = Ceiling(ctx.get(Parsed).engine, SERVER_LABEL, note=note)
        ctx.journal.environment(ceiling=ceiling.to_dict())
        return None, None


def pin(
    supervisor: Supervisor,
    plan: Plan,
    outcome: RunOutcome,
    resolve: Callable[[Cpus, Sequence[int]], CpuLayout] = resolve_layout,
) -> CpuLayout:
    """The plan's ``cpus:`` on this machine (gatebench.local.pinning), handed to the supervisor
    before anything starts; why pinning could not be done goes in the run's notes."""
    layout = resolve(plan.cpus, sorted(os.sched_getaffinity(0)))
    supervisor.pin(layout.cores)
    if layout.note:
        outcome.notes.append(f"cpus: {layout.note}")
    return layout


def layout_environment(layout: CpuLayout) -> dict[str, Any]:
    """The layout as the run records it: a line for the report, the cores per role."""
    return {"cpus": layout.describe(), "cpu_affinity": layout.to_dict()}


__all__ = ["Backend", "StartBackend", "layout_environment", "pin"]
