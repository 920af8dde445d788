"""The variables of infra/vms for one run (``run.tfvars.json``): the deployment's settings
(network, service accounts, the runner image and the VMs' pinned Container-Optimized OS image,
limits) plus the run's fleet from the render step.

The provision build saves them as ``runs/RUN/vms.tfvars.json``; teardown destroys with the
saved ones, or with an empty fleet when provisioning never got that far (then the state is
empty too, and destroy has nothing to do). What each VM alone may hold (its write policies,
its TLS key: :func:`machine_metadata`) is the variable ``vm_metadata`` of the apply only, never
in the saved copy.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from gatebench.cloud._objects import RequestError
from gatebench.core.errors import Problem


def vm_vars(
    settings: dict[str, Any], fleet: dict[str, Any] | None, run_id: str, runs_bucket: str
) -> dict[str, Any]:
    missing = [
        key
        for key in (
            "project",
            "prefix",
            "subnetwork",
            "tags",
            "accounts",
            "runner_image",
            "vm_image",
            "limits",
        )
        if key not in settings
    ]
    if missing:
        raise RequestError(
            [Problem(f"/{k}", "missing from the deployment settings") for k in missing]
        )
    fleet = fleet or {}
    limits = settings["limits"]
    # The plan's estimate plus a margin (the render step's), never beyond the deployment's cap.
    lifetime = int(limits.get("vm_lifetime", 43200))
    planned = fleet.get("max_run_duration_s")
    if isinstance(planned, int) and planned > 0:
        lifetime = min(lifetime, planned)
    return {
        "project": settings["project"],
        "zone": fleet.get("zone") or settings.get("zone", ""),
        "prefix": settings["prefix"],
        "run_id": run_id,
        "subnetwork": settings["subnetwork"],
        "tags": settings["tags"],
        "labels": settings.get("labels", {}),
        "service_accounts": settings["accounts"],
        "runner_image": settings["runner_image"],
        # The deployment's pinned Container-Optimized OS image: recorded with the run.
        "image": settings["vm_image"],
        "runs_bucket": runs_bucket,
        "max_run_duration_s": lifetime,
        "backend": fleet.get("backend"),
        "gateways": fleet.get("gateways", {}),
        "tester": fleet.get("tester"),
    }


def machine_metadata(
    values: dict[str, Any],
    fleet: dict[str, Any],
    *,
    email: str,
    sign: Callable[[bytes], bytes],
    now: datetime.datetime | None = None,
) -> tuple[dict[str, dict[str, str]], bytes | None]:
    """Each VM's own metadata (``vm_metadata``: machine → attribute → value) and the run's CA
    certificate (None without TLS): every VM's write policies (gatebench.cloud._writes), and
    with the fleet's ``tls`` each TLS VM's key and certificates from a CA made here for this
    run alone (gatebench.cloud._tls)."""
    from gatebench.cloud._tls import TLS_METADATA_KEY, run_tls
    from gatebench.cloud._writes import METADATA_KEY, vm_policies

    metadata = {
        machine: {METADATA_KEY: policies}
        for machine, policies in vm_policies(values, email=email, sign=sign, now=now).items()
    }
    spec = fleet.get("tls")
    if not isinstance(spec, dict):
        return metadata, None
    ca_cert, tls = run_tls(spec, int(values["max_run_duration_s"]), now=now)
    for machine, value in tls.items():
        metadata.setdefault(machine, {})[TLS_METADATA_KEY] = value
    return metadata, ca_cert
