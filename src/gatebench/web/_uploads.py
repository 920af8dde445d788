"""Uploaded specs: checked before anything runs, then queued (local) or signed for the bucket (GCP).

:func:`~gatebench.kinds.request.check_upload` is the content check both paths share: the bytes
must read as an API description with a valid ``x-gatebench`` plan (``read_spec`` +
``load_plan``: every problem located, credentials refused by the plan). A valid upload goes to
an :class:`UploadAcceptor`:
the local server queues its run; on Google Cloud :class:`SignedUploads` answers a signed URL
the browser PUTs the bytes to, and the bucket's "object finalized" event starts the pipeline.

The form's choices (a quick run, some of the plan's gateways) travel as a
:class:`~gatebench.kinds.request.RunRequest`: query parameters locally, the object's
``x-goog-meta-gatebench`` metadata on GCP (signed into the URL, so the browser cannot change
it). Answers are ``(payload, status, headers)``, what a Flask view returns.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gatebench.core.errors import Problem
from gatebench.kinds.request import (
    METADATA_HEADER,
    UPLOAD_PREFIX,
    CheckedUpload,
    object_name_for,
)

Answer = tuple[dict[str, Any], int, list[tuple[str, str]]]
"""What a handler answers: the JSON payload, the status, extra headers."""
TICKET_SECONDS = 900
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


def content_type_for(name: str) -> str:
    return _CONTENT_TYPES.get(posixpath.splitext(name)[1].lower(), "application/octet-stream")


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


__all__ = [
    "TICKET_SECONDS",
    "UPLOAD_PREFIX",
    "Answer",
    "SignedUploads",
    "UploadAcceptor",
    "UrlSigner",
    "content_type_for",
    "problems",
    "refusal",
    "too_large",
]
