"""Uploaded specs: checked before anything runs, then queued (local) or signed for the bucket (GCP).

:func:`check_upload` is the content check both paths share: the bytes must read as an API
description with a valid ``x-gatebench`` plan (``read_spec`` + ``load_plan``: every problem
located, credentials refused by the plan). A valid upload goes to an :class:`UploadAcceptor`:
the local server queues its run; on Google Cloud :class:`SignedUploads` answers a signed URL
the browser PUTs the bytes to, and the bucket's "object finalized" event starts the pipeline.

The form's choices (a quick run, some of the plan's gateways) travel as a
:class:`~gatebench.kinds.request.RunRequest`: query parameters locally, the object's
``x-goog-meta-gatebench`` metadata on GCP (signed into the URL, so the browser cannot change
it). Answers are ``(payload, status, headers)``, what a Flask view returns.
"""

from __future__ import annotations

import hashlib
import hmac
import posixpath
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from gatebench.core.errors import PlanError, Problem
from gatebench.core.ir import Api
from gatebench.core.plan import Plan, load_plan, workload_summary
from gatebench.core.spec import DEFAULT_LIMITS, Limits, SpecResult, read_spec
from gatebench.kinds.request import METADATA_HEADER, RunRequest, UploadRejected

Answer = tuple[dict[str, Any], int, list[tuple[str, str]]]
"""What a handler answers: the JSON payload, the status, extra headers."""
UPLOAD_PREFIX = "specs/"
"""Objects under this prefix start a run when they land in the uploads bucket."""
TICKET_SECONDS = 900
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_OBJECT_NAME = re.compile(r"^.*?\d{8}-\d{6}-[0-9a-f]{8}-(?P<name>[^/]+)$")
_CONTENT_TYPES = {".json": "application/json", ".yaml": "application/yaml"} | {
    ".yml": "application/yaml",
    ".raml": "application/raml+yaml",
    ".zip": "application/zip",
}


def problems(
    status: int, found: Sequence[Problem], headers: Iterable[tuple[str, str]] = (), **extra: Any
) -> Answer:
    """``{"ok": false, "errors": [...], "warnings": [...]}``, each problem located."""
    errors = [p.to_dict() for p in found if p.severity == "error"]
    warnings = [p.to_dict() for p in found if p.severity != "error"]
    return {"ok": False, "errors": errors, "warnings": warnings, **extra}, status, list(headers)


def refusal(status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> Answer:
    return problems(status, [Problem("", message)], headers)


def too_large(size: int, max_bytes: int) -> str:
    return f"the upload is {size:,} bytes; the limit is {max_bytes:,} (--max-bytes)"


@dataclass(frozen=True)
class CheckedUpload:
    """An upload that reads as a description with a valid plan, ready to run."""

    name: str
    """A safe file name (letters, digits, ``._-``), derived from the uploaded one."""
    data: bytes
    sha256: str
    api: Api
    plan: Plan
    """The plan as written in the spec."""
    request: RunRequest
    spec: SpecResult

    @property
    def run_plan(self) -> Plan:
        return self.request.apply(self.plan)

    def summary(self, *, local_gateways: Sequence[str] | None = None) -> dict[str, Any]:
        """What the form shows before anything runs: the plan as it will run."""
        plan = self.run_plan
        out: dict[str, Any] = {
            "ok": True,
            "name": self.name,
            "sha256": self.sha256,
            "title": self.api.title,
            "gateways": list(self.plan.gateways),
            "selected": list(plan.gateways),
            "baseline": plan.baseline,
            "repetitions": plan.repetitions,
            "quick": self.request.quick,
            "kind": self.request.kind,
            "workloads": workload_summary(plan, self.api),
            "backend": plan.backend.kind,
            "warnings": [p.to_dict() for p in self.spec.warnings],
        }
        if local_gateways is not None:
            out["cloud_only"] = [g for g in plan.gateways if g not in local_gateways]
        return out


def safe_name(name: str | None) -> str:
    """The uploaded file's base name, reduced to ``[A-Za-z0-9._-]`` (never a path, never hidden)."""
    base = posixpath.basename((name or "").replace("\\", "/"))
    return _SAFE_NAME.sub("-", base).strip(".-")[:80] or "spec.yaml"


def content_type_for(name: str) -> str:
    return _CONTENT_TYPES.get(posixpath.splitext(name)[1].lower(), "application/octet-stream")


def check_upload(
    data: bytes,
    name: str | None,
    request: RunRequest | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> CheckedUpload:
    """Read ``data`` as an API description with its plan; :class:`UploadRejected` with every
    located problem (and the warnings) when it cannot run. No ``request``: the plan as written."""
    request = request or RunRequest()
    filename = safe_name(name)
    if not data.strip():
        raise UploadRejected([Problem("", "the upload is empty", source=filename)])
    result = read_spec(data, name=filename, limits=limits, entry=request.entry)
    if result.errors or result.api is None:
        raise UploadRejected(result.problems)
    try:
        plan = load_plan(result)
    except PlanError as exc:
        raise UploadRejected([*exc.problems, *result.warnings]) from None
    refused = request.problems(plan)
    if refused:
        raise UploadRejected(refused)
    digest = hashlib.sha256(data).hexdigest()
    return CheckedUpload(filename, data, digest, result.api, plan, request, result)


class UploadAcceptor(Protocol):
    """Turns a checked upload into the answer of ``POST uploads``."""

    method: str
    """``direct`` (the run is queued) or ``signed-url`` (the browser PUTs to a signed URL)."""

    def accept(self, upload: CheckedUpload) -> Answer: ...


class UrlSigner(Protocol):
    """Signs a PUT of one object. On GCP: Cloud Storage V4 signing (``_gcs``)."""

    @property
    def bucket_uri(self) -> str:
        """``gs://BUCKET``: runs started by an object record ``BUCKET_URI/NAME#GENERATION``."""

    def sign_put(
        self, object_name: str, content_type: str, headers: Mapping[str, str], expires_at: float
    ) -> str:
        """A URL that accepts one ``PUT`` of ``object_name`` with exactly these headers
        (``Content-Type`` and ``headers``) until ``expires_at`` (epoch seconds)."""


def upload_name_from_object(object_name: str) -> str:
    """The uploaded file's name inside an object name :func:`object_name_for` made."""
    found = _OBJECT_NAME.match(object_name)
    return found.group("name") if found else safe_name(object_name)


def object_name_for(upload: CheckedUpload, now: float, prefix: str = UPLOAD_PREFIX) -> str:
    """``specs/20260101-120000-1a2b3c4d-petstore.yaml``: unique per content and second."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"{prefix}{stamp}-{upload.sha256[:8]}-{upload.name}"


@dataclass
class SignedUploads:
    """GCP's acceptor: a signed PUT for ``specs/...`` in the uploads bucket. The answer says
    exactly what to send (URL, method, headers: the content type and the run request are
    signed) and the ``spec_uri`` the run will carry (``GET runs?spec_uri=`` finds it)."""

    signer: UrlSigner
    prefix: str = UPLOAD_PREFIX
    expires_s: int = TICKET_SECONDS
    clock: Any = time.time
    method: str = "signed-url"

    def accept(self, upload: CheckedUpload) -> Answer:
        now = float(self.clock())
        name = object_name_for(upload, now, self.prefix)
        content_type = content_type_for(upload.name)
        headers = {METADATA_HEADER: upload.request.to_metadata()}
        url = self.signer.sign_put(name, content_type, headers, now + self.expires_s)
        put = {"url": url, "method": "PUT", "headers": {"Content-Type": content_type, **headers}}
        spec_uri = f"{self.signer.bucket_uri.rstrip('/')}/{name}"
        ticket = {"ok": True, "method": "signed-url", "put": put, "object": name}
        ticket |= {
            "spec_uri": spec_uri,
            "expires_at": now + self.expires_s,
            "sha256": upload.sha256,
        }
        return ticket, 200, []


@dataclass(frozen=True)
class HmacSigner:
    """The signer of the local server's stand-in bucket (``PUT /bucket/NAME``): an HMAC over
    method, object, content type, metadata and expiry, checked by :meth:`verify`. It plays the
    part Cloud Storage's V4 signature plays on GCP, so the page's signed-URL path runs here too."""

    secret: bytes
    base_url: str
    """Where the PUT goes: ``http://127.0.0.1:PORT/bucket``."""
    bucket_uri: str
    """What runs record as their spec's location (``file:///.../bucket``)."""

    def _mac(self, object_name: str, content_type: str, metadata: str, expires: int) -> str:
        message = "\n".join(["PUT", object_name, content_type, metadata, str(expires)])
        return hmac.new(self.secret, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def sign_put(
        self, object_name: str, content_type: str, headers: Mapping[str, str], expires_at: float
    ) -> str:
        expires = int(expires_at)
        mac = self._mac(object_name, content_type, headers.get(METADATA_HEADER, ""), expires)
        query = urlencode({"expires": expires, "signature": mac})
        return f"{self.base_url.rstrip('/')}/{quote(object_name)}?{query}"

    def verify(
        self,
        object_name: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        *,
        now: float | None = None,
    ) -> str | None:
        """None when the PUT matches its signature; else why not (answered with 403).
        ``headers`` are looked up by lower-case name."""
        try:
            expires = int(query.get("expires", ""))
        except ValueError:
            return "the URL has no valid 'expires'"
        metadata = headers.get(METADATA_HEADER, "")
        expected = self._mac(object_name, headers.get("content-type", ""), metadata, expires)
        if not hmac.compare_digest(expected, query.get("signature", "")):
            return "the signature does not match this object, content type and metadata"
        if (now if now is not None else time.time()) > expires:
            return "the signed URL has expired"
        return None


__all__ = [
    "TICKET_SECONDS",
    "UPLOAD_PREFIX",
    "Answer",
    "CheckedUpload",
    "HmacSigner",
    "SignedUploads",
    "UploadAcceptor",
    "UrlSigner",
    "check_upload",
    "content_type_for",
    "object_name_for",
    "problems",
    "refusal",
    "safe_name",
    "too_large",
    "upload_name_from_object",
]
