"""TLS on the cloud path: the deployment's certificate authority, and the certificates the
run's VMs make with it (docs/cloud.md, "TLS and replicas").

Locally a run makes a throwaway CA and one server certificate (gatebench.core.tls). On Google Cloud
no step of the pipeline may hold a private key where it lands in a bucket, Firestore, BigQuery
or a build's log, so the key material is split:

- the deployment's CA: its private key in a Secret Manager secret the operator creates and
  fills (the Terraform variable ``tls_ca`` names it; only the gateway and backend VMs'
  service accounts may read it: infra/secrets.tf), its certificate, which is public, in the
  Terraform variable ``tls_ca_certificate`` (the deployment's settings carry it);
- each run's server keys: every gateway VM, and the backend VM for the baseline, makes a new
  key of the plan's type at boot and a certificate for its own host name signed by that CA
  (:func:`vm_certificates`). The key never leaves the VM; a run's certificates are its own;
- the tester trusts that CA alone: the render step puts its certificate in the workload
  (``tls.ca``) and the tester turns it into its trust store.

The render step only names the secret (:func:`tls_section`); without ``tls_ca`` and
``tls_ca_certificate`` the parse and render steps refuse a TLS plan at ``/x-gatebench/tls``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gatebench.cloud._objects import RequestError
from gatebench.cloud._secrets import SecretManager, SecretReader
from gatebench.core.errors import Problem, RunError
from gatebench.core.plan import Plan
from gatebench.core.tls import RunCertificates, ca_certificate_problem, issue_server_certificate

TLS_DIR = "tls"
"""The folder of a gateway's configuration folder its VM fills with the run's TLS files
(gatebench.core.tls.FILES) before the gateway starts (``gatebench cloud gateway-tls``)."""
TRUST_STORE_ON_TESTER = "tester:tls/truststore.p12"
"""The workload's ``tls.trust_store`` as rendered: the tester writes the trust store from
``tls.ca`` into its own folder and puts the path there before the load starts."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
"""Names every VM certificate carries besides the VM's host name: the VM checks its own
listener over TLS before it says it is ready."""
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:RSA |EC )?PRIVATE KEY-----.+?-----END (?:RSA |EC )?PRIVATE KEY-----", re.S
)


def tls_problems(plan: Plan, settings: Mapping[str, Any], *, for_s: float = 0.0) -> list[Problem]:
    """What the deployment lacks for the plan's ``tls`` (nothing for a plan without it): the
    CA's secret and certificate, a certificate that is a CA valid for the run (``for_s``
    seconds from now)."""
    if plan.tls is None:
        return []
    where = "/x-gatebench/tls"
    secret = str(settings.get("tls_ca") or "")
    cert = str(settings.get("tls_ca_certificate") or "")
    if not secret or not cert:
        return [
            Problem(
                where,
                "this deployment has no certificate authority for tls: set the Terraform "
                "variables tls_ca (a Secret Manager secret holding the CA's PEM private key) "
                'and tls_ca_certificate (its certificate) (docs/cloud.md, "TLS and replicas")',
            )
        ]
    problem = ca_certificate_problem(cert.encode(), for_s=for_s)
    if problem is not None:
        return [Problem(where, f"the deployment's tls_ca_certificate is {problem}")]
    return []


def tls_section(plan: Plan, settings: Mapping[str, Any], *, for_s: float = 0.0) -> dict[str, Any]:
    """What the run's VMs make their certificates from: the CA's secret (a name, never the
    key), its certificate and the plan's key type and protocols. RequestError (located at
    ``/x-gatebench/tls``) when the deployment has no CA."""
    if plan.tls is None:
        raise ValueError("the plan has no tls")
    problems = tls_problems(plan, settings, for_s=for_s)
    if problems:
        raise RequestError(problems)
    project = str(settings.get("project") or "")
    return {
        "secret": f"projects/{project}/secrets/{settings['tls_ca']}",
        "ca": str(settings["tls_ca_certificate"]),
        "key": plan.tls.key,
        "http2": plan.tls.http2,
        "resumption": plan.tls.resumption,
    }


def vm_certificates(
    spec: Mapping[str, Any],
    host: str,
    secrets: SecretReader | None = None,
    *,
    now: datetime.datetime | None = None,
) -> RunCertificates:
    """A new server key of the run's type and a certificate for ``host`` (and the loopback
    names), signed with the CA key read from the secret ``spec`` names, as this VM's service
    account. RunError naming the secret (never its text) when it cannot be read or holds no
    key of the CA certificate."""
    secret = str(spec.get("secret") or "")
    ca = str(spec.get("ca") or "")
    if not secret or not ca:
        raise RunError("the run's tls section names no CA secret or certificate")
    text = (secrets or SecretManager()).access(secret)
    found = _PRIVATE_KEY.search(text)
    if found is None:
        raise RunError(f"{secret}: holds no PEM private key")
    try:
        return issue_server_certificate(
            found.group(0).encode(), ca.encode(), spec["key"], _names(host), now=now
        )
    except RunError as exc:
        raise RunError(f"{secret}: {exc}") from None


def _names(host: str) -> Sequence[str]:
    return (host, *(n for n in LOOPBACK_NAMES if n != host))


__all__ = [
    "LOOPBACK_NAMES",
    "TLS_DIR",
    "TRUST_STORE_ON_TESTER",
    "tls_problems",
    "tls_section",
    "vm_certificates",
]
