"""``backend`` (local path only): the cores, the backend and the engine's ceiling server.

The machine does it (``Machine.start_backend``; this machine: ``gatebench.local.machine``): the
plan's ``cpus:`` resolved and handed to its processes before anything starts, with the cores
every gateway is given (gatebench.core.fairness), the run's TLS,
the backend first, because the gateways' configurations point at its port, chosen as it starts
(``render`` needs it), then the ceiling server (docs/trust.md). An unreachable ``url:`` backend
fails the run here, before any load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gatebench.core.model import RunStatus
from gatebench.core.pinning import CpuLayout, LayoutRule, resolve_layout
from gatebench.run._base import Stage
from gatebench.run.ports import Backend
from gatebench.run.stages.parse import Parsed

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


class StartBackend(Stage):
    """``layout``: how the plan's ``cpus:`` becomes cores (a capacity search splits them its
    own way: gatebench.core.pinning.capacity_layout)."""

    name = "backend"
    step = RunStatus.PROVISIONING
    needs = (Parsed,)
    gives = Backend
    local_only = (
        "the gateways' configurations point at the backend's port, which is chosen as it "
        "starts, so the local backend starts before render; on Google Cloud the backend VM "
        "has a fixed address and is created by provision"
    )

    def __init__(self, layout: LayoutRule = resolve_layout) -> None:
        self.layout = layout

    def run(self, ctx: RunContext) -> Backend:
        return ctx.machine.start_backend(ctx, self.layout)


def layout_environment(layout: CpuLayout) -> dict[str, Any]:
    """The layout as the run records it: a line for the report, the cores per role."""
    return {"cpus": layout.describe(), "cpu_affinity": layout.to_dict()}


__all__ = ["Backend", "StartBackend", "layout_environment"]
