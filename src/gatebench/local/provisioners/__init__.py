"""Gateways as processes of this machine, behind the run's provisioner port
(``gatebench.run.ports.Provisioner``).

``local``: each gateway that runs on this machine is a supervised process on a free loopback
port, booted with the helpers of ``_boot`` (write, native check, start, readiness by a real
request). On Google Cloud the gateways are containers on VMs of their own (``gatebench.vm``).
"""

from __future__ import annotations

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
from gatebench.run.ports import Endpoint, Provisioned, Provisioner

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
