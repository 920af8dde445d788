"""The uploads bucket's stand-in on this machine (``gatebench serve --upload signed-url``).

The page PUTs a spec to ``/bucket/specs/NAME?expires=...&signature=...`` (the URL
``gatebench.web.SignedUploads`` answered, signed by :class:`HmacSigner`); :meth:`LocalBucket.put`
checks the signature, refuses to overwrite (like ``x-goog-if-generation-match: 0``), stores the
object under ``<results>/uploads/bucket/`` and queues its run with the ``spec_uri`` the ticket
announced, as the bucket's finalize event would on GCP. ``gatebench.web`` answers its HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlencode

from gatebench.core.errors import GatebenchError
from gatebench.core.spec import Limits
from gatebench.kinds.request import (
    METADATA_HEADER,
    check_upload,
    run_request_from_metadata,
    upload_name_from_object,
)
from gatebench.local.queue import RunQueue

_OBJECT = re.compile(r"^specs/[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


class PutRefused(GatebenchError):
    """A PUT the bucket refuses, with the status Cloud Storage answers for it (400 a bad name,
    403 a signature that does not match, 412 an object that exists)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class HmacSigner:
    """The stand-in bucket's signer: an HMAC over method, object, content type, metadata and
    expiry, checked by :meth:`verify`. It plays the part Cloud Storage's V4 signature plays on
    GCP (``gatebench.cloud.GcsSigner``), so the page's signed-URL path runs here too."""

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


@dataclass
class LocalBucket:
    """A folder that takes one signed PUT per object and queues the object's run."""

    root: Path
    queue: RunQueue
    max_bytes: int
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def bucket_uri(self) -> str:
        return self.root.resolve().as_uri()

    def signer(self, base_url: str) -> HmacSigner:
        """URLs that point at the server (``base_url``: ``http://HOST:PORT``)."""
        return HmacSigner(self.secret, f"{base_url.rstrip('/')}/bucket", self.bucket_uri)

    def put(
        self,
        name: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes,
        base_url: str,
    ) -> tuple[str, str]:
        """``PUT /bucket/NAME`` (``headers`` with lower-case names): the object's generation
        and its run's id. :class:`PutRefused`, ``UploadRejected`` (the content check) or
        ``QueueFull`` (nothing stored) when it is refused."""
        if not _OBJECT.match(name) or ".." in name:
            raise PutRefused(400, f"{name[:100]!r} is not an object name under specs/")
        refused = self.signer(base_url).verify(name, query, headers)
        if refused is not None:
            raise PutRefused(403, f"signed URL refused: {refused}")
        asked = run_request_from_metadata(headers.get(METADATA_HEADER))
        limits = Limits(max_bytes=self.max_bytes)
        upload = check_upload(body, upload_name_from_object(name), asked, limits=limits)
        path = self.root / name
        with self._lock:
            if path.exists():
                raise PutRefused(412, f"object {name!r} exists; a signed URL is for one upload")
            self.queue.check_room()  # a refused upload is not stored
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
            generation = str(time.time_ns() // 1000)
            uri = f"{self.bucket_uri}/{name}#{generation}"
            try:
                job = self.queue.submit(upload, spec_uri=uri, spec_path=path)
            except Exception:  # full: another upload took the last place meanwhile
                path.unlink(missing_ok=True)
                raise
        return generation, job.run_id


__all__ = ["HmacSigner", "LocalBucket", "PutRefused"]
