"""The gateway VM makes its own TLS key and certificate, just before the gateway starts (a
plan with ``tls`` on the cloud path; docs/cloud.md, "TLS and replicas").

The render step renders every gateway to read its TLS files from ``MOUNT/tls/`` and gives
its VM a ``configure`` step (``gatebench cloud gateway-tls``, run from the runner image before
the gateway's container, with the gateway's folder mounted). That step reads the
deployment's CA key from the Secret Manager secret the fleet names, as the VM's own service
account (granted it with the backend VM alone: infra/secrets.tf), makes a new server key of
the plan's type and a certificate for the VM's host name (gatebench.cloud._tls), and writes
the TLS folder's files (gatebench.core.tls.FILES). The key never leaves the VM.

The files are readable by every user of the VM (0644 in a 0755 folder): the gateway images
run as users of their own (HAProxy's image as ``haproxy``, Kong's as ``kong``), and the VM
runs nothing but the run's containers. When it cannot, it writes why to
``runs/RUN/gateways/GATEWAY/config-error.json`` (the tester reports it for the target that
never answers) and fails: the startup script stops and the gateway never runs without TLS.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from gatebench.cloud._render import config_error_object, run_object
from gatebench.cloud._secrets import SecretReader
from gatebench.cloud._storage import Storage
from gatebench.cloud._tester import read_required_json
from gatebench.cloud._tls import TLS_DIR, vm_certificates
from gatebench.core.errors import RunError
from gatebench.core.tls import tls_files


def configure_gateway_tls(
    storage: Storage,
    bucket: str,
    run_id: str,
    gateway: str,
    out: Path,
    secrets: SecretReader | None = None,
) -> list[str]:
    """Write the gateway's TLS files into ``out/tls`` (its mounted folder): the names written.
    On failure the reason goes to :func:`config_error_object` and RunError is raised: nothing
    is left in ``out/tls``."""
    folder = out / TLS_DIR
    try:
        fleet = read_required_json(storage, bucket, run_object(run_id, "fleet.json"))
        spec = fleet.get("tls")
        if not isinstance(spec, dict):
            raise RunError(f"runs/{run_id}/fleet.json has no tls section")
        host = (spec.get("hosts") or {}).get(gateway)
        if not isinstance(host, str) or not host:
            raise RunError(f"runs/{run_id}/fleet.json names no host for {gateway}")
        files = tls_files(vm_certificates(spec, host, secrets))
    except RunError as exc:
        reason = f"{gateway}: the gateway VM could not make its TLS certificate: {exc}"
        body = json.dumps({"reason": reason}, indent=1, sort_keys=True) + "\n"
        # Best effort (a reboot's second failure cannot overwrite it): stderr says it too.
        with contextlib.suppress(Exception):
            storage.write(bucket, config_error_object(run_id, gateway), body, "application/json")
        raise RunError(reason) from None
    shutil.rmtree(folder, ignore_errors=True)  # a previous boot's files
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    for name, data in sorted(files.items()):
        path = folder / name
        path.write_bytes(data)
        path.chmod(0o644)
    return sorted(files)


__all__ = ["configure_gateway_tls"]
