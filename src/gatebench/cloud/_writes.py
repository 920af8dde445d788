"""A run's VMs write only their own run's objects.

The VMs' service accounts serve every run of the deployment, so no IAM grant to them can tell
one run's objects from another's: a grant on ``runs/*/cgroup/*.jsonl`` lets a VM of one run
write any run's samples. So the accounts may only read; each VM writes with credentials of its
own run, made by the provision build (the deployment's build account, which may write under
``runs/``): a Cloud Storage V4 POST policy per object it writes, signed by that account, whose
conditions name the bucket and the object (``eq``), or its run's folder of objects made as the
run goes (``starts-with``: a capacity search's probes, a scale run's requests and results), and
expire with the run's VMs (Cloud Storage's "Upload an object with HTML forms" and "Policy
document" pages). Each VM gets its policies in its own instance metadata
(:data:`METADATA_KEY`, a Terraform variable marked sensitive: never in a plan's output or a
build's log, and left out of the variables the provision build saves in the bucket), read
from the metadata server by gatebench's containers only (a gateway's container cannot reach it:
infra/vms/templates/gateway.sh.tftpl).

:func:`vm_policies` makes them; :class:`PolicyWriter` writes with them: a ``multipart/form-data``
POST of the policy's fields and the object (a raw log streamed from its file, never whole in
memory).
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.core.errors import RunError

METADATA_KEY = "gatebench-writes"
"""The instance metadata attribute holding a VM's write policies (JSON)."""
STORAGE_HOST = "https://storage.googleapis.com"
MAX_OBJECT_BYTES = 5 * 2**40
"""Cloud Storage's largest object: a policy's content-length-range upper end."""
ALGORITHM = "GOOG4-RSA-SHA256"

Signer = Callable[[bytes], bytes]
"""Signs bytes with the build account's key (RSA SHA-256): IAM ``signBlob``, or a key file's."""


@dataclass(frozen=True)
class WriteRule:
    """What one policy lets a VM write: the object ``value`` (``eq``) or any object whose name
    starts with it (``starts-with``)."""

    match: str
    value: str

    def allows(self, name: str) -> bool:
        return name == self.value if self.match == "eq" else name.startswith(self.value)


def vm_write_rules(values: Mapping[str, Any]) -> dict[str, list[WriteRule]]:
    """Machine (``backend``, ``gw-NAME``, ``tester``, ``tester-T``) → what it writes, for the
    VMs of ``run.tfvars.json``'s ``values``: exactly the objects each role's code writes
    (gatebench.vm), of this run."""
    from gatebench.cloud._ingest import CGROUP_OBJECT, raw_object
    from gatebench.cloud._live import answer_object
    from gatebench.cloud._render import backend_error_object, config_error_object
    from gatebench.cloud._tester import marker, marker_of_tester

    run = str(values["run_id"])
    out: dict[str, list[WriteRule]] = {}
    if values.get("backend"):
        out["backend"] = [WriteRule("eq", backend_error_object(run))]
    for gateway in sorted(values.get("gateways") or {}):
        out[f"gw-{gateway}"] = [
            WriteRule("eq", CGROUP_OBJECT.format(run_id=run, target=gateway)),
            WriteRule("eq", config_error_object(run, gateway)),
            WriteRule("eq", answer_object(run, gateway)),
        ]
    tester = values.get("tester")
    count = int(tester.get("count") or 1) if tester else 0
    for t in range(count):
        raw = "gatling" if count == 1 else f"gatling-t{t}"
        out["tester" if t == 0 else f"tester-{t}"] = [
            WriteRule("eq", marker(run, marker_of_tester("ready", t))),
            WriteRule("eq", marker(run, marker_of_tester("load-done", t))),
            WriteRule("eq", raw_object(run, raw)),
            # a capacity search's shares, records and campaign; a scale run's requests and
            # results: objects of this run made as it goes
            WriteRule("starts-with", f"runs/{run}/capacity/"),
            WriteRule("starts-with", f"runs/{run}/live/"),
        ]
    return out


def signed_policy(
    bucket: str,
    rule: WriteRule,
    *,
    email: str,
    sign: Signer,
    now: datetime.datetime,
    expires_s: int,
) -> dict[str, Any]:
    """A V4 POST policy for ``rule`` in ``bucket``: the form fields to send and where."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    credential = f"{email}/{now.strftime('%Y%m%d')}/auto/storage/goog4_request"
    expiration = (now + datetime.timedelta(seconds=expires_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions: list[Any] = [
        {"bucket": bucket},
        [rule.match, "$key", rule.value],
        ["starts-with", "$Content-Type", ""],
        ["content-length-range", 0, MAX_OBJECT_BYTES],
        {"x-goog-date": stamp},
        {"x-goog-credential": credential},
        {"x-goog-algorithm": ALGORITHM},
    ]
    document = json.dumps({"conditions": conditions, "expiration": expiration}, sort_keys=True)
    policy = base64.b64encode(document.encode()).decode()
    return {
        "url": f"{STORAGE_HOST}/{bucket}",
        "match": rule.match,
        "value": rule.value,
        "fields": {
            "policy": policy,
            "x-goog-algorithm": ALGORITHM,
            "x-goog-credential": credential,
            "x-goog-date": stamp,
            "x-goog-signature": sign(policy.encode()).hex(),
        },
    }


MAX_POLICY_S = 7 * 24 * 3600
"""The longest a V4 signature lasts (Cloud Storage: seven days)."""


def vm_policies(
    values: Mapping[str, Any],
    *,
    email: str,
    sign: Signer,
    now: datetime.datetime | None = None,
) -> dict[str, str]:
    """Machine → its metadata value (:data:`METADATA_KEY`): its write policies, expiring when
    the run's VMs delete themselves (``max_run_duration_s``) and a margin."""
    now = now or datetime.datetime.now(datetime.UTC)
    expires = min(MAX_POLICY_S, int(values["max_run_duration_s"]) + 3600)
    bucket = str(values["runs_bucket"])
    return {
        machine: json.dumps(
            [
                signed_policy(bucket, r, email=email, sign=sign, now=now, expires_s=expires)
                for r in rules
            ],
            sort_keys=True,
        )
        for machine, rules in vm_write_rules(values).items()
    }


def ambient_signer() -> tuple[str, Signer]:
    """The build account's email and its signer: the credentials' own key when they have one
    (a key file), otherwise IAM ``signBlob`` as that account (it holds
    ``roles/iam.serviceAccountTokenCreator`` on itself: infra/modules/runner)."""
    import google.auth
    from google.auth import credentials as auth_credentials
    from google.auth import iam
    from google.auth.transport.requests import Request

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    if isinstance(credentials, auth_credentials.Signing):
        signing = credentials
        return str(signing.signer_email), lambda data: bytes(signing.sign_bytes(data))  # type: ignore[no-untyped-call]
    request = Request()
    if not credentials.valid:
        credentials.refresh(request)  # type: ignore[no-untyped-call]
    email = str(getattr(credentials, "service_account_email", "") or "")
    if not email or email == "default":
        raise RunError(
            "the credentials of this step name no service account to sign the VMs' write "
            "policies with (run it as the deployment's build account)"
        )
    signer = iam.Signer(request, credentials, email)  # type: ignore[no-untyped-call]
    return email, lambda data: bytes(signer.sign(data))


# -- the VM's side


def metadata_policies(key: str = METADATA_KEY) -> list[dict[str, Any]] | None:
    """This VM's write policies from its metadata; None when it has none (a VM of a
    deployment without them, or not a VM)."""
    from gatebench.cloud._metadata import instance_attribute

    data = instance_attribute(key)
    if data is None:
        return None
    policies = json.loads(data)
    if not isinstance(policies, list):
        raise RunError(f"the VM's {key} metadata is not a list of policies")
    return policies


class PolicyWriter:
    """Writes objects with this VM's policies (module docstring); an object no policy names is
    an error that says which."""

    def __init__(self, policies: Sequence[Mapping[str, Any]], *, timeout: float = 300.0) -> None:
        self.policies = list(policies)
        self.timeout = timeout

    def policy_for(self, bucket: str, name: str) -> Mapping[str, Any]:
        for policy in self.policies:
            rule = WriteRule(str(policy["match"]), str(policy["value"]))
            if str(policy["url"]).rstrip("/").rsplit("/", 1)[-1] == bucket and rule.allows(name):
                return policy
        raise RunError(
            f"gs://{bucket}/{name}: this VM holds no write policy for it (a VM writes only its "
            "own run's objects: gatebench.cloud._writes)"
        )

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str) -> None:
        body = data.encode() if isinstance(data, str) else data
        self._post(bucket, name, content_type, len(body), iter([body]))

    def upload_file(self, bucket: str, name: str, path: Path, content_type: str) -> None:
        """The file streamed as the form's last part, a megabyte at a time."""

        def chunks() -> Iterator[bytes]:
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    yield chunk

        self._post(bucket, name, content_type, path.stat().st_size, chunks())

    def _post(
        self, bucket: str, name: str, content_type: str, size: int, body: Iterator[bytes]
    ) -> None:
        import http.client

        policy = self.policy_for(bucket, name)
        url = str(policy["url"])
        emulator = os.environ.get("STORAGE_EMULATOR_HOST")
        if emulator:  # the tests' Cloud Storage, at the bucket's path
            url = f"{emulator.rstrip('/')}/{bucket}"
        boundary = "gatebench-" + secrets.token_hex(16)
        fields = {**policy["fields"], "key": name, "Content-Type": content_type}
        head = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
            for k, v in fields.items()
        )
        head += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="object"\r\n'
            f"Content-Type: {content_type}\r\n\r\n"
        )
        tail = f"\r\n--{boundary}--\r\n".encode()
        start = head.encode()
        parts = urlsplit(url)
        connection_type = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(parts.netloc, timeout=self.timeout)
        try:
            connection.putrequest("POST", parts.path or "/")
            connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
            connection.putheader("Content-Length", str(len(start) + size + len(tail)))
            connection.endheaders()
            connection.send(start)
            for chunk in body:
                connection.send(chunk)
            connection.send(tail)
            answer = connection.getresponse()
            text = answer.read()
        except OSError as exc:
            raise RunError(f"gs://{bucket}/{name}: the upload failed: {exc}") from None
        finally:
            connection.close()
        if answer.status not in (200, 201, 204):
            raise RunError(
                f"gs://{bucket}/{name}: Cloud Storage answered {answer.status}: "
                f"{text.decode('utf-8', 'replace')[:300]}"
            )


__all__ = [
    "METADATA_KEY",
    "PolicyWriter",
    "WriteRule",
    "ambient_signer",
    "metadata_policies",
    "signed_policy",
    "vm_policies",
    "vm_write_rules",
]
