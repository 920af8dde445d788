"""Uploaded specs: checked before anything runs, then queued (local) or signed for the bucket (GCP).

:func:`check_upload` is the content check both edges share: the bytes must read as an API
description with a valid ``x-gatebench`` plan (``read_spec`` + ``load_plan``: every problem
located, credentials refused by the plan). What happens to a valid upload is an
:class:`UploadAcceptor`: the local server queues a run; on Google Cloud
:class:`SignedUploads` answers a signed URL the browser PUTs the bytes to, and the bucket's
"object finalized" event starts the pipeline.

The run options a person picks in the form (a quick smoke run, a subset of the plan's
gateways) travel as a :class:`RunRequest`: query parameters to the local server, and the
object's ``x-goog-meta-gatebench`` metadata on GCP (signed into the URL, so the browser
cannot change it), which the cloud parse step reads back with
:func:`run_request_from_metadata`.
"""

from __future__ import annotations

import hashlib
import hmac
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, urlencode

from gatebench.core.errors import PlanError, Problem
from gatebench.core.ir import Api
from gatebench.core.plan import Plan, load_plan, workload_summary
from gatebench.core.spec import DEFAULT_LIMITS, Limits, SpecResult, read_spec
from gatebench.kinds.request import METADATA_HEADER, RunRequest, UploadRejected
from gatebench.web._reply import Reply

UPLOAD_PREFIX = "specs/"
"""Objects under this prefix start a run when they land in the uploads bucket."""
TICKET_SECONDS = 900
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_CONTENT_TYPES = {
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".raml": "application/raml+yaml",
    ".zip": "application/zip",
}


# -- the content check ----------------------------------------------------------------------


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
    cleaned = _SAFE_NAME.sub("-", base).strip(".-")[:80]
    return cleaned or "spec.yaml"


def content_type_for(name: str) -> str:
    return _CONTENT_TYPES.get(posixpath.splitext(name)[1].lower(), "application/octet-stream")


def check_upload(
    data: bytes,
    name: str | None,
    request: RunRequest | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> CheckedUpload:
    """Read ``data`` as an API description with its plan; raise :class:`UploadRejected` with
    every located problem (and the warnings) when it cannot run. No ``request``: the plan
    as written."""
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
    return CheckedUpload(
        name=filename,
        data=data,
        sha256=hashlib.sha256(data).hexdigest(),
        api=result.api,
        plan=plan,
        request=request,
        spec=result,
    )


# -- what happens to a valid upload ---------------------------------------------------------


class UploadAcceptor(Protocol):
    """Turns a checked upload into the answer of ``POST {upload}/uploads``."""

    method: str
    """``direct`` (the run is queued) or ``signed-url`` (the browser PUTs to a signed URL)."""

    def accept(self, upload: CheckedUpload) -> Reply: ...


class UrlSigner(Protocol):
    """Signs a PUT of one object. On GCP: Cloud Storage V4 signing (docs/frontend.md)."""

    @property
    def bucket_uri(self) -> str:
        """``gs://BUCKET``: runs started by an object record ``BUCKET_URI/NAME#GENERATION``."""

    def sign_put(
        self, object_name: str, content_type: str, headers: Mapping[str, str], expires_at: float
    ) -> str:
        """A URL that accepts one ``PUT`` of ``object_name`` with exactly these headers
        (``Content-Type`` and ``headers``) until ``expires_at`` (epoch seconds)."""


_OBJECT_NAME = re.compile(r"^.*?\d{8}-\d{6}-[0-9a-f]{8}-(?P<name>[^/]+)$")


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
    """GCP's acceptor: a signed PUT for ``specs/...`` in the uploads bucket.

    The answer tells the browser exactly what to send (URL, method, headers: the content
    type and the run request are part of the signature) and which ``spec_uri`` the run
    will carry, so the page can find it with ``GET {api}/runs?spec_uri=...``.
    """

    signer: UrlSigner
    prefix: str = UPLOAD_PREFIX
    expires_s: int = TICKET_SECONDS
    clock: Any = time.time
    method: str = "signed-url"

    def accept(self, upload: CheckedUpload) -> Reply:
        now = float(self.clock())
        name = object_name_for(upload, now, self.prefix)
        content_type = content_type_for(upload.name)
        headers = {METADATA_HEADER: upload.request.to_metadata()}
        url = self.signer.sign_put(name, content_type, headers, now + self.expires_s)
        return Reply.json(
            200,
            {
                "ok": True,
                "method": "signed-url",
                "put": {
                    "url": url,
                    "method": "PUT",
                    "headers": {"Content-Type": content_type, **headers},
                },
                "object": name,
                "spec_uri": f"{self.signer.bucket_uri.rstrip('/')}/{name}",
                "expires_at": now + self.expires_s,
                "sha256": upload.sha256,
            },
        )


@dataclass(frozen=True)
class HmacSigner:
    """A signer for the local server's stand-in bucket (``PUT /bucket/NAME``): an HMAC over
    method, object, content type, metadata and expiry, checked by :meth:`verify`. It plays
    the part Cloud Storage's V4 signature plays on GCP, so the browser's signed-URL code
    path runs locally too."""

    secret: bytes
    base_url: str
    """Where the PUT goes: ``http://127.0.0.1:PORT/bucket``."""
    bucket_uri: str
    """What runs record as their spec's location (``file:///.../bucket``)."""

    def _mac(self, object_name: str, content_type: str, metadata: str, expires: int) -> str:
        message = "\n".join(["PUT", object_name, content_type, metadata, str(expires)])
        return hmac.new(self.secret, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def sign_put(
        self,
        object_name: str,
        content_type: str,
        headers: Mapping[str, str],
        expires_at: float,
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
        """None when the PUT matches its signature; else why not (answered with 403)."""
        try:
            expires = int(query.get("expires", ""))
        except ValueError:
            return "the URL has no valid 'expires'"
        content_type = headers.get("content-type", "")
        metadata = headers.get(METADATA_HEADER, "")
        expected = self._mac(object_name, content_type, metadata, expires)
        if not hmac.compare_digest(expected, query.get("signature", "")):
            return "the signature does not match this object, content type and metadata"
        if (now if now is not None else time.time()) > expires:
            return "the signed URL has expired"
        return None


__all__ = [
    "TICKET_SECONDS",
    "UPLOAD_PREFIX",
    "CheckedUpload",
    "HmacSigner",
    "SignedUploads",
    "UploadAcceptor",
    "UrlSigner",
    "check_upload",
    "content_type_for",
    "object_name_for",
    "safe_name",
    "upload_name_from_object",
]
