"""A gateway booted by the integration tests' ``boot`` fixture (tests/integration/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gatebench.procs import ManagedProcess, Supervisor
from gatebench.renderers import RenderTarget


@dataclass
class BootedGateway:
    gateway: str
    port: int
    process: ManagedProcess
    workdir: Path
    target: RenderTarget
    supervisor: Supervisor

    def stop(self) -> None:
        self.supervisor.stop(self.process)
