"""The instance metadata a run's VM was made with, asked of the metadata server (Compute
Engine's "Query VM metadata": ``Metadata-Flavor: Google``; ``GCE_METADATA_HOST`` names another
server, as google-auth reads it). What the provision build gives each VM alone: its write
policies (gatebench.cloud._writes) and its TLS key and certificates (gatebench.cloud._tls). A
gateway's container cannot reach the server (infra/vms/templates/gateway.sh.tftpl)."""

from __future__ import annotations

import os
import urllib.error
import urllib.request

ATTRIBUTES = "/computeMetadata/v1/instance/attributes/"


def instance_attribute(name: str, timeout: float = 5.0) -> str | None:
    """The VM's custom metadata ``name``; None when it has none (or this is no VM)."""
    host = os.environ.get("GCE_METADATA_HOST") or "metadata.google.internal"
    request = urllib.request.Request(
        f"http://{host}{ATTRIBUTES}{name}", headers={"Metadata-Flavor": "Google"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return bytes(answer.read()).decode("utf-8")
    except (OSError, urllib.error.URLError):
        return None


__all__ = ["instance_attribute"]
