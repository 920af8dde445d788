"""What the route-scale and change-under-load runs need of their machine, beyond every run's
(``gatebench.run.ports.Machine``): two echo backends, a gateway rendered for a grown
description, and the constant-rate load (this machine: ``gatebench.local.machine``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gatebench.core.errors import RunError
from gatebench.core.fairness import CpuPolicy
from gatebench.core.ir import Api
from gatebench.core.pinning import CpuLayout
from gatebench.core.renderers import LiveChange, Renderer
from gatebench.core.scaleplan import LoadSettings
from gatebench.kinds._live._gateway import ChangeApplied, Gateway, RateLoad
from gatebench.run.ports import Machine, StageContext


@dataclass(frozen=True)
class GrownSite:
    """One gateway rendered for a grown description: ``grown`` forwarding to ``backend_url``,
    its files under ``workdir``, for ``cpu``'s cores and pools that hold ``settings``' constant
    rate."""

    gateway: str
    grown: Api
    backend_url: str
    settings: LoadSettings
    workdir: Path
    cpu: CpuPolicy


@runtime_checkable
class LiveMachine(Machine, Protocol):
    def gateway_cores(self, ctx: StageContext) -> tuple[CpuLayout, CpuPolicy]:
        """The plan's ``cpus:`` on this machine, handed to the processes it starts, and the
        cores every gateway is given (``gatebench.core.fairness``)."""

    def echo_backends(self, names: Sequence[str], ctx: StageContext) -> dict[str, str]:
        """An echo backend per name, each naming itself in its answers (name → base URL);
        their processes join ``ctx.cpu_groups`` as ``backend-<name>``."""

    def rate_load(self) -> RateLoad:
        """The constant-rate load of this machine."""

    def unavailable(self, gateway: str) -> str | None:
        """Why ``gateway`` cannot be measured from here (None: it can)."""

    def live_gateway(self, site: GrownSite) -> Gateway:
        """The gateway of ``site``, its files written (no process yet); raises what the renderer
        raises."""


def live_machine(machine: Machine) -> LiveMachine:
    """``machine`` as a live run's, or a RunError saying it cannot run one."""
    if not isinstance(machine, LiveMachine):
        raise RunError(f"the {machine.name} machine cannot run route scale or change under load")
    return machine


class NotRendered:
    """A gateway whose files could not be rendered: it never runs; its point says why."""

    host = "127.0.0.1"
    port = 0
    ca_file = None
    lead_s = 0.0
    pids: Sequence[int] = ()

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer

    @property
    def mechanism(self) -> LiveChange:
        return self.renderer.live_change

    def start(self) -> float:
        raise RunError(f"{self.renderer.name} was not rendered")

    def confirm_start(self, started: float) -> float:
        return started

    def alive(self) -> bool:
        return False

    def rss_bytes(self) -> int | None:
        return None

    def config_bytes(self) -> int:
        return 0

    def prepare(
        self, api: Api, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> Any:
        raise RunError(f"{self.renderer.name} was not rendered")

    def apply(self, prepared: Any) -> ChangeApplied:
        raise RunError(f"{self.renderer.name} was not rendered")

    def confirm(self, applied: ChangeApplied) -> ChangeApplied:
        return applied

    def stop(self) -> None:
        return None


__all__ = ["GrownSite", "LiveMachine", "NotRendered", "live_machine"]
