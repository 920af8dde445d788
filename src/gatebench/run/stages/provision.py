"""``provision``: start every rendered gateway (its own checker first, then the process,
ready once a real request answers), while the load engine starts.

It overlaps ``load``: the engine's JVM initialises (seconds) while the gateways boot, and the
engine waits for this stage before its first phase. A gateway that will not start is recorded
as failed and the others go on; with no gateway started and no baseline, the run fails. Each
gateway's process group joins the CPU accounting, its boot time the run's environment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gatebench.core.errors import RunError
from gatebench.core.model import BASELINE, RunStatus
from gatebench.run._base import Stage
from gatebench.run._journal import Progress
from gatebench.run.ports import Backend, Provisioned
from gatebench.run.stages.parse import Parsed
from gatebench.run.stages.render import Rendered

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


class Provision(Stage):
    name = "provision"
    step = RunStatus.PROVISIONING
    moves = "start"
    needs = (Rendered,)
    gives = Provisioned
    overlaps_next = True

    def run(self, ctx: RunContext) -> Provisioned:
        rendered, journal = ctx.get(Rendered), ctx.journal
        for gw in rendered.planned:
            journal.display(Progress(step="provisioning", message=gw))
        provisioned = rendered.provisioner.provision(list(rendered.planned))
        for gw, reason in provisioned.failures.items():
            journal.target_failed(gw, reason)
        for gw, reason in provisioned.unsupported.items():
            journal.target_failed(gw, f"not run here: {reason}")
        for gw, endpoint in provisioned.endpoints.items():
            ctx.cpu_groups[f"gw:{gw}"] = list(endpoint.pgids)
        if not provisioned.endpoints and not ctx.plan.baseline:
            raise RunError("no target could be started; see the reasons per gateway")
        boot_s = {t: round(e.boot_s, 3) for t, e in provisioned.endpoints.items()}
        journal.environment(boot_s=boot_s)
        return provisioned


class LoadStage(Stage):
    """``load`` after the shared stages: it reads what parse, backend and render gave, and
    lets :class:`Provision` (which overlaps it) start the gateways with ``ctx.ready()``."""

    name = "load"
    step = RunStatus.LOADING
    moves = "start"
    needs = (Parsed, Backend, Rendered)


def target_groups(ctx: RunContext) -> Callable[[str], list[str]]:
    """The CPU accounting groups a target's phases count: its gateway's and the backend's."""
    backend = ["backend"] if ctx.get(Backend).pid is not None else []

    def groups(target: str) -> list[str]:
        return backend if target == BASELINE else [f"gw:{target}", *backend]

    return groups


__all__ = ["Provision", "target_groups"]
