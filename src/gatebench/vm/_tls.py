"""The gateway VM writes its TLS files, just before the gateway starts (a plan with ``tls`` on
the cloud path; docs/cloud.md, "TLS and replicas").

The render step renders every gateway to read its TLS files from ``MOUNT/tls/`` and gives its
VM a ``configure`` step (``gatebench cloud gateway-tls``, run from the runner image before the
gateway's container, with the gateway's folder mounted). The provision build made the VM's own
server key and its certificate, signed by the run's CA (gatebench.cloud._tls), and put them in
this VM's metadata alone: the step reads them there and writes the TLS folder's files
(gatebench.core.tls.FILES). The CA's key never reached this VM.

The files are readable by every user of the VM (0644 in a 0755 folder): the gateway images
run as users of their own (HAProxy's image as ``haproxy``, Kong's as ``kong``), and the VM
runs nothing but the run's containers. When it cannot, it writes why to
``runs/RUN/gateways/GATEWAY/config-error.json`` (the tester reports it for the target that
never answers) and fails: the startup script stops and the gateway never runs without TLS.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from gatebench.cloud._metadata import instance_attribute
from gatebench.cloud._storage import Storage
from gatebench.cloud._tls import TLS_DIR, TLS_METADATA_KEY, certificates_from_metadata
from gatebench.core.tls import tls_files
from gatebench.vm._gateway_config import config_error_written


def configure_gateway_tls(
    storage: Storage,
    bucket: str,
    run_id: str,
    gateway: str,
    out: Path,
    metadata: Callable[[str], str | None] = instance_attribute,
) -> list[str]:
    """Write the gateway's TLS files into ``out/tls`` (its mounted folder): the names written.
    On failure the reason goes to ``config-error.json`` and RunError is raised: nothing
    is left in ``out/tls``. ``metadata``: how this VM's metadata is read."""
    folder = out / TLS_DIR
    with config_error_written(storage, bucket, run_id, gateway, "write its TLS certificate"):
        files = tls_files(certificates_from_metadata(metadata(TLS_METADATA_KEY)))
    shutil.rmtree(folder, ignore_errors=True)  # a previous boot's files
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    for name, data in sorted(files.items()):
        path = folder / name
        path.write_bytes(data)
        path.chmod(0o644)
    return sorted(files)


__all__ = ["configure_gateway_tls"]
