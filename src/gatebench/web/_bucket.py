"""The local stand-in for the uploads bucket: ``gatebench serve --upload signed-url``.

On Google Cloud the browser PUTs a spec to a signed Cloud Storage URL and the bucket's
"object finalized" event starts the pipeline. This class plays both parts on one machine,
so the browser's signed-URL code path runs (and is tested) without Google Cloud:
:class:`~gatebench.web.SignedUploads` signs with an :class:`~gatebench.web.HmacSigner`,
the page PUTs to ``/bucket/specs/NAME?expires=...&signature=...``, and :meth:`put`
checks the signature, refuses to overwrite (like ``x-goog-if-generation-match: 0``),
stores the object and queues its run with the ``spec_uri`` the ticket announced.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gatebench.core.spec import Limits
from gatebench.kinds.request import METADATA_HEADER, UploadRejected, run_request_from_metadata
from gatebench.web._queue import QueueFull, RunQueue, queue_full
from gatebench.web._reply import Reply
from gatebench.web._uploads import (
    UPLOAD_PREFIX,
    HmacSigner,
    SignedUploads,
    check_upload,
    upload_name_from_object,
)

_OBJECT = re.compile(r"^specs/[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


@dataclass
class LocalBucket:
    root: Path
    queue: RunQueue
    max_bytes: int
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def bucket_uri(self) -> str:
        return self.root.resolve().as_uri()

    def signer(self, base_url: str) -> HmacSigner:
        """A signer whose URLs point at this server (``base_url``: ``http://HOST:PORT``)."""
        return HmacSigner(self.secret, f"{base_url.rstrip('/')}/bucket", self.bucket_uri)

    def uploads(self, base_url: str) -> SignedUploads:
        return SignedUploads(self.signer(base_url), prefix=UPLOAD_PREFIX)

    def put(
        self,
        object_name: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes,
        *,
        base_url: str,
    ) -> Reply:
        """``PUT /bucket/NAME``; ``headers`` have lower-case names."""
        if not _OBJECT.match(object_name) or ".." in object_name:
            return Reply.error(400, f"{object_name[:100]!r} is not an object name under specs/")
        refused = self.signer(base_url).verify(object_name, query, headers)
        if refused is not None:
            return Reply.error(403, f"signed URL refused: {refused}")
        if len(body) > self.max_bytes:
            return Reply.error(413, f"the object is larger than {self.max_bytes:,} bytes")
        try:
            request = run_request_from_metadata(headers.get(METADATA_HEADER))
            upload = check_upload(
                body,
                upload_name_from_object(object_name),
                request,
                limits=Limits(max_bytes=self.max_bytes),
            )
        except UploadRejected as exc:
            return Reply.problems(400, exc.problems)
        path = self.root / object_name
        with self._lock:
            if path.exists():
                return Reply.error(
                    412, f"object {object_name!r} exists; a signed URL is for one upload"
                )
            try:
                self.queue.check_room()  # a refused upload is not stored
            except QueueFull as exc:
                return queue_full(exc)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
            generation = str(time.time_ns() // 1000)
            try:
                job = self.queue.submit(
                    upload,
                    spec_uri=f"{self.bucket_uri}/{object_name}#{generation}",
                    spec_path=path,
                )
            except QueueFull as exc:  # another upload took the last place meanwhile
                path.unlink()
                return queue_full(exc)
        return Reply(
            200, b"", headers=(("x-goog-generation", generation), ("x-gatebench-run", job.run_id))
        )


__all__ = ["LocalBucket"]
