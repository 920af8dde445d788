"""A gateway booted by the integration tests' ``boot`` fixture (tests/integration/conftest.py),
and the skip for gateways installed from their vendors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.local.procs import ManagedProcess, Supervisor


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


def skip_unless_installed(gateway: str) -> None:
    """Skip, with the reason, a test that needs a gateway the user installs from its vendor
    (KrakenD, Tyk) when it is not installed here; any other gateway must be (make setup-all)."""
    renderer = get_renderer(gateway)
    reason = renderer.available_here()
    if reason is not None and renderer.vendor_installed:
        pytest.skip(reason)
