"""TLS on the cloud path: each run's own certificate authority, made by the provision build, and
the certificates of the run's VMs (docs/cloud.md, "TLS and replicas").

Locally a run makes a throwaway CA and one server certificate (gatebench.core.tls). On Google
Cloud the same holds, with the machines apart:

- the run's CA is made by the provision build (``gatebench cloud vm-vars``, the deployment's
  build account), valid as long as the run's VMs may live (their ``max_run_duration``) and no
  longer; its key is used there to sign every VM's certificate and is never written anywhere:
  no VM, bucket, state or log ever holds it, and no later run trusts it (:func:`run_tls`);
- each gateway VM, and the backend VM for the baseline, gets its own server key and a
  certificate for its own host name (and the loopback names, for its own checks) in its own
  instance metadata (:data:`TLS_METADATA_KEY`, a Terraform variable marked sensitive: never in
  a plan's output or a build's log; the run's Terraform state holds it, which only the build
  account reads), read from the metadata server by gatebench's containers on that VM alone (a
  gateway's container cannot reach it: infra/vms/templates/gateway.sh.tftpl);
- the tester trusts that CA alone: the build writes its certificate, which is public, to
  :data:`CA_OBJECT` (only the build and the functions may write there) and the tester turns it
  into its trust store.

The render step names no key and no CA (:func:`tls_section`): the plan's key type, HTTP/2 and
resumption, and each VM's host name.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.plan import Plan
from gatebench.core.tls import (
    RunCertificates,
    issue_server_certificate,
    make_ca,
)

TLS_DIR = "tls"
"""The folder of a gateway's configuration folder its VM fills with the run's TLS files
(gatebench.core.tls.FILES) before the gateway starts (``gatebench cloud gateway-tls``)."""
TRUST_STORE_ON_TESTER = "tester:tls/truststore.p12"
"""The workload's ``tls.trust_store`` as rendered: the tester writes the trust store from the
run's CA into its own folder and puts the path there before the load starts."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
"""Names every VM certificate carries besides the VM's host name: the VM checks its own
listener over TLS before it says it is ready."""
TLS_METADATA_KEY = "gatebench-tls"
"""The instance metadata attribute holding a TLS VM's key and certificates (JSON)."""
CA_OBJECT = "runs/{run_id}/tls/ca.pem"
"""The run's CA certificate, written by the provision build: what the testers trust."""
MARGIN_S = 3600
"""The CA and the certificates stay valid this much longer than the run's VMs may live."""


def tls_section(plan: Plan) -> dict[str, Any]:
    """What the run's TLS is made of: the plan's key type, HTTP/2 and resumption (no key, no
    CA: the provision build makes them)."""
    if plan.tls is None:
        raise ValueError("the plan has no tls")
    return {"key": plan.tls.key, "http2": plan.tls.http2, "resumption": plan.tls.resumption}


def run_tls(
    spec: Mapping[str, Any], max_run_s: int, *, now: datetime.datetime | None = None
) -> tuple[bytes, dict[str, str]]:
    """The run's CA certificate, and each TLS VM's metadata value (machine ``gw-NAME`` or
    ``backend`` → :data:`TLS_METADATA_KEY`'s JSON: its key type, server key and certificate and
    the CA's certificate), for the fleet's ``tls`` section ``spec`` (its ``hosts``: gateway →
    host name; ``backend_host`` when the backend serves the baseline's TLS). The CA lives
    ``max_run_s`` + :data:`MARGIN_S` seconds; its key is dropped when this returns."""
    key_type = spec["key"]
    now = now or datetime.datetime.now(datetime.UTC)
    validity = datetime.timedelta(seconds=max_run_s + MARGIN_S)
    ca_key, ca_cert = make_ca(key_type, validity=validity, now=now, label="run CA")
    machines = {f"gw-{name}": str(host) for name, host in sorted((spec.get("hosts") or {}).items())}
    if spec.get("backend_host"):
        machines["backend"] = str(spec["backend_host"])
    out = {}
    for machine, host in machines.items():
        certs = issue_server_certificate(ca_key, ca_cert, key_type, _names(host), now=now)
        out[machine] = json.dumps(
            {
                "key_type": certs.key_type,
                "ca_cert": certs.ca_cert.decode("ascii"),
                "server_cert": certs.server_cert.decode("ascii"),
                "server_key": certs.server_key.decode("ascii"),
                "hosts": list(certs.hosts),
            },
            sort_keys=True,
        )
    return ca_cert, out


def certificates_from_metadata(value: str | None) -> RunCertificates:
    """This VM's certificates from its metadata value (:func:`run_tls`); RunError saying what
    is missing."""
    if not value:
        raise RunError(
            f"this VM's metadata holds no {TLS_METADATA_KEY} (the provision build makes the "
            "run's certificates)"
        )
    try:
        data = json.loads(value)
        return RunCertificates(
            key_type=data["key_type"],
            ca_cert=str(data["ca_cert"]).encode("ascii"),
            server_cert=str(data["server_cert"]).encode("ascii"),
            server_key=str(data["server_key"]).encode("ascii"),
            hosts=tuple(str(h) for h in data["hosts"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"this VM's {TLS_METADATA_KEY} metadata is unreadable: {exc}") from None


def _names(host: str) -> Sequence[str]:
    return (host, *(n for n in LOOPBACK_NAMES if n != host))


__all__ = [
    "CA_OBJECT",
    "LOOPBACK_NAMES",
    "TLS_DIR",
    "TLS_METADATA_KEY",
    "TRUST_STORE_ON_TESTER",
    "certificates_from_metadata",
    "run_tls",
    "tls_section",
]
