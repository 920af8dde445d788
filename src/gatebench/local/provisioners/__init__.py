"""Provisioners behind one small port: where gateways run for a benchmark.

``local`` (here): each gateway that runs on this machine is a supervised process on a free
loopback port, booted with the helpers of ``_boot`` (write, native check, start, readiness
by a real request). The cloud adapter (Terraform VMs) comes later behind the same port.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gatebench.core.ir import Api
from gatebench.local.provisioners._boot import (
    CheckTimedOut,
    ConfigRejected,
    boot_gateway,
    check_config,
    check_limit,
    start_gateway,
    write_files,
)
from gatebench.local.provisioners._check import Checked, CheckTask, check_gateway, run_checks


@dataclass
class Endpoint:
    """A target that is up: where to send requests, and what to watch."""

    target: str
    base_url: str
    pgids: tuple[int, ...] = ()
    log_path: Path | None = None
    config_dir: Path | None = None
    boot_s: float = 0.0


@dataclass
class Provisioned:
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    """Targets that could not start, with the reason (and the log tail)."""
    unsupported: dict[str, str] = field(default_factory=dict)
    """Gateways that only run on the cloud path: reported, not fatal."""


class Provisioner(Protocol):
    name: str

    def render(
        self, gateways: list[str], api: Api, backend_url: str, run_dir: Path
    ) -> dict[str, str]:
        """Render and write every gateway's configuration; returns failures (gateway → reason)."""

    unsupported: dict[str, str]
    """Filled by ``render``: gateways that only run on the cloud path, with the reason."""

    def planned(self) -> dict[str, str]:
        """Base URL of every rendered gateway that will run (known before it starts)."""

    def provision(self, gateways: list[str]) -> Provisioned:
        """Start the rendered gateways; one failing does not stop the others."""

    def failure(self, target: str) -> str | None:
        """Why a running gateway stopped (reason and log tail), or None while it is up."""

    def teardown(self) -> None:
        """Stop everything this provisioner started; safe to call twice."""


__all__ = [
    "CheckTask",
    "CheckTimedOut",
    "Checked",
    "ConfigRejected",
    "Endpoint",
    "Provisioned",
    "Provisioner",
    "boot_gateway",
    "check_config",
    "check_gateway",
    "check_limit",
    "run_checks",
    "start_gateway",
    "write_files",
]
